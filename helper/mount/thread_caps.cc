#include "helper/mount/thread_caps.h"

#include <sys/syscall.h>
#include <unistd.h>

namespace lazaret::mounthelper {

// Raw capget/capset: libcap's cap_set_proc acts on the calling thread too,
// but the saved set must be restored exactly, bit for bit.
ThreadCapsInEffect::ThreadCapsInEffect(absl::Span<const cap_value_t> caps) {
  if (syscall(SYS_capget, &hdr_, saved_) != 0) return;
  __user_cap_data_struct raised[2] = {saved_[0], saved_[1]};
  for (cap_value_t c : caps) {
    const int word = c / 32;
    const unsigned bit = 1u << (c % 32);
    if (raised[word].permitted & bit) raised[word].effective |= bit;
  }
  raised_ = syscall(SYS_capset, &hdr_, raised) == 0;
}

ThreadCapsInEffect::~ThreadCapsInEffect() {
  if (raised_) (void)syscall(SYS_capset, &hdr_, saved_);
}

}  // namespace lazaret::mounthelper
