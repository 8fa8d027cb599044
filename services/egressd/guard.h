// What the egress proxy decides about one request and what it changes in
// it: the profile's HTTP rule for the host (vocab/http_rule.h), the
// secrets' placeholders (replaced on requests to the secret's own hosts,
// refused everywhere else), and the redaction of a secret's value from
// what comes back. Runs in lazaret-egressd (host service, no capability).
// Pure: no I/O; the HTTP/1.1 and HTTP/2 handlers call it for every
// request. Input is untrusted (the sandbox wrote the request; the upstream
// wrote the response).
#ifndef LAZARET_SERVICES_EGRESSD_GUARD_H_
#define LAZARET_SERVICES_EGRESSD_GUARD_H_

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "services/vocab/http_rule.h"

namespace lazaret::egressd {

// One secret as the proxy holds it. `value` is the real credential: it is
// never logged, never put in an error, never returned to the sandbox.
struct SecretSpec {
  enum class Inject { kHeader, kBearer, kBasic };
  std::string name;         // shown in logs
  std::string placeholder;  // what the sandbox holds ("lzs-" + 32 hex)
  std::string value;
  std::vector<std::string> hosts;  // exact or "*.example.com", lower case
  Inject inject = Inject::kHeader;
  std::string header;  // kHeader: the header name, lower case
};

// A header field as received. HTTP/1.1 names keep their case; HTTP/2 names
// are lower case. Matching of names is case-insensitive.
struct HeaderField {
  std::string name;
  std::string value;
};

struct GuardDecision {
  GuardDecision() = default;
  // Clears `derived_values`.
  ~GuardDecision();
  GuardDecision(const GuardDecision&) = default;
  GuardDecision& operator=(const GuardDecision&) = default;
  GuardDecision(GuardDecision&&) = default;
  GuardDecision& operator=(GuardDecision&&) = default;

  bool allowed = false;
  // When refused: the status (403) and a text/plain body that says which
  // rule refused and how to change it. Never holds a secret's value.
  int status = 0;
  std::string body;
  // Which rule decided, for the request log: `http "api.example.com":
  // POST /v1/messages`, `no HTTP rule for api.example.com`, `secret
  // "github" is not sent to evil.example.com`, ...
  std::string rule;
  // Names of the secrets whose placeholders were replaced.
  std::vector<std::string> injected;
  // Secret-derived text this request carries besides the values themselves
  // (the base64 credentials of basic authentication): redacted from the
  // response like a value (NewRedactor(&decision)). Never logged; cleared
  // on destruction.
  std::vector<std::string> derived_values;
};

class RequestGuard {
 public:
  RequestGuard(std::vector<SecretSpec> secrets, std::vector<vocab::HttpRule> rules);
  ~RequestGuard();  // clears the values (OPENSSL_cleanse)
  RequestGuard(const RequestGuard&) = delete;
  RequestGuard& operator=(const RequestGuard&) = delete;

  // Decides a request to `host` (lower case, no port; the TLS server name
  // the connection was made for, already checked against the request's
  // Host/:authority). `target` is the request target as sent (origin form:
  // path and query). On an allowed request the placeholders in `headers`
  // were replaced for the secrets this host may receive, as each secret's
  // inject says. A request is refused when the host's HTTP rule does not
  // admit it, or when a placeholder appears anywhere in its target (also
  // percent-encoded) or headers (names, values, and the decoded
  // credentials of `Authorization: Basic`) where it may not go (another
  // host, another header than the secret's, another form than `Bearer
  // <placeholder>` or basic's password); then `headers` is unchanged.
  // Placeholders are checked before the HTTP rule, so a placeholder headed
  // elsewhere is what the log shows.
  //
  // `plaintext`: the request came over plain HTTP (port 80). A secret is
  // only ever sent over TLS, so any placeholder in such a request refuses
  // it, even to the secret's own host.
  //
  // When a secret was injected, Review also makes the response redactable:
  // every Accept-Encoding field is removed and one `accept-encoding:
  // identity` added, so the upstream has no reason to compress (a
  // compressed body hides the value from the Redactor; the handler refuses
  // a compressed response to such a request).
  GuardDecision Review(absl::string_view host, absl::string_view method, absl::string_view target,
                       std::vector<HeaderField>* headers, bool plaintext = false) const;

  // Finds placeholders in request body bytes, across chunk boundaries
  // (holds back at most the longest placeholder - 1 bytes). A placeholder
  // in a body is never replaced; it means the request is refused (aborted
  // when the body is already on its way).
  class BodyScanner {
   public:
    // Returns the name of the secret whose placeholder completed in this
    // chunk, or an empty string.
    std::string Feed(absl::string_view chunk);

   private:
    friend class RequestGuard;
    explicit BodyScanner(const RequestGuard* guard) : guard_(guard) {}
    const RequestGuard* guard_;
    std::string tail_;
  };
  BodyScanner NewBodyScanner() const { return BodyScanner(this); }

  // Replaces each secret value (and each of the decision's derived values)
  // in a response, across chunk boundaries, with a mask of the same length
  // ("[redacted]" cut to the value's length, or padded with '*'), so
  // Content-Length and chunk sizes still hold. Where values overlap, the
  // longest one starting first is masked. Holds back at most (longest
  // value - 1) bytes, and only bytes that could still be a value's
  // beginning: a streamed response (server-sent events) is not delayed
  // beyond those. Feed and Finish together give exactly Redact of the
  // whole text, whatever the split.
  class Redactor {
   public:
    ~Redactor();  // clears the derived values it holds and the held bytes
    Redactor(Redactor&&) = default;
    Redactor& operator=(Redactor&&) = default;
    Redactor(const Redactor&) = delete;
    Redactor& operator=(const Redactor&) = delete;

    std::string Feed(absl::string_view chunk);
    std::string Finish();  // the held-back bytes
    // Bytes held back now (at most the longest value - 1).
    size_t held() const { return held_.size(); }

   private:
    friend class RequestGuard;
    Redactor(const RequestGuard* guard, std::vector<std::string> extra);
    // Appends the redacted text of held_[0, n) to `out` and drops it,
    // stopping where held_'s rest could still begin a value (unless
    // `final`).
    void Drain(bool final, std::string* out);
    const RequestGuard* guard_;
    std::vector<std::string> extra_;
    std::array<bool, 256> first_{};  // bytes that begin some value
    size_t longest_ = 0;
    std::string held_;
  };
  // `decision` (may be null) adds its derived values.
  Redactor NewRedactor(const GuardDecision* decision = nullptr) const;
  // Redaction of one whole text (a response header value).
  std::string Redact(absl::string_view text, const GuardDecision* decision = nullptr) const;

  // Whether any secret or rule names `host` (exact or by wildcard): the
  // proxy intercepts only such hosts.
  bool Intercepts(absl::string_view host) const;

 private:
  std::vector<SecretSpec> secrets_;
  std::vector<vocab::HttpRule> rules_;
};

// The mask Redactor puts in place of a value of `len` bytes.
std::string RedactionMask(size_t len);

}  // namespace lazaret::egressd

#endif  // LAZARET_SERVICES_EGRESSD_GUARD_H_
