// Capabilities of lazaret-mount-helper's permitted set made effective in
// the calling thread for as long as a scope lasts, then permitted only
// again. Capabilities are per thread: no other thread of the helper gains
// them meanwhile. Runs in lazaret-mount-helper; which capabilities each
// use raises, and why, is listed in mounthelper.h.
#ifndef LAZARET_HELPER_MOUNT_THREAD_CAPS_H_
#define LAZARET_HELPER_MOUNT_THREAD_CAPS_H_

#include <linux/capability.h>
#include <sys/capability.h>

#include "absl/types/span.h"

namespace lazaret::mounthelper {

class ThreadCapsInEffect {
 public:
  // Raises each of `caps` that is permitted; one that is not stays off
  // (the operation then fails with EPERM/EACCES and says so).
  explicit ThreadCapsInEffect(absl::Span<const cap_value_t> caps);
  ~ThreadCapsInEffect();
  ThreadCapsInEffect(const ThreadCapsInEffect&) = delete;
  ThreadCapsInEffect& operator=(const ThreadCapsInEffect&) = delete;

 private:
  __user_cap_header_struct hdr_{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct saved_[2]{};
  bool raised_ = false;
};

}  // namespace lazaret::mounthelper

#endif  // LAZARET_HELPER_MOUNT_THREAD_CAPS_H_
