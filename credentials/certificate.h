// X.509 certificates, private keys and credentials (a chain plus its key): RAII wrappers, PEM I/O.
//
// A Credential is what Globus keeps in a proxy file: the leaf certificate, its private key and the
// rest of the chain up to (not including) the CA. The same type holds a user or host certificate
// with its key (a chain of one).
#pragma once

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace kite::credentials {

using Clock = std::chrono::system_clock;

// A shared, immutable reference to an X509 (copying bumps OpenSSL's reference count).
class Certificate {
 public:
  Certificate() = default;
  // Takes ownership of `x`.
  explicit Certificate(X509* x) : x_(x) {}
  Certificate(const Certificate& o);
  Certificate& operator=(const Certificate& o);
  Certificate(Certificate&& o) noexcept : x_(std::exchange(o.x_, nullptr)) {}
  Certificate& operator=(Certificate&& o) noexcept;
  ~Certificate();

  static Result<Certificate> FromPem(std::string_view pem);
  static Result<Certificate> FromDer(std::string_view der);

  X509* get() const { return x_; }
  explicit operator bool() const { return x_ != nullptr; }

  std::string ToPem() const;
  std::string ToDer() const;
  // Names in the Globus one-line form: "/C=US/O=Grid/CN=Jane Doe".
  std::string Subject() const;
  std::string Issuer() const;
  Clock::time_point NotBefore() const;
  Clock::time_point NotAfter() const;
  std::string SerialHex() const;
  // True when the certificate carries an RFC 3820 proxyCertInfo extension.
  bool IsProxy() const;
  // Public key size in bits and algorithm ("RSA", "EC").
  int KeyBits() const;
  std::string KeyAlgorithm() const;

 private:
  X509* x_ = nullptr;
};

// Leaf first, then each issuer in turn.
using CertChain = std::vector<Certificate>;

// Which kind of key to generate.
enum class KeyAlgorithm { kEcP256, kRsa };
struct KeySpec {
  KeyAlgorithm algorithm = KeyAlgorithm::kEcP256;  // P-256: ~1 ms to make; RSA-2048: ~0.35 s
  int rsa_bits = 2048;                             // used when algorithm == kRsa
};

// A shared reference to an EVP_PKEY holding a private key.
class PrivateKey {
 public:
  PrivateKey() = default;
  explicit PrivateKey(EVP_PKEY* k) : k_(k) {}  // takes ownership
  PrivateKey(const PrivateKey& o);
  PrivateKey& operator=(const PrivateKey& o);
  PrivateKey(PrivateKey&& o) noexcept : k_(std::exchange(o.k_, nullptr)) {}
  PrivateKey& operator=(PrivateKey&& o) noexcept;
  ~PrivateKey();

  static Result<PrivateKey> Generate(const KeySpec& spec);
  // `passphrase` is asked for only when the PEM is encrypted.
  using PassphraseSource = std::function<Result<std::string>()>;
  static Result<PrivateKey> FromPem(std::string_view pem, const PassphraseSource& passphrase = {});

  EVP_PKEY* get() const { return k_; }
  explicit operator bool() const { return k_ != nullptr; }

  // Unencrypted PEM: "RSA PRIVATE KEY" for RSA (as Globus writes), PKCS#8 for other keys.
  std::string ToPem() const;
  // PEM encrypted with AES-256-CBC under `passphrase`.
  Result<std::string> ToEncryptedPem(std::string_view passphrase) const;
  int Bits() const;
  bool Matches(const Certificate& cert) const;

 private:
  EVP_PKEY* k_ = nullptr;
};

struct Credential {
  CertChain chain;  // chain[0] is the certificate `key` belongs to
  PrivateKey key;

  const Certificate& leaf() const { return chain.front(); }
};

// Every certificate in `pem`, in order. Fails on malformed PEM or when there is none.
Result<CertChain> ParseChainPem(std::string_view pem);
std::string ChainToPem(const CertChain& chain);

// A proxy file's text: the first certificate, a private key, then the rest of the chain (any order
// of blocks is accepted as long as the first certificate is the key's). Checks that the key
// matches the first certificate.
Result<Credential> ParseCredentialPem(std::string_view pem,
                                      const PrivateKey::PassphraseSource& passphrase = {});
// The Globus proxy-file layout: leaf certificate, unencrypted key, rest of the chain.
std::string CredentialToPem(const Credential& cred);

// Reads a proxy file; refuses it (kPermission) when group or others may read it.
Result<Credential> LoadProxyFile(const std::string& path);
// Writes `cred` to `path` with mode 0600, atomically: a re-delegated credential replaces the old
// one in place and a reader never sees half a file.
Status SaveProxyFile(const std::string& path, const Credential& cred);

// Loads a certificate file (its chain) and a key file, as grid-proxy-init does: the key file must
// be private to its owner, the passphrase is asked for only when the key is encrypted, and the
// key must belong to the certificate.
Result<Credential> LoadCertificateAndKey(const std::string& cert_path, const std::string& key_path,
                                         const PrivateKey::PassphraseSource& passphrase = {});

// One attribute of a distinguished name, e.g. {"CN", "Jane Doe"}.
struct Rdn {
  std::string type;
  std::string value;
};
// Parses "/C=US/O=Grid/CN=x" (Globus form) or "C=US, O=Grid, CN=x" (the order `openssl x509
// -subject` prints), root-most attribute first either way. Unknown attribute types, empty values
// and text without '=' fail with kInvalidInput.
Result<std::vector<Rdn>> ParseDistinguishedName(std::string_view dn);
std::string FormatDistinguishedName(const std::vector<Rdn>& rdns);  // Globus form
// The Globus form of an OpenSSL name.
std::string NameToString(const X509_NAME* name);

}  // namespace kite::credentials
