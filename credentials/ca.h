// A personal test certificate authority: the CA Kite's tests and the embedded default use.
//
// Directory layout (`kite ca init` puts it in $KITE_HOME/ca):
//   cacert.pem               the CA certificate
//   private/cakey.pem        its key (0600, in a 0700 directory)
//   certificates/            a trusted-CA directory like /etc/grid-security/certificates:
//     <hash>.0               the CA certificate under its OpenSSL subject hash
//     <hash>.signing_policy  the Globus signing policy (subjects this CA may sign)
//     <hash>.r0              the CA's CRL (empty until something is revoked)
//   revoked.txt              serial numbers (hex) of revoked certificates, one per line
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/error.h"
#include "credentials/certificate.h"

namespace kite::credentials {

struct CaOptions {
  std::string subject = "/O=Grid/OU=Kite/CN=Kite Test CA";
  KeySpec key{KeyAlgorithm::kRsa, 2048};  // RSA: what every Globus tool and peer accepts
  std::chrono::hours lifetime{24 * 365 * 5};
};

struct IssueOptions {
  KeySpec key{KeyAlgorithm::kRsa, 2048};
  std::chrono::hours lifetime{24 * 365};
  // Override the validity window (tests make expired and not-yet-valid certificates).
  std::optional<Clock::time_point> not_before, not_after;
  // When set, the key file is encrypted under it (as grid-cert-request does).
  std::string passphrase;
  bool overwrite = false;  // replace existing files in the output directory
};

// Paths written by IssueUser/IssueHost.
struct IssuedFiles {
  std::string cert_path;
  std::string key_path;
  std::string subject;
};

class TestCa {
 public:
  // Creates a new CA in `dir`; fails with kAlreadyExists when one is there.
  static Result<TestCa> Init(const std::string& dir, const CaOptions& options = {});
  static Result<TestCa> Open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const Certificate& certificate() const { return cert_; }
  // The trusted-CA directory to point X509_CERT_DIR / VerifierOptions::ca_dir at.
  std::string trusted_dir() const;
  // The CA subject without its last CN: issued names live below it ("/O=Grid/OU=Kite").
  std::string base_subject() const;

  // A user certificate for `dn`: relative ("CN=Jane Doe", "OU=Lab/CN=Jane") is put under
  // base_subject(); an absolute Globus-form DN must lie under it (the signing policy says so).
  Result<Credential> IssueUserCredential(std::string_view dn, const IssueOptions& options = {});
  // A host certificate "<base>/CN=host/<name>" with subjectAltName DNS:<name> (and
  // IP:127.0.0.1 for localhost, IP:<name> when name is an address).
  Result<Credential> IssueHostCredential(std::string_view name, const IssueOptions& options = {});
  // The same, written as usercert.pem/userkey.pem or hostcert.pem/hostkey.pem in `out_dir`
  // (created 0700 when missing; key 0600, certificate 0644).
  Result<IssuedFiles> IssueUser(std::string_view dn, const std::string& out_dir,
                                const IssueOptions& options = {});
  Result<IssuedFiles> IssueHost(std::string_view name, const std::string& out_dir,
                                const IssueOptions& options = {});

  // Adds `cert` to the CRL and rewrites certificates/<hash>.r0.
  Status Revoke(const Certificate& cert);

 private:
  Result<Credential> Issue(std::string_view subject, bool host, std::string_view host_name,
                           const IssueOptions& options);
  Status WriteCrl();
  Result<std::string> ResolveSubject(std::string_view dn) const;

  std::string dir_;
  Certificate cert_;
  PrivateKey key_;
};

}  // namespace kite::credentials
