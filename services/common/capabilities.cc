#include "services/common/capabilities.h"

#include <linux/securebits.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/common/status_util.h"

namespace lazaret::caps {
namespace {

struct CapFree {
  void operator()(cap_t c) const { cap_free(c); }
};
using CapPtr = std::unique_ptr<std::remove_pointer_t<cap_t>, CapFree>;

bool Contains(absl::Span<const cap_value_t> set, cap_value_t cap) {
  return std::find(set.begin(), set.end(), cap) != set.end();
}

bool HasFlag(cap_t c, cap_value_t cap, cap_flag_t flag) {
  cap_flag_value_t v = CAP_CLEAR;
  return cap_get_flag(c, cap, flag, &v) == 0 && v == CAP_SET;
}

std::vector<cap_value_t> FlagSet(cap_t c, cap_flag_t flag) {
  std::vector<cap_value_t> out;
  for (cap_value_t cap = 0; cap <= CAP_LAST_CAP; ++cap) {
    if (HasFlag(c, cap, flag)) out.push_back(cap);
  }
  return out;
}

absl::Status SetFlags(cap_t c, cap_flag_t flag, const std::vector<cap_value_t>& caps) {
  if (caps.empty()) return absl::OkStatus();
  if (cap_set_flag(c, flag, static_cast<int>(caps.size()), caps.data(), CAP_SET) != 0) {
    return ErrnoStatus("cap_set_flag", errno);
  }
  return absl::OkStatus();
}

std::string Describe(absl::Span<const cap_value_t> caps) {
  return caps.empty() ? "{}" : absl::StrCat("{", absl::StrJoin(Names(caps), ","), "}");
}

}  // namespace

std::string Name(cap_value_t cap) {
  char* raw = cap_to_name(cap);
  if (raw == nullptr) return absl::StrCat("CAP_", cap);
  std::string name = absl::AsciiStrToUpper(raw);
  cap_free(raw);
  if (name.rfind("CAP_", 0) == 0) name = name.substr(4);
  return name;
}

std::vector<std::string> Names(absl::Span<const cap_value_t> caps) {
  std::vector<std::string> out;
  out.reserve(caps.size());
  for (cap_value_t c : caps) out.push_back(Name(c));
  return out;
}

uint64_t Mask(absl::Span<const cap_value_t> caps) {
  uint64_t m = 0;
  for (cap_value_t c : caps) m |= uint64_t{1} << c;
  return m;
}

namespace {

// Declaration::granted_by_exec: nothing for this process, exactly `grant`
// for what it execs as root.
absl::StatusOr<Report> DropForExecGrant(std::vector<cap_value_t> grant) {
  std::sort(grant.begin(), grant.end());
  grant.erase(std::unique(grant.begin(), grant.end()), grant.end());
  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1) {
    return absl::FailedPreconditionError(
        "no_new_privs is already set (inherited from the process that started this one), so "
        "the programs this process execs as root (podman) or setuid (newuidmap) could not "
        "receive their capabilities; start it from a process without no_new_privs");
  }
  CapPtr current(cap_get_proc());
  if (!current) return ErrnoStatus("cap_get_proc", errno);
  Report report;
  for (cap_value_t c : grant) {
    if (cap_get_bound(c) <= 0) report.missing.push_back(c);
  }
  if (HasFlag(current.get(), CAP_SETPCAP, CAP_PERMITTED)) {
    CapPtr raise(cap_dup(current.get()));
    cap_value_t setpcap = CAP_SETPCAP;
    if (cap_set_flag(raise.get(), CAP_EFFECTIVE, 1, &setpcap, CAP_SET) != 0 ||
        cap_set_proc(raise.get()) != 0) {
      return ErrnoStatus("raising CAP_SETPCAP to drop the bounding set", errno);
    }
    for (cap_value_t c = 0; c <= CAP_LAST_CAP; ++c) {
      if (Contains(grant, c)) continue;
      if (cap_drop_bound(c) != 0 && errno != EINVAL) {
        return ErrnoStatus(absl::StrCat("dropping ", Name(c), " from the bounding set"), errno);
      }
    }
    report.bounding_dropped = true;
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return ErrnoStatus("clearing ambient capabilities", errno);
  }
  CapPtr empty(cap_init());
  if (cap_set_proc(empty.get()) != 0) return ErrnoStatus("cap_set_proc", errno);

  CapPtr after(cap_get_proc());
  if (!after) return ErrnoStatus("cap_get_proc", errno);
  const auto got_p = FlagSet(after.get(), CAP_PERMITTED);
  const auto got_e = FlagSet(after.get(), CAP_EFFECTIVE);
  const auto got_i = FlagSet(after.get(), CAP_INHERITABLE);
  if (!got_p.empty() || !got_e.empty() || !got_i.empty()) {
    return absl::InternalError(absl::StrCat("capability drop did not take effect: permitted ",
                                            Describe(got_p), " effective ", Describe(got_e),
                                            " inheritable ", Describe(got_i), "; wanted none"));
  }
  if (report.bounding_dropped) {
    for (cap_value_t c = 0; c <= CAP_LAST_CAP; ++c) {
      if (cap_get_bound(c) > 0 && !Contains(grant, c)) {
        return absl::InternalError(
            absl::StrCat("capability ", Name(c), " is still in the bounding set"));
      }
    }
  }
  for (cap_value_t c = 0; c <= CAP_LAST_CAP; ++c) {
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1) {
      return absl::InternalError(absl::StrCat("ambient capability ", Name(c), " is still set"));
    }
  }
  return report;
}

}  // namespace

absl::StatusOr<Report> DropToDeclared(const Declaration& declaration) {
  if (declaration.granted_by_exec.has_value()) {
    if (!declaration.required.empty() || !declaration.delegated.empty()) {
      return absl::InvalidArgumentError(
          "a declaration with granted_by_exec keeps no capability of its own: required and "
          "delegated must be empty");
    }
    return DropForExecGrant(*declaration.granted_by_exec);
  }
  CapPtr current(cap_get_proc());
  if (!current) return ErrnoStatus("cap_get_proc", errno);
  const std::vector<cap_value_t> permitted = FlagSet(current.get(), CAP_PERMITTED);

  Report report;
  std::vector<cap_value_t> keep_effective;
  std::vector<cap_value_t> keep_permitted;
  for (cap_value_t c : declaration.required) {
    if (Contains(permitted, c)) {
      keep_effective.push_back(c);
      keep_permitted.push_back(c);
    } else {
      report.missing.push_back(c);
    }
  }
  for (cap_value_t c : declaration.delegated) {
    if (Contains(permitted, c) && !Contains(keep_permitted, c)) keep_permitted.push_back(c);
  }
  std::sort(keep_permitted.begin(), keep_permitted.end());

  // Bounding set and securebits need CAP_SETPCAP in the effective set.
  const bool can_setpcap = Contains(permitted, CAP_SETPCAP);
  if (can_setpcap) {
    CapPtr raise(cap_dup(current.get()));
    cap_value_t setpcap = CAP_SETPCAP;
    if (cap_set_flag(raise.get(), CAP_EFFECTIVE, 1, &setpcap, CAP_SET) != 0 ||
        cap_set_proc(raise.get()) != 0) {
      return ErrnoStatus("raising CAP_SETPCAP to drop the bounding set", errno);
    }
    for (cap_value_t c = 0; c <= CAP_LAST_CAP; ++c) {
      if (Contains(keep_permitted, c)) continue;
      if (cap_drop_bound(c) != 0 && errno != EINVAL) {
        return ErrnoStatus(absl::StrCat("dropping ", Name(c), " from the bounding set"), errno);
      }
    }
    // Root regains no capabilities through execve, and nobody may undo that.
    // A delegating process relies on root's execve rule (new permitted = the
    // bounding set, clipped by no_new_privs to its own permitted set) to hand
    // its children their capabilities, so it leaves that rule in place.
    if (declaration.delegated.empty() &&
        prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                     SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED) !=
            0) {
      return ErrnoStatus("setting securebits", errno);
    }
    report.bounding_dropped = true;
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return ErrnoStatus("clearing ambient capabilities", errno);
  }

  CapPtr target(cap_init());
  LAZ_RETURN_IF_ERROR(SetFlags(target.get(), CAP_PERMITTED, keep_permitted));
  LAZ_RETURN_IF_ERROR(SetFlags(target.get(), CAP_EFFECTIVE, keep_effective));
  if (cap_set_proc(target.get()) != 0) return ErrnoStatus("cap_set_proc", errno);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return ErrnoStatus("PR_SET_NO_NEW_PRIVS", errno);
  }

  // Verify from the kernel's point of view, not from what we asked for.
  CapPtr after(cap_get_proc());
  if (!after) return ErrnoStatus("cap_get_proc", errno);
  std::sort(keep_effective.begin(), keep_effective.end());
  const auto got_p = FlagSet(after.get(), CAP_PERMITTED);
  const auto got_e = FlagSet(after.get(), CAP_EFFECTIVE);
  const auto got_i = FlagSet(after.get(), CAP_INHERITABLE);
  if (got_p != keep_permitted || got_e != keep_effective || !got_i.empty()) {
    return absl::InternalError(absl::StrCat(
        "capability drop did not take effect: permitted ", Describe(got_p), " effective ",
        Describe(got_e), " inheritable ", Describe(got_i), "; wanted permitted ",
        Describe(keep_permitted), " effective ", Describe(keep_effective)));
  }
  if (report.bounding_dropped) {
    for (cap_value_t c = 0; c <= CAP_LAST_CAP; ++c) {
      const int in_bound = cap_get_bound(c);
      if (in_bound > 0 && !Contains(keep_permitted, c)) {
        return absl::InternalError(
            absl::StrCat("capability ", Name(c), " is still in the bounding set"));
      }
    }
  }
  for (cap_value_t c = 0; c <= CAP_LAST_CAP; ++c) {
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1) {
      return absl::InternalError(absl::StrCat("ambient capability ", Name(c), " is still set"));
    }
  }
  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
    return absl::InternalError("no_new_privs is not set after PR_SET_NO_NEW_PRIVS");
  }
  report.held = keep_permitted;
  return report;
}

}  // namespace lazaret::caps
