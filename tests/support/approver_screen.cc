#include "tests/support/approver_screen.h"

#include <chrono>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace lazaret::test {

std::string ReadApproverDetailByKeys(TmuxSession& tmux, const std::string& target, int height,
                                     std::string* first) {
  std::string seen;
  std::string before = tmux.Capture(target);
  *first = before;
  const auto value = [](absl::string_view row) {
    return row.size() > 11 ? std::string(row.substr(11)) : std::string();
  };
  for (int i = 0; i < 400; ++i) {
    std::vector<std::string> rows = absl::StrSplit(before, '\n');
    rows.resize(static_cast<size_t>(height));
    std::vector<std::string> body(rows.begin() + 1, rows.end() - 2);
    while (!body.empty() && absl::StripTrailingAsciiWhitespace(body.back()).empty()) body.pop_back();
    if (body.empty()) break;
    if (!absl::StartsWith(body.back(), "more below")) {
      for (const std::string& row : body) seen += value(row);
      break;
    }
    seen += value(body.front());
    if (!tmux.Keys(target, {"j"})) break;
    std::string now;
    test::WaitFor(
        [&] {
          now = tmux.Capture(target);
          return now != before;
        },
        std::chrono::seconds(5));
    before = now;
  }
  return absl::StrReplaceAll(seen, {{" ", ""}});
}

}  // namespace lazaret::test
