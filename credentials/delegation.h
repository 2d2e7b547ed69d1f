// Delegation by certificate request: keys never travel (docs/architecture.md, "Keys never travel").
//
//   receiver                                  delegator
//   DelegationRequest::Create() -> csr_pem ──►  SignDelegation(csr_pem, my proxy, options)
//   request.Complete(chain_pem)  ◄──────────── new proxy cert + delegator's chain (PEM)
//   SaveProxyFile(path, credential)            (the receiver's key never left its process)
#pragma once

#include <string>
#include <string_view>

#include "common/error.h"
#include "credentials/certificate.h"
#include "credentials/proxy.h"

namespace kite::credentials {

// The receiver's half: a fresh key pair and a PKCS#10 request for it. Move-only in spirit (the key
// is the secret); copies share the same key.
class DelegationRequest {
 public:
  static Result<DelegationRequest> Create(const KeySpec& key = {});

  const std::string& csr_pem() const { return csr_pem_; }
  std::string csr_der() const;  // the same request in DER (what MyProxy sends)

  // Takes the delegator's answer (new certificate first, then its chain) and returns the
  // credential with the held key. Fails when the certificate is not for this request's key.
  Result<Credential> Complete(std::string_view chain_pem) const;
  Result<Credential> Complete(CertChain chain) const;

 private:
  PrivateKey key_;
  std::string csr_pem_;
};

// The delegator's half: checks the request (signature proves possession of the key; RSA of at
// least 2048 bits or EC on P-256/P-384/P-521; no MD5-era signature) and signs a proxy for its key
// with `delegator` (never longer-lived than `delegator`, limited when asked or when `delegator`
// is limited). Returns the new chain as PEM, new certificate first.
Result<std::string> SignDelegation(std::string_view csr_pem, const Credential& delegator,
                                   const ProxyOptions& options);
// The same for a DER request, returning the chain (used by the MyProxy client).
Result<CertChain> SignDelegationDer(std::string_view csr_der, const Credential& delegator,
                                    const ProxyOptions& options);

}  // namespace kite::credentials
