// Requests as the broker's endpoint would put them in the book, for the
// brokerd unit tests. Test code only.
#ifndef LAZARET_SERVICES_BROKERD_TEST_REQUESTS_H_
#define LAZARET_SERVICES_BROKERD_TEST_REQUESTS_H_

#include <string>

#include "lazaret/approver/v1/approver.pb.h"

namespace lazaret::brokerd::testing {

inline constexpr char kSession[] = "0123456789ab";
inline constexpr char kOther[] = "ba9876543210";

// `id -u` from `session`, resolved to /usr/bin/id.
inline lazaret::approver::v1::PendingRequest Request(const std::string& id,
                                                     const std::string& session = kSession) {
  lazaret::approver::v1::PendingRequest r;
  r.set_request_id(id);
  r.set_session_id(session);
  r.set_profile("default");
  r.set_command("id -u");
  r.add_argv("id");
  r.add_argv("-u");
  r.set_binary("/usr/bin/id");
  return r;
}

}  // namespace lazaret::brokerd::testing

#endif  // LAZARET_SERVICES_BROKERD_TEST_REQUESTS_H_
