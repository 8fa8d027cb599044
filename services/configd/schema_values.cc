#include "services/configd/schema_values.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace lazaret::config {

bool IsValidEnvName(absl::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  if (absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool IsValidSecretName(absl::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

absl::Status ParseVolumeMode(absl::string_view mode, Access* access, SelinuxLabel* selinux) {
  *access = Access::kReadOnly;
  *selinux = SelinuxLabel::kNone;
  if (mode.empty()) return absl::OkStatus();
  bool have_access = false;
  bool have_label = false;
  for (absl::string_view opt : absl::StrSplit(mode, ',')) {
    if (opt == "ro" || opt == "rw") {
      if (have_access) return absl::InvalidArgumentError("ro/rw is given more than once");
      have_access = true;
      *access = opt == "rw" ? Access::kReadWrite : Access::kReadOnly;
    } else if (opt == "z" || opt == "Z") {
      if (have_label) return absl::InvalidArgumentError("z/Z is given more than once");
      have_label = true;
      *selinux = opt == "z" ? SelinuxLabel::kShared : SelinuxLabel::kPrivate;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown mount option \"", opt, "\" (allowed: ro, rw, z, Z)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckImageReference(absl::string_view image, std::string* warning) {
  if (image.empty()) return absl::InvalidArgumentError("the image is empty");
  if (image.size() > 512) return absl::InvalidArgumentError("the reference is too long");
  if (!absl::ascii_isalnum(static_cast<unsigned char>(image[0]))) {
    return absl::InvalidArgumentError("a reference starts with a letter or digit");
  }
  for (char c : image) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
        absl::string_view("._-/:@").find(c) == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", absl::string_view(&c, 1), "' cannot appear in an image reference"));
    }
  }
  absl::string_view name = image;
  bool digest = false;
  if (const size_t at = image.find('@'); at != absl::string_view::npos) {
    absl::string_view d = image.substr(at + 1);
    name = image.substr(0, at);
    if (!absl::ConsumePrefix(&d, "sha256:") || d.size() != 64 ||
        !std::all_of(d.begin(), d.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); })) {
      return absl::InvalidArgumentError("a digest is written @sha256:<64 lowercase hex digits>");
    }
    digest = true;
  }
  std::string tag;
  const size_t slash = name.rfind('/');
  const size_t colon = name.rfind(':');
  if (colon != absl::string_view::npos && (slash == absl::string_view::npos || colon > slash)) {
    tag = std::string(name.substr(colon + 1));
    name = name.substr(0, colon);
    if (tag.empty() || tag.size() > 128 || tag[0] == '.' || tag[0] == '-' ||
        tag.find('/') != std::string::npos) {
      return absl::InvalidArgumentError("the tag is malformed");
    }
  }
  std::vector<absl::string_view> parts = absl::StrSplit(name, '/');
  for (size_t i = 0; i < parts.size(); ++i) {
    absl::string_view part = parts[i];
    if (part.empty()) return absl::InvalidArgumentError("the name has an empty path component");
    if (i > 0 || parts.size() == 1) {
      for (char c : part) {
        if (absl::ascii_isupper(static_cast<unsigned char>(c)) || c == ':' || c == '@') {
          return absl::InvalidArgumentError("repository names are lowercase");
        }
      }
    }
  }
  std::vector<std::string> notes;
  if (!digest && (tag.empty() || tag == "latest")) {
    notes.push_back(tag.empty() ? "the image has no tag (podman uses :latest), so it is not pinned"
                                : "the image uses :latest, so it is not pinned");
  }
  const absl::string_view first = parts[0];
  const bool qualified =
      parts.size() > 1 && (first == "localhost" || first.find('.') != absl::string_view::npos ||
                           first.find(':') != absl::string_view::npos);
  if (!qualified) {
    notes.push_back(
        "the image has no registry, so podman resolves the short name through "
        "registries.conf; write the registry (e.g. docker.io/library/...)");
  }
  if (warning != nullptr) *warning = absl::StrJoin(notes, "; ");
  return absl::OkStatus();
}

namespace {

struct SizeUnit {
  absl::string_view suffix;
  int shift;
};
// Largest first, for FormatByteSize.
constexpr SizeUnit kSizeUnits[] = {{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}};

}  // namespace

absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[digits]))) {
    ++digits;
  }
  const absl::string_view suffix = text.substr(digits);
  int shift = -1;
  if (suffix.empty()) {
    shift = 0;
  } else {
    for (const SizeUnit& u : kSizeUnits) {
      if (suffix == u.suffix) shift = u.shift;
    }
  }
  if (digits == 0 || shift < 0) {
    return absl::InvalidArgumentError("not a whole number followed by KiB, MiB, GiB or TiB");
  }
  uint64_t n = 0;
  for (char c : text.substr(0, digits)) {
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (n > (UINT64_MAX - d) / 10) return absl::OutOfRangeError("more bytes than 64 bits hold");
    n = n * 10 + d;
  }
  if (shift > 0 && n > (UINT64_MAX >> shift)) {
    return absl::OutOfRangeError("more bytes than 64 bits hold");
  }
  return n << shift;
}

std::string FormatByteSize(uint64_t bytes) {
  for (const SizeUnit& u : kSizeUnits) {
    const uint64_t unit = uint64_t{1} << u.shift;
    if (bytes != 0 && bytes % unit == 0) return absl::StrCat(bytes / unit, u.suffix);
  }
  return absl::StrCat(bytes);
}

namespace {

struct DurationUnit {
  char suffix;
  uint32_t seconds;
};
// Largest first, for FormatDuration.
constexpr DurationUnit kDurationUnits[] = {{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};

}  // namespace

absl::StatusOr<uint32_t> ParseDuration(absl::string_view text) {
  if (text.size() < 2) {
    return absl::InvalidArgumentError("not a whole number followed by s, m, h or d");
  }
  const char suffix = text.back();
  const absl::string_view digits = text.substr(0, text.size() - 1);
  uint32_t unit = 0;
  for (const DurationUnit& u : kDurationUnits) {
    if (suffix == u.suffix) unit = u.seconds;
  }
  if (unit == 0 || !std::all_of(digits.begin(), digits.end(), [](char c) {
        return absl::ascii_isdigit(static_cast<unsigned char>(c));
      })) {
    return absl::InvalidArgumentError("not a whole number followed by s, m, h or d");
  }
  uint64_t n = 0;
  for (char c : digits) {
    n = n * 10 + static_cast<uint64_t>(c - '0');
    if (n * unit > UINT32_MAX) return absl::OutOfRangeError("more seconds than 32 bits hold");
  }
  return static_cast<uint32_t>(n * unit);
}

std::string FormatDuration(uint32_t seconds) {
  for (const DurationUnit& u : kDurationUnits) {
    if (seconds != 0 && seconds % u.seconds == 0) {
      return absl::StrCat(seconds / u.seconds, std::string(1, u.suffix));
    }
  }
  return "0s";
}

std::string SuggestKey(absl::string_view unknown, const std::vector<absl::string_view>& known) {
  std::string best;
  size_t best_d = 3;
  const std::string u = absl::AsciiStrToLower(unknown);
  for (absl::string_view k : known) {
    // Optimal string alignment distance.
    const size_t n = u.size();
    const size_t m = k.size();
    std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
    for (size_t i = 0; i <= n; ++i) d[i][0] = i;
    for (size_t j = 0; j <= m; ++j) d[0][j] = j;
    for (size_t i = 1; i <= n; ++i) {
      for (size_t j = 1; j <= m; ++j) {
        const size_t cost = u[i - 1] == k[j - 1] ? 0 : 1;
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
        if (i > 1 && j > 1 && u[i - 1] == k[j - 2] && u[i - 2] == k[j - 1]) {
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    const size_t dist = d[n][m];
    if (dist < best_d && dist < std::max<size_t>(u.size(), 2)) {
      best_d = dist;
      best = std::string(k);
    }
  }
  // Also catch a singular/plural slip or a missing prefix ("profile", "allow").
  if (best.empty()) {
    for (absl::string_view k : known) {
      if (u.size() >= 4 && absl::StartsWith(k, u)) return std::string(k);
    }
  }
  return best;
}

absl::StatusOr<EgressMode> ParseEgressMode(absl::string_view text) {
  if (text == "open") return EgressMode::kOpen;
  if (text == "names") return EgressMode::kNames;
  if (text == "ask") return EgressMode::kAsk;
  return absl::InvalidArgumentError("is not an egress mode (\"open\", \"names\" or \"ask\")");
}

const char* EgressModeName(EgressMode mode) {
  switch (mode) {
    case EgressMode::kOpen:
      return "open";
    case EgressMode::kNames:
      return "names";
    case EgressMode::kAsk:
      return "ask";
  }
  return "ask";
}

}  // namespace lazaret::config
