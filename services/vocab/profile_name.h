// The profile-name rule of the configuration. Part of lazaret_vocab: runs
// anywhere (lazaret-configd names profiles by it, lazaret-brokerd checks
// the profile a session certificate names). The name is untrusted text.
#ifndef LAZARET_SERVICES_VOCAB_PROFILE_NAME_H_
#define LAZARET_SERVICES_VOCAB_PROFILE_NAME_H_

#include "absl/strings/string_view.h"

namespace lazaret::vocab {

// ^[a-z0-9_-]{2,32}$: a name that is safe as a path component, a podman
// name part and a certificate URI part as it is.
bool IsValidProfileName(absl::string_view name);

}  // namespace lazaret::vocab

#endif  // LAZARET_SERVICES_VOCAB_PROFILE_NAME_H_
