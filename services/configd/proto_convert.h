// Loader results as lazaret.config.v1 messages. Part of lazaret_config;
// used by lazaret-configd at its gRPC edge.
#ifndef LAZARET_SERVICES_CONFIGD_PROTO_CONVERT_H_
#define LAZARET_SERVICES_CONFIGD_PROTO_CONVERT_H_

#include "lazaret/config/v1/config.pb.h"
#include "services/configd/loader.h"

namespace lazaret::config {

lazaret::common::v1::ConfigLayer ToProto(Layer layer);
void ToProto(const Diagnostic& d, lazaret::config::v1::Diagnostic* out);
void ToProto(const LayerSummary& l, lazaret::config::v1::LayerInfo* out);
// An entry's place: layer, file, line and key path ("network.default_deny[3]").
void ToProto(const Origin& o, lazaret::config::v1::EntrySource* out);
void ToProto(const Setting<vocab::Cidr>& c, lazaret::config::v1::CidrEntry* out);
void ToProto(const ResolvedProfile& p, lazaret::config::v1::ResolvedProfile* out);

}  // namespace lazaret::config

#endif  // LAZARET_SERVICES_CONFIGD_PROTO_CONVERT_H_
