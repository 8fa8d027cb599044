// The rows of `lazaret ps`: the sessions lazaret-sessiond runs
// (SessionService.List) and the session directories whose worker is gone
// (orphaned), one row per id; and their table and `--json` forms. Runs in
// the user's terminal, as the user. The names in a row (profile,
// workspace, command) come from the services and may hold any bytes: the
// table shows them escaped for a terminal, the JSON quotes them
// (json_writer.h).
#ifndef LAZARET_CLIENTS_LAZARET_PS_LISTING_H_
#define LAZARET_CLIENTS_LAZARET_PS_LISTING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lazaret/session/v1/session.pb.h"
#include "services/sessiond/session/session_dir.h"

namespace lazaret::cli::ps {

struct Row {
  // A live session: sessiond's answer. An orphaned one: what its
  // session.json recorded (id, profile, workspace, started_unix,
  // worker_pid), the rest unset.
  ::lazaret::session::v1::SessionInfo info;
  bool orphaned = false;
  // False for an orphaned session whose session.json could not be read:
  // only its id is known.
  bool has_record = true;
};

// The live sessions, then each of `dirs` whose owner is gone and that is
// not live, sorted by id.
std::vector<Row> Rows(const std::vector<::lazaret::session::v1::SessionInfo>& live,
                      const std::vector<session::FoundSession>& dirs);

// The table's lines (the header first), ages and countdowns measured from
// `now_unix`.
std::vector<std::string> TableLines(const std::vector<Row>& rows, int64_t now_unix);

// `lazaret ps --json`: {"sessions": [...], "spares": [...]}: `spares`
// lists the spare sidecars sessiond keeps for the next `lazaret run`, each
// {"id", "workspace", "ready"} (docs/architecture.md "Spare sidecar");
// `sessions` has one object per row with the members (names stable,
// docs/operations.md)
//   id, state ("starting", "running", "stopping", "orphaned"),
//   profile, workspace ("" when not known),
//   started, detached_since, stop_at (RFC 3339 UTC; null when 0),
//   started_unix, detached_since_unix, stop_at_unix (seconds, 0: none),
//   attached (terminals attached now), tty, worker_pid (0: not known),
//   command (argv), attach_socket.
// Every field of SessionInfo appears under its proto name.
std::string Json(const std::vector<Row>& rows,
                 const std::vector<::lazaret::session::v1::SpareInfo>& spares = {});

// "2026-12-05T19:30:53Z"; empty for 0 or less, and after the year 9999.
std::string Rfc3339Utc(int64_t unix_seconds);

}  // namespace lazaret::cli::ps

#endif  // LAZARET_CLIENTS_LAZARET_PS_LISTING_H_
