#include "services/configd/proto_convert.h"

namespace lazaret::config {

namespace pb = ::lazaret::config::v1;
namespace cpb = ::lazaret::common::v1;

cpb::ConfigLayer ToProto(Layer layer) {
  switch (layer) {
    case Layer::kEmbeddedDefault:
      return cpb::CONFIG_LAYER_EMBEDDED_DEFAULT;
    case Layer::kUser:
      return cpb::CONFIG_LAYER_USER;
    case Layer::kWorkspace:
      return cpb::CONFIG_LAYER_WORKSPACE;
    case Layer::kExplicit:
      return cpb::CONFIG_LAYER_EXPLICIT;
  }
  return cpb::CONFIG_LAYER_UNSPECIFIED;
}

void ToProto(const Diagnostic& d, pb::Diagnostic* out) {
  out->set_file(d.file);
  out->set_key_path(d.key_path);
  out->set_line(d.line);
  out->set_column(d.column);
  out->set_message(d.message);
  out->set_hint(d.hint);
  out->set_widening(d.widening);
}

void ToProto(const LayerSummary& l, pb::LayerInfo* out) {
  out->set_layer(ToProto(l.layer));
  out->set_path(l.path);
  out->set_sha256(l.sha256);
  out->set_trusted(l.trusted);
}

void ToProto(const Origin& o, pb::EntrySource* out) {
  out->set_layer(ToProto(o.layer));
  out->set_file(o.file);
  out->set_line(o.line);
  out->set_key_path(o.key_path);
}

void ToProto(const Setting<vocab::Cidr>& c, pb::CidrEntry* out) {
  out->mutable_cidr()->set_prefix(c.value.ToString());
  ToProto(c.origin, out->mutable_source());
}

void ToProto(const ResolvedProfile& p, pb::ResolvedProfile* out) {
  out->set_name(p.name);
  out->set_image(p.image);
  out->set_profile_dir(p.profile_dir);
  out->set_data_root(p.data_root);
  for (const std::string& d : p.persistent_dirs) out->add_persistent_dirs(d);
  out->set_keep_planted_repositories(p.keep_planted_repositories);
  out->set_persistent_cap_bytes(p.persistent_cap_bytes);
  pb::NetworkPolicy* net = out->mutable_network();
  for (const Setting<vocab::Cidr>& c : p.allow) ToProto(c, net->add_allow());
  for (const Setting<vocab::Cidr>& c : p.deny) ToProto(c, net->add_deny());
  for (const Setting<std::string>& d : p.allow_domains) {
    pb::DomainEntry* e = net->add_allow_domains();
    e->set_pattern(d.value);
    ToProto(d.origin, e->mutable_source());
  }
  for (const std::string& u : p.dns_upstream) net->add_dns_upstream(u);
  switch (p.egress.value) {
    case EgressMode::kOpen:
      net->set_egress(pb::EGRESS_MODE_OPEN);
      break;
    case EgressMode::kNames:
      net->set_egress(pb::EGRESS_MODE_NAMES);
      break;
    case EgressMode::kAsk:
      net->set_egress(pb::EGRESS_MODE_ASK);
      break;
  }
  ToProto(p.egress.origin, net->mutable_egress_source());
  net->set_ask_timeout_seconds(p.ask_timeout_seconds);
  net->set_ask_unattended(p.ask_unattended_wait ? pb::ASK_UNATTENDED_WAIT : pb::ASK_UNATTENDED_DENY);
  for (const Setting<vocab::PortSpec>& f : p.ports) {
    cpb::PortForward* pf = net->add_ports();
    pf->set_host_address(f.value.host_address);
    pf->set_host_port(f.value.host_port);
    pf->set_sandbox_port(f.value.sandbox_port);
  }
  out->set_trust_host_ca(p.trust_host_ca);
  for (const ResolvedEnv& e : p.env) {
    pb::EnvVar* v = out->add_env();
    v->set_name(e.name);
    if (e.host_pull) {
      v->set_host_var(e.value);
    } else {
      v->set_literal(e.value);
    }
    v->set_source(ToProto(e.source));
  }
  for (const ResolvedVolume& vol : p.volumes) {
    pb::Volume* v = out->add_volumes();
    v->set_host(vol.host);
    v->set_container(vol.container);
    v->set_access(vol.access == Access::kReadWrite ? pb::MOUNT_ACCESS_READ_WRITE
                                                   : pb::MOUNT_ACCESS_READ_ONLY);
    v->set_selinux(vol.selinux == SelinuxLabel::kShared    ? pb::SELINUX_LABEL_SHARED
                   : vol.selinux == SelinuxLabel::kPrivate ? pb::SELINUX_LABEL_PRIVATE
                                                           : pb::SELINUX_LABEL_NONE);
    v->set_source(ToProto(vol.source));
  }
  pb::EscalationPolicy* esc = out->mutable_escalation();
  esc->set_enabled(p.escalation_enabled);
  esc->set_socket_dir(p.socket_dir);
  for (const Setting<vocab::CommandPrefix>& c : p.auto_approve) {
    pb::CommandPrefix* cp = esc->add_auto_approve();
    for (const std::string& a : c.value.argv) cp->add_argv(a);
    cp->set_exact(c.value.exact);
    for (const std::string& o : c.value.options) cp->add_options(o);
    cp->set_text(c.value.text);
    cp->set_source(ToProto(c.origin.layer));
  }
  esc->set_command_timeout_seconds(p.command_timeout_seconds);
  esc->set_approval_timeout_seconds(p.approval_timeout_seconds);
  esc->set_rate_limit(p.rate_limit);
  esc->set_approver(p.approver == "remote" ? pb::EscalationPolicy::APPROVER_REMOTE
                                           : pb::EscalationPolicy::APPROVER_INLINE);
  pb::SessionSettings* session = out->mutable_session();
  session->set_on_detach(p.on_detach_stop ? pb::ON_DETACH_STOP : pb::ON_DETACH_KEEP);
  session->set_detached_limit_seconds(p.detached_limit_seconds);
  out->mutable_terminal()->set_clipboard_write(p.clipboard_write);
  for (const ResolvedSecret& s : p.secrets) {
    pb::Secret* ps = out->add_secrets();
    ps->set_name(s.name);
    switch (s.source) {
      case SecretSource::kEnv:
        ps->set_from_env(s.from);
        break;
      case SecretSource::kFile:
        ps->set_from_file(s.from);
        break;
      case SecretSource::kCommand:
        for (const std::string& a : s.command) ps->mutable_from_command()->add_argv(a);
        break;
    }
    for (const std::string& h : s.hosts) ps->add_hosts(h);
    switch (s.inject) {
      case SecretInjection::kHeader:
        ps->set_inject(pb::SECRET_INJECTION_HEADER);
        ps->set_header(s.header);
        break;
      case SecretInjection::kBearer:
        ps->set_inject(pb::SECRET_INJECTION_BEARER);
        break;
      case SecretInjection::kBasic:
        ps->set_inject(pb::SECRET_INJECTION_BASIC);
        break;
    }
    ps->set_sandbox_env(s.sandbox_env);
  }
  for (const vocab::HttpRule& r : p.http_rules) {
    pb::HttpRule* pr = out->add_http_rules();
    pr->set_host(r.host);
    for (const vocab::HttpAllow& a : r.allow) {
      pb::HttpAllow* pa = pr->add_allow();
      pa->set_method(a.method);
      pa->set_path_prefix(a.path_prefix);
    }
  }
  for (const KeySource& k : p.sources) {
    pb::KeySource* ks = out->add_key_sources();
    ks->set_key_path(k.key_path);
    ks->set_layer(ToProto(k.layer));
    ks->set_file(k.file);
  }
}

}  // namespace lazaret::config
