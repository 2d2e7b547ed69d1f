// Verifying a certificate chain (user, host or RFC 3820 proxy) against a trusted-CA directory.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/error.h"
#include "credentials/certificate.h"
#include "credentials/proxy.h"

typedef struct x509_store_st X509_STORE;

namespace kite::credentials {

// Who a verified chain speaks for.
struct Identity {
  std::string subject;       // end entity's subject, Globus form: what grid-mapfiles hold
  std::string leaf_subject;  // the presented certificate's own subject
  std::string ca;            // subject of the trust anchor
  ProxyType type = ProxyType::kEndEntity;  // of the leaf
  bool limited = false;                    // some proxy in the chain is limited
  int proxy_depth = 0;                     // number of proxy certificates above the end entity
  Clock::time_point not_after;  // earliest notAfter of the chain: when the identity lapses
};

struct VerifierOptions {
  // A directory in the /etc/grid-security/certificates layout: "<hash>.0" CA certificates and
  // optional "<hash>.r0" CRLs. Read lazily by OpenSSL's hash-dir lookup.
  std::string ca_dir;
  // Check certificates against CRLs found in ca_dir; a CA without a CRL is accepted (as Globus).
  bool check_crls = true;
  // Refuse limited proxies (a gatekeeper refuses them for job submission).
  bool reject_limited = false;
};

// Built once, shared by threads: Verify is const and thread-safe (OpenSSL's X509_STORE locks its
// own caches; each call has its own X509_STORE_CTX).
class Verifier {
 public:
  static Result<std::shared_ptr<const Verifier>> Create(const VerifierOptions& options);
  ~Verifier();
  Verifier(const Verifier&) = delete;
  Verifier& operator=(const Verifier&) = delete;

  // Verifies `chain` (leaf first; the CA certificate may be omitted) at the current time, or at
  // `at`, with OpenSSL's chain and proxy rules plus RFC 3820's: each proxy's subject is its
  // issuer's plus one CN, proxy path lengths, no proxy outliving its issuer, no proxy that may
  // sign certificates, limited proxies signing only limited ones. Errors: kProxyExpired (outside
  // a validity window), kAuthFailed (untrusted, tampered, revoked, rule broken), kInvalidInput.
  Result<Identity> Verify(const CertChain& chain,
                          std::optional<Clock::time_point> at = std::nullopt) const;

  const VerifierOptions& options() const { return options_; }
  // The underlying store (for TLS contexts); owned by the Verifier.
  X509_STORE* store() const { return store_; }

 private:
  Verifier() = default;
  VerifierOptions options_;
  X509_STORE* store_ = nullptr;
};

// The trusted-CA directory Globus tools would use: $X509_CERT_DIR, ~/.globus/certificates,
// /etc/grid-security/certificates, then Kite's own test CA ($KITE_HOME/ca/certificates); the first
// that exists, or "" when none does.
std::string DefaultCaDir();

}  // namespace kite::credentials
