#include "clients/lazaret/net/command.h"

#include "absl/strings/str_cat.h"
#include "clients/lazaret/net/format.h"
#include "lazaret/netpolicy/v1/netpolicy.pb.h"

namespace lazaret::cli::net {

const char kEgressLogNotice[] =
    "lazaret: UDP datagrams sent without connect() are not in this log (DNS is); connects are "
    "as the sandbox's gVisor kernel reported them\n";

namespace {

namespace pb = ::lazaret::netpolicy::v1;

const char* VerbName(NetVerb v) {
  switch (v) {
    case NetVerb::kShow:
      return "show";
    case NetVerb::kTest:
      return "test";
    case NetVerb::kLog:
      return "log";
    case NetVerb::kReload:
      return "reload";
    case NetVerb::kAllow:
      return "allow";
    case NetVerb::kDeny:
      return "deny";
    default:
      return "help";
  }
}

int Fail(const NetArgs& args, const NetOutput& o, const absl::Status& s, int code = kExitFailed) {
  o.err(absl::StrCat("lazaret net ", VerbName(args.verb), ": ", s.message(), "\n"));
  return code;
}

int Show(const NetArgs& args, const std::string& session, NetPolicyClient& client,
         const NetOutput& o) {
  absl::StatusOr<pb::SessionPolicy> p = client.Show(session);
  if (!p.ok()) return Fail(args, o, p.status());
  if (args.json) {
    absl::StatusOr<std::string> json = PolicyJson(*p);
    if (!json.ok()) return Fail(args, o, json.status());
    o.out(*json);
    return kExitOk;
  }
  o.out(PolicyText(*p, o.now_unix()));
  return kExitOk;
}

int Test(const NetArgs& args, const std::string& session, NetPolicyClient& client,
         const NetOutput& o) {
  pb::TestDestinationRequest req;
  req.mutable_session()->set_id(session);
  req.set_host(args.destination.host);
  req.set_port(args.destination.port);
  req.set_protocol(args.udp ? ::lazaret::netrouter::v1::PROTOCOL_UDP
                            : ::lazaret::netrouter::v1::PROTOCOL_TCP);
  absl::StatusOr<pb::TestDestinationResponse> r = client.Test(req);
  if (!r.ok()) return Fail(args, o, r.status(), kExitUsage);
  const bool v6 = args.destination.host.find(':') != std::string::npos;
  const std::string destination =
      absl::StrCat(v6 ? "[" : "", args.destination.host, v6 ? "]" : "", ":", args.destination.port,
                   args.udp ? "/udp" : "/tcp");
  o.out(TestText(*r, destination, o.now_unix()));
  return r->allowed() ? kExitOk : kExitFailed;
}

int Requests(const NetArgs& args, const std::string& session, const NetOutput& o) {
  if (!o.watch_requests) {
    return Fail(args, o, absl::UnimplementedError("no request log here"));
  }
  absl::Status s = o.watch_requests(session, args.follow,
                                    [&](const ::lazaret::egress::v1::RequestRecord& r) {
                                      if (!args.json) {
                                        o.out(absl::StrCat(RequestLine(r), "\n"));
                                        return true;
                                      }
                                      absl::StatusOr<std::string> json = RequestJson(r);
                                      if (json.ok()) o.out(*json);
                                      return true;
                                    });
  if (!s.ok()) return Fail(args, o, s);
  return kExitOk;
}

int Log(const NetArgs& args, const std::string& session, NetPolicyClient& client,
        const NetOutput& o) {
  if (args.requests) return Requests(args, session, o);
  o.err(kEgressLogNotice);
  absl::Status s = client.WatchLog(session, args.follow, [&](const pb::LogEntry& e) {
    if (!args.json) {
      o.out(absl::StrCat(LogLine(e), "\n"));
      return;
    }
    absl::StatusOr<std::string> json = LogEntryJson(e);
    if (json.ok()) o.out(*json);
  });
  if (!s.ok()) return Fail(args, o, s);
  return kExitOk;
}

int Reload(const NetArgs& args, const std::string& session, NetPolicyClient& client,
           const NetOutput& o) {
  absl::StatusOr<pb::PolicyApplied> a = client.Reload(session);
  if (!a.ok()) return Fail(args, o, a.status());
  o.out(absl::StrCat("session ", session, ": configuration resolved again and applied, ",
                     AppliedText(*a), "\n"));
  return kExitOk;
}

int Change(const NetArgs& args, const std::string& session, NetPolicyClient& client,
           const NetOutput& o) {
  pb::ChangeSessionRequest req;
  req.mutable_session()->set_id(session);
  req.set_action(args.verb == NetVerb::kAllow ? pb::RULE_ACTION_ALLOW : pb::RULE_ACTION_DENY);
  if (!args.target.cidr.empty()) {
    req.mutable_cidr()->set_prefix(args.target.cidr);
  } else {
    req.set_name(args.target.name);
  }
  req.set_duration_seconds(args.duration_seconds);
  absl::StatusOr<pb::PolicyApplied> a = client.Change(req);
  if (!a.ok()) return Fail(args, o, a.status());
  const std::string& what = args.target.cidr.empty() ? args.target.name : args.target.cidr;
  o.out(absl::StrCat(
      "session ", session, ": ", args.verb == NetVerb::kAllow ? "allowed " : "denied ", what,
      args.duration_seconds == 0 ? " for the rest of the session"
                                 : absl::StrCat(" for ", RemainingText(args.duration_seconds)),
      ", ", AppliedText(*a), "\n"));
  return kExitOk;
}

}  // namespace

int RunNetCommand(const NetArgs& args, const std::string& session, NetPolicyClient& client,
                  const NetOutput& o) {
  switch (args.verb) {
    case NetVerb::kShow:
      return Show(args, session, client, o);
    case NetVerb::kTest:
      return Test(args, session, client, o);
    case NetVerb::kLog:
      return Log(args, session, client, o);
    case NetVerb::kReload:
      return Reload(args, session, client, o);
    case NetVerb::kAllow:
    case NetVerb::kDeny:
      return Change(args, session, client, o);
    default:
      o.out(kNetHelp);
      return kExitOk;
  }
}

}  // namespace lazaret::cli::net
