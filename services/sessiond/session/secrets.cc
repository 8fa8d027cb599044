#include "services/sessiond/session/secrets.h"

#include <openssl/crypto.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "services/common/fs/file.h"
#include "services/spawn/subprocess.h"

namespace lazaret::cli::session {
namespace {

namespace pb = ::lazaret::config::v1;

void Wipe(std::string* s) {
  if (!s->empty()) OPENSSL_cleanse(s->data(), s->size());
  s->clear();
}

// One trailing "\n" or "\r\n" goes (files and commands end their output
// with one); any other control character is refused, since the value must
// fit an HTTP header value.
absl::Status Normalize(const std::string& name, const std::string& where, std::string* value) {
  if (!value->empty() && value->back() == '\n') value->pop_back();
  if (!value->empty() && value->back() == '\r') value->pop_back();
  if (value->empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("secret ", name, ": ", where, " is empty; the session was not started"));
  }
  for (unsigned char c : *value) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      return absl::FailedPreconditionError(absl::StrCat(
          "secret ", name, ": ", where,
          " holds a control character (a line break inside it, or binary data), which no HTTP "
          "header can carry; store the value alone, on one line"));
    }
  }
  return absl::OkStatus();
}

// A bare name on the caller's PATH (absolute entries only: a relative one
// would be looked up in the worker's directory), or an absolute path.
absl::StatusOr<std::string> FindOnCallerPath(const std::string& program,
                                             const CallerEnvironment& env) {
  if (program.find('/') != std::string::npos) {
    if (program[0] != '/') {
      return absl::InvalidArgumentError("a relative program path is never run");
    }
    if (access(program.c_str(), X_OK) != 0) {
      return absl::NotFoundError(absl::StrCat(program, " is not an executable file"));
    }
    return program;
  }
  auto it = env.find("PATH");
  const std::string path = it == env.end() ? "/usr/local/bin:/usr/bin:/bin" : it->second;
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    if (dir.empty() || dir[0] != '/') continue;
    std::string candidate = absl::StrCat(dir, "/", program);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(absl::StrCat(program, " is not on the PATH of lazaret run"));
}

absl::Status ResolveOne(const pb::Secret& spec, const CallerEnvironment& env, std::string* value) {
  const std::string& name = spec.name();
  switch (spec.source_case()) {
    case pb::Secret::kFromEnv: {
      auto it = env.find(spec.from_env());
      if (it == env.end() || it->second.empty()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "secret ", name, ": $", spec.from_env(),
            " is not set in the environment of lazaret run ", "(from = \"env:", spec.from_env(),
            "\"); export it, or take the value from a file or ",
            "a command; the session was not started"));
      }
      *value = it->second;
      return Normalize(name, absl::StrCat("$", spec.from_env()), value);
    }
    case pb::Secret::kFromFile: {
      absl::StatusOr<std::string> data = fs::ReadHostFile(spec.from_file(), kMaxSecretBytes + 2);
      if (!data.ok()) {
        return absl::Status(
            data.status().code(),
            absl::StrCat("secret ", name, ": ", spec.from_file(), " could not be read (",
                         data.status().message(), "); the session was not started"));
      }
      *value = *std::move(data);
      if (value->size() > kMaxSecretBytes + 2) {
        Wipe(value);
        return absl::FailedPreconditionError(absl::StrCat(
            "secret ", name, ": ", spec.from_file(), " is larger than ", kMaxSecretBytes,
            " bytes, which is no credential; the session was not started"));
      }
      return Normalize(name, spec.from_file(), value);
    }
    case pb::Secret::kFromCommand: {
      const auto& argv_pb = spec.from_command().argv();
      if (argv_pb.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("secret ", name, ": command is empty"));
      }
      std::vector<std::string> argv(argv_pb.begin(), argv_pb.end());
      absl::StatusOr<std::string> program = FindOnCallerPath(argv[0], env);
      if (!program.ok()) {
        return absl::FailedPreconditionError(absl::StrCat("secret ", name, ": command ", argv[0],
                                                          ": ", program.status().message(),
                                                          "; the session was not started"));
      }
      argv[0] = *program;
      std::vector<std::string> environment;
      for (const auto& [k, v] : env) environment.push_back(absl::StrCat(k, "=", v));
      SpawnOptions options;
      options.timeout = std::chrono::seconds(kSecretCommandSeconds);
      auto home = env.find("HOME");
      const bool home_usable = home != env.end() && !home->second.empty() && home->second[0] == '/';
      options.cwd = home_usable ? home->second : std::string(1, '/');
      options.env = &environment;
      options.max_output_bytes = kMaxSecretBytes + 2;
      absl::StatusOr<Captured> run = RunCaptured(argv, options);
      // Neither its output nor its error output is shown: either may hold
      // the value.
      if (!run.ok()) {
        return absl::Status(
            run.status().code(),
            absl::StrCat("secret ", name, ": command ", argv_pb[0], " did not finish within ",
                         kSecretCommandSeconds, " s or printed more than ", kMaxSecretBytes,
                         " bytes; the session was not started"));
      }
      Wipe(&run->err);
      if (run->exit_code != 0) {
        Wipe(&run->out);
        return absl::FailedPreconditionError(absl::StrCat("secret ", name, ": command ", argv_pb[0],
                                                          " exited with status ", run->exit_code,
                                                          "; the session was not started"));
      }
      *value = std::move(run->out);
      return Normalize(name, absl::StrCat("the output of ", argv_pb[0]), value);
    }
    case pb::Secret::SOURCE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("secret ", name, ": it says neither from nor command"));
}

}  // namespace

SessionSecrets::~SessionSecrets() { WipeValues(); }

void SessionSecrets::WipeValues() {
  for (ResolvedSecret& s : secrets_) Wipe(&s.value);
}

std::string NewPlaceholder() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) abort();  // the kernel's random source never fails once seeded
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = kPlaceholderPrefix;
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<SessionSecrets>> ResolveSecrets(const pb::ResolvedProfile& profile,
                                                               const CallerEnvironment& env) {
  auto out = std::make_unique<SessionSecrets>();
  for (const pb::Secret& spec : profile.secrets()) {
    ResolvedSecret& r = out->secrets().emplace_back();
    r.spec = spec;
    r.spec.clear_source();  // where it came from is not passed on
    if (absl::Status st = ResolveOne(spec, env, &r.value); !st.ok()) {
      Wipe(&r.value);
      return st;  // `out` wipes what was resolved before
    }
    r.placeholder = NewPlaceholder();
  }
  return out;
}

std::vector<EnvSetting> PlaceholderEnv(const SessionSecrets& secrets) {
  std::vector<EnvSetting> env;
  for (const ResolvedSecret& s : secrets.secrets()) {
    if (!s.spec.sandbox_env().empty()) env.push_back({s.spec.sandbox_env(), s.placeholder, true});
  }
  return env;
}

}  // namespace lazaret::cli::session
