// RFC 3820 proxy certificates: making one from a credential, and describing one.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "common/error.h"
#include "credentials/certificate.h"

namespace kite::credentials {

// What a certificate is, as grid-proxy-info reports it.
enum class ProxyType {
  kEndEntity,      // not a proxy: a user or host certificate
  kImpersonation,  // RFC 3820, policy id-ppl-inheritAll
  kLimited,        // RFC 3820, Globus limited-proxy policy (may not start jobs at a gatekeeper)
  kIndependent,    // RFC 3820, policy id-ppl-independent (no rights of its issuer)
  kRestricted,     // RFC 3820 with a policy language Kite does not know
};
// "RFC 3820 compliant impersonation proxy", ... (the words grid-proxy-info uses), or "end entity".
std::string_view ProxyTypeName(ProxyType type);
ProxyType ProxyTypeOf(const Certificate& cert);
// -1 when the proxy sets no path-length limit (or the certificate is not a proxy).
int ProxyPathLength(const Certificate& cert);

struct ProxyOptions {
  // Requested validity. Clipped so the proxy never outlives its issuer (grid-proxy-init does the
  // same and warns); `ProxyResult::clipped` says when that happened.
  std::chrono::seconds lifetime = std::chrono::hours(12);
  bool limited = false;  // forced on when the issuer is itself limited (RFC 3820 §3.8 / Globus)
  KeySpec key;           // for CreateProxy; delegation uses the receiver's key
  int path_length = -1;  // proxies that may be signed below this one; -1 = no limit
  // notBefore is set this far in the past to absorb clock skew between hosts (as Globus does).
  std::chrono::seconds backdate = std::chrono::minutes(5);
};

struct ProxyResult {
  Credential credential;  // new proxy certificate + key, followed by the issuer's chain
  bool clipped = false;   // the lifetime was cut to the issuer's remaining lifetime
};

// Makes a new key and a proxy certificate for it signed by `issuer` (a user credential or a
// proxy). Fails when the issuer has expired or is not yet valid.
Result<ProxyResult> CreateProxy(const Credential& issuer, const ProxyOptions& options);

// Signs a proxy certificate for `public_key` (which the caller does not need the private half of):
// the building block of CreateProxy and of delegation. Returns the new chain (new cert first).
Result<CertChain> SignProxy(const Credential& issuer, EVP_PKEY* public_key,
                            const ProxyOptions& options, bool* clipped = nullptr);

// What `kite proxy info` shows about a credential.
struct ProxyInfo {
  std::string subject;   // the leaf's subject
  std::string issuer;    // the leaf's issuer
  std::string identity;  // the end entity's subject (the user)
  ProxyType type = ProxyType::kEndEntity;
  std::string key_algorithm;  // "RSA" / "EC"
  int bits = 0;
  int path_length = -1;
  Clock::time_point not_after;        // the earliest notAfter of the chain
  std::chrono::seconds time_left{0};  // 0 when expired
};
ProxyInfo DescribeCredential(const CertChain& chain, Clock::time_point now = Clock::now());
// The end entity (first non-proxy certificate) of a chain; the leaf when none is a proxy.
const Certificate& EndEntity(const CertChain& chain);

// "12:00" -> 12 h, "0:30" -> 30 min; also "90m", "2h", "3600s", "3600". kInvalidInput otherwise.
Result<std::chrono::seconds> ParseDuration(std::string_view text);
// 43200 s -> "12:00:00"
std::string FormatDuration(std::chrono::seconds s);

}  // namespace kite::credentials
