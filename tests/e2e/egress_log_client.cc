// egress_log_client: the approver API's WatchEgressLog from a test, as the
// mode's user (brokerd.sock takes only its owner's connections).
//
//   lazaret_egress_log_client SOCKET SESSION_ID
//
// Prints each LogEntry as one JSON line (proto field names) until the
// stream ends; exit 0 when it ended OK, 1 with the status on stderr.
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <string>

#include "google/protobuf/util/json_util.h"
#include "lazaret/approver/v1/approver.grpc.pb.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: lazaret_egress_log_client SOCKET SESSION_ID\n";
    return 2;
  }
  auto channel =
      grpc::CreateChannel(std::string("unix:") + argv[1], grpc::InsecureChannelCredentials());
  auto stub = lazaret::approver::v1::ApproverService::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  lazaret::approver::v1::WatchEgressLogRequest req;
  req.set_session_id(argv[2]);
  auto reader = stub->WatchEgressLog(&ctx, req);
  lazaret::netpolicy::v1::LogEntry entry;
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  while (reader->Read(&entry)) {
    std::string line;
    if (google::protobuf::util::MessageToJsonString(entry, &line, opts).ok()) {
      std::cout << line << "\n";
    }
  }
  grpc::Status st = reader->Finish();
  if (!st.ok()) {
    std::cerr << "WatchEgressLog: " << st.error_message() << "\n";
    return 1;
  }
  return 0;
}
