#include "clients/lazaret/config/trust_review.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "clients/lazaret/config/print.h"
#include "clients/lazaret/config/terminal_text.h"
#include "lazaret/config/v1/config.pb.h"
#include "services/configd/layer_files.h"
#include "services/vocab/escape.h"

namespace lazaret::cli::config {
namespace {

namespace pb = ::lazaret::config::v1;
namespace cpb = ::lazaret::common::v1;
namespace cfg = ::lazaret::config;

// The user's yes to exactly `digest`: the --sha256 they passed, or a
// confirmation on the terminal. Says why not when not.
bool Confirmed(const std::string& expected_sha256, const std::string& digest,
               const std::string& shown_path) {
  if (!expected_sha256.empty()) {
    if (expected_sha256 != digest) {
      std::fprintf(stderr,
                   "lazaret trust: refusing: the file's content has sha256 %s, not the %s you "
                   "passed. It is not what you reviewed; review it again. Nothing was trusted.\n",
                   digest.c_str(), expected_sha256.c_str());
      return false;
    }
  } else if (isatty(STDIN_FILENO) == 1) {
    absl::StatusOr<bool> yes = ConfirmOnTerminal(digest);
    if (!yes.ok()) {
      std::fprintf(stderr, "lazaret trust: %s; nothing was trusted.\n",
                   std::string(yes.status().message()).c_str());
      return false;
    }
    if (!*yes) {
      std::printf("Not trusted.\n");
      return false;
    }
  } else {
    std::fprintf(stderr,
                 "lazaret trust: standard input is not a terminal, so nobody can confirm; "
                 "nothing was trusted. After reviewing what the file widens, run:\n"
                 "  lazaret trust --sha256 %s %s\n",
                 digest.c_str(), shown_path.c_str());
    return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<bool> ConfirmOnTerminal(const std::string& digest) {
  const int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return absl::FailedPreconditionError("cannot open /dev/tty to ask");
  const std::string prompt =
      absl::StrCat("Trust exactly this content (sha256 ", digest.substr(0, 16), "...)? [y/N] ");
  (void)!write(fd, prompt.data(), prompt.size());
  std::string answer;
  char c = 0;
  while (answer.size() < 16) {
    const ssize_t r = read(fd, &c, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0 || c == '\n' || c == '\r') break;
    answer.push_back(c);
  }
  close(fd);
  answer = absl::AsciiStrToLower(absl::StripAsciiWhitespace(answer));
  return answer == "y" || answer == "yes";
}

int RevokeTrust(cfg::TrustStore& store, const std::string& canonical_file) {
  const std::string shown_path = vocab::EscapeForTerminal(canonical_file);
  absl::Status st = store.Revoke(canonical_file);
  if (absl::IsNotFound(st)) {
    std::printf("%s was not trusted; nothing to revoke.\n", shown_path.c_str());
    return 0;
  }
  if (!st.ok()) {
    std::fprintf(stderr, "lazaret trust --revoke: %s\n",
                 vocab::EscapeForTerminal(st.message()).c_str());
    return 1;
  }
  std::printf("Revoked trust in %s: it may again only narrow your configuration.\n",
              shown_path.c_str());
  return 0;
}

int ReviewAndTrust(ConfigdClient& configd, cfg::TrustStore& store,
                   const std::string& canonical_file, const std::string& expected_sha256) {
  const std::string& canon = canonical_file;
  const std::string shown_path = vocab::EscapeForTerminal(canon);
  // The file is read once (one fd, fstat, bounded read). These bytes are
  // what is checked, shown and - only they - recorded.
  absl::StatusOr<std::string> text = cfg::ReadConfigFile(canon, /*follow_symlinks=*/false);
  if (!text.ok()) {
    std::fprintf(stderr, "lazaret trust: %s %s\n", shown_path.c_str(),
                 vocab::EscapeForTerminal(text.status().message()).c_str());
    return 1;
  }
  const std::string digest = cfg::Sha256Hex(*text);

  // What these bytes widen, as lazaret-configd sees them (it parses; this
  // process does not), against the user's own layers.
  pb::ValidateRequest req;
  req.mutable_selector()->set_workspace_dir(canon.substr(0, canon.rfind('/')));
  req.set_workspace_file_content(*text);
  pb::ValidateResponse resp;
  grpc::Status s = configd.Validate(req, &resp);
  if (!s.ok()) {
    if (configd.ReportNotRunning(s)) {
      std::fprintf(stderr,
                   "lazaret trust needs it to show what the file widens; nothing was trusted.\n");
      return kExitNotRunning;
    }
    std::fprintf(stderr, "lazaret trust: could not check the file: %s\n",
                 vocab::EscapeForTerminal(s.error_message()).c_str());
    return 1;
  }
  for (const pb::LayerInfo& l : resp.layers()) {
    if (l.layer() == cpb::CONFIG_LAYER_WORKSPACE && l.sha256() != digest) {
      std::fprintf(stderr,
                   "lazaret trust: the service checked other content than was read; "
                   "nothing was trusted.\n");
      return 1;
    }
  }
  std::vector<const pb::Diagnostic*> grants;
  bool other_errors = false;
  for (const pb::Diagnostic& d : resp.errors()) {
    if (d.widening()) {
      grants.push_back(&d);
    } else {
      other_errors = true;
      std::fprintf(stderr, "error: %s\n", vocab::EscapeForTerminal(FormatDiagnostic(d)).c_str());
    }
  }
  if (other_errors) {
    std::fprintf(stderr,
                 "lazaret trust: not trusting a configuration with errors; fix them "
                 "first (lazaret config check).\n");
    return 1;
  }
  std::printf("%s\n  sha256 %s\n", shown_path.c_str(), digest.c_str());
  if (grants.empty()) {
    std::printf("This content only narrows your configuration; it needs no trust.\n");
    return 0;
  }
  std::printf("Trusting exactly this content lets it widen your configuration:\n");
  for (const pb::Diagnostic* d : grants) {
    std::printf("  line %u: %s\n", d->line(),
                vocab::EscapeForTerminal(SourceLine(*text, d->line())).c_str());
    std::printf("      %s: %s\n", vocab::EscapeForTerminal(d->key_path()).c_str(),
                vocab::EscapeForTerminal(d->message()).c_str());
  }
  std::fflush(stdout);
  if (!Confirmed(expected_sha256, digest, shown_path)) return 1;

  // The digest recorded is that of the bytes shown. If the file no longer
  // holds them, it was changed after it was shown: say so, record nothing.
  absl::StatusOr<std::string> now = cfg::ReadConfigFile(canon, /*follow_symlinks=*/false);
  if (!now.ok() || cfg::Sha256Hex(*now) != digest) {
    std::fprintf(stderr,
                 "lazaret trust: %s changed after it was shown; nothing was trusted. Review it "
                 "again and rerun lazaret trust.\n",
                 shown_path.c_str());
    return 1;
  }
  if (absl::Status st = store.Trust(canon, digest); !st.ok()) {
    std::fprintf(stderr, "lazaret trust: %s\n", vocab::EscapeForTerminal(st.message()).c_str());
    return 1;
  }
  std::printf(
      "Trusted %s\n  sha256 %s\nAny change to the file, even one byte, withdraws this "
      "trust. Undo with: lazaret trust --revoke %s\n",
      shown_path.c_str(), digest.c_str(), shown_path.c_str());
  return 0;
}

}  // namespace lazaret::cli::config
