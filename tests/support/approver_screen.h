// Reading the terminal approver's screen in tests as a person does, for the
// approver's own tmux tests and the end-to-end ones. Runs in the test
// process; the screen is only compared, never interpreted as commands.
#ifndef LAZARET_TESTS_SUPPORT_APPROVER_SCREEN_H_
#define LAZARET_TESTS_SUPPORT_APPROVER_SCREEN_H_

#include <string>

#include "tests/support/tmux_session.h"

namespace lazaret::test {

// Reads the detail open in `target` (of `height` rows): j, one row at a
// time, until the screen no longer says there is more below. Returns the
// value columns of every row seen, joined, spaces removed (a wrapped row may
// end in one); `*first` is the first screen.
std::string ReadApproverDetailByKeys(TmuxSession& tmux, const std::string& target, int height,
                                     std::string* first);

}  // namespace lazaret::test

#endif  // LAZARET_TESTS_SUPPORT_APPROVER_SCREEN_H_
