// Certificates, keys, credentials and their PEM forms.
#include "credentials/certificate.h"

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <cstring>

#include "common/files.h"
#include "common/strings.h"
#include "credentials/ssl_util.h"

namespace kite::credentials {

using detail::BioPtr;
using detail::FailSsl;

// ---- Certificate ----

Certificate::Certificate(const Certificate& o) : x_(o.x_) {
  if (x_) X509_up_ref(x_);
}

Certificate& Certificate::operator=(const Certificate& o) {
  if (this != &o) {
    if (o.x_) X509_up_ref(o.x_);
    X509_free(x_);
    x_ = o.x_;
  }
  return *this;
}

Certificate& Certificate::operator=(Certificate&& o) noexcept {
  if (this != &o) {
    X509_free(x_);
    x_ = std::exchange(o.x_, nullptr);
  }
  return *this;
}

Certificate::~Certificate() {
  X509_free(x_);
}

Result<Certificate> Certificate::FromPem(std::string_view pem) {
  auto chain = ParseChainPem(pem);
  if (!chain) return Fail(chain.error());
  return chain->front();
}

Result<Certificate> Certificate::FromDer(std::string_view der) {
  auto* p = reinterpret_cast<const unsigned char*>(der.data());
  X509* x = d2i_X509(nullptr, &p, static_cast<long>(der.size()));
  if (x == nullptr) return FailSsl(ErrorCode::kInvalidInput, "malformed DER certificate");
  if (p != reinterpret_cast<const unsigned char*>(der.data()) + der.size()) {
    X509_free(x);
    return Fail(ErrorCode::kInvalidInput, "trailing bytes after DER certificate");
  }
  return Certificate(x);
}

std::string Certificate::ToPem() const {
  auto bio = detail::NewMemBio();
  PEM_write_bio_X509(bio.get(), x_);
  return detail::BioToString(bio.get());
}

std::string Certificate::ToDer() const {
  unsigned char* buf = nullptr;
  int n = i2d_X509(x_, &buf);
  if (n <= 0) return {};
  std::string out(reinterpret_cast<char*>(buf), static_cast<size_t>(n));
  OPENSSL_free(buf);
  return out;
}

std::string Certificate::Subject() const {
  return NameToString(X509_get_subject_name(x_));
}
std::string Certificate::Issuer() const {
  return NameToString(X509_get_issuer_name(x_));
}
Clock::time_point Certificate::NotBefore() const {
  return detail::AsnTimeToClock(X509_get0_notBefore(x_));
}
Clock::time_point Certificate::NotAfter() const {
  return detail::AsnTimeToClock(X509_get0_notAfter(x_));
}

std::string Certificate::SerialHex() const {
  BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x_), nullptr);
  char* hex = BN_bn2hex(bn);
  std::string out = hex ? hex : "";
  OPENSSL_free(hex);
  BN_free(bn);
  return out;
}

bool Certificate::IsProxy() const {
  return X509_get_ext_by_NID(x_, NID_proxyCertInfo, -1) >= 0;
}

int Certificate::KeyBits() const {
  EVP_PKEY* k = X509_get0_pubkey(x_);
  return k ? EVP_PKEY_get_bits(k) : 0;
}

std::string Certificate::KeyAlgorithm() const {
  EVP_PKEY* k = X509_get0_pubkey(x_);
  if (k == nullptr) return "none";
  switch (EVP_PKEY_get_base_id(k)) {
    case EVP_PKEY_RSA:
      return "RSA";
    case EVP_PKEY_EC:
      return "EC";
    case EVP_PKEY_ED25519:
      return "Ed25519";
    default:
      return "other";
  }
}

// ---- PrivateKey ----

PrivateKey::PrivateKey(const PrivateKey& o) : k_(o.k_) {
  if (k_) EVP_PKEY_up_ref(k_);
}

PrivateKey& PrivateKey::operator=(const PrivateKey& o) {
  if (this != &o) {
    if (o.k_) EVP_PKEY_up_ref(o.k_);
    EVP_PKEY_free(k_);
    k_ = o.k_;
  }
  return *this;
}

PrivateKey& PrivateKey::operator=(PrivateKey&& o) noexcept {
  if (this != &o) {
    EVP_PKEY_free(k_);
    k_ = std::exchange(o.k_, nullptr);
  }
  return *this;
}

PrivateKey::~PrivateKey() {
  EVP_PKEY_free(k_);
}

Result<PrivateKey> PrivateKey::Generate(const KeySpec& spec) {
  EVP_PKEY* k = nullptr;
  if (spec.algorithm == KeyAlgorithm::kEcP256) {
    k = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  } else {
    if (spec.rsa_bits < 2048 || spec.rsa_bits > 16384) {
      return Fail(ErrorCode::kInvalidInput,
                  "RSA key size " + std::to_string(spec.rsa_bits) + " is outside 2048..16384 bits");
    }
    k = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(spec.rsa_bits));
  }
  if (k == nullptr) return FailSsl(ErrorCode::kInternal, "key generation failed");
  return PrivateKey(k);
}

namespace {

struct PassCtx {
  const PrivateKey::PassphraseSource* source;
  bool asked = false;
  Error error{ErrorCode::kOk, ""};
};

int PassCallback(char* buf, int size, int /*rwflag*/, void* u) {
  auto* ctx = static_cast<PassCtx*>(u);
  ctx->asked = true;
  if (ctx->source == nullptr || !*ctx->source) {
    ctx->error =
        Error(ErrorCode::kPermission, "the private key is encrypted; a passphrase is needed");
    return -1;
  }
  auto pw = (*ctx->source)();
  if (!pw) {
    ctx->error = pw.error();
    return -1;
  }
  if (pw->size() > static_cast<size_t>(size)) {
    ctx->error = Error(ErrorCode::kInvalidInput, "passphrase too long");
    return -1;
  }
  std::memcpy(buf, pw->data(), pw->size());
  OPENSSL_cleanse(pw->data(), pw->size());
  return static_cast<int>(pw->size());
}

}  // namespace

Result<PrivateKey> PrivateKey::FromPem(std::string_view pem, const PassphraseSource& passphrase) {
  auto bio = detail::MemBio(pem);
  PassCtx ctx{&passphrase};
  EVP_PKEY* k = PEM_read_bio_PrivateKey(bio.get(), nullptr, PassCallback, &ctx);
  if (k == nullptr) {
    if (ctx.error.code() != ErrorCode::kOk) {
      ERR_clear_error();
      return Fail(ctx.error);
    }
    if (ctx.asked) {
      ERR_clear_error();
      return Fail(ErrorCode::kAuthFailed, "wrong passphrase for the private key");
    }
    return FailSsl(ErrorCode::kInvalidInput, "malformed private key PEM");
  }
  return PrivateKey(k);
}

std::string PrivateKey::ToPem() const {
  auto bio = detail::NewMemBio();
  // Globus reads "RSA PRIVATE KEY" and PKCS#8 "PRIVATE KEY" blocks but not "EC PRIVATE KEY".
  if (EVP_PKEY_get_base_id(k_) == EVP_PKEY_RSA) {
    PEM_write_bio_PrivateKey_traditional(bio.get(), k_, nullptr, nullptr, 0, nullptr, nullptr);
  } else {
    PEM_write_bio_PrivateKey(bio.get(), k_, nullptr, nullptr, 0, nullptr, nullptr);
  }
  return detail::BioToString(bio.get());
}

Result<std::string> PrivateKey::ToEncryptedPem(std::string_view passphrase) const {
  if (passphrase.size() < 4) {
    return Fail(ErrorCode::kInvalidInput, "passphrase must be at least 4 characters");
  }
  auto bio = detail::NewMemBio();
  std::string pw(passphrase);
  int ok = PEM_write_bio_PrivateKey_traditional(bio.get(), k_, EVP_aes_256_cbc(),
                                                reinterpret_cast<unsigned char*>(pw.data()),
                                                static_cast<int>(pw.size()), nullptr, nullptr);
  OPENSSL_cleanse(pw.data(), pw.size());
  if (ok != 1) return FailSsl(ErrorCode::kInternal, "encrypting private key");
  return detail::BioToString(bio.get());
}

int PrivateKey::Bits() const {
  return k_ ? EVP_PKEY_get_bits(k_) : 0;
}

bool PrivateKey::Matches(const Certificate& cert) const {
  if (!k_ || !cert) return false;
  EVP_PKEY* pub = X509_get0_pubkey(cert.get());
  return pub != nullptr && EVP_PKEY_eq(k_, pub) == 1;
}

// ---- chains and credentials ----

namespace {

constexpr std::string_view kBegin = "-----BEGIN ";

// Splits PEM text into its blocks ("-----BEGIN X-----" ... "-----END X-----"), keeping order.
struct PemBlock {
  std::string label;
  std::string_view text;
};

Result<std::vector<PemBlock>> SplitPem(std::string_view pem) {
  std::vector<PemBlock> out;
  size_t pos = 0;
  while ((pos = pem.find(kBegin, pos)) != std::string_view::npos) {
    size_t label_end = pem.find("-----", pos + kBegin.size());
    if (label_end == std::string_view::npos) break;
    std::string label(pem.substr(pos + kBegin.size(), label_end - pos - kBegin.size()));
    std::string end_marker = "-----END " + label + "-----";
    size_t end = pem.find(end_marker, label_end);
    if (end == std::string_view::npos) {
      return Fail(ErrorCode::kInvalidInput, "malformed PEM: '" + label + "' block has no END line");
    }
    end += end_marker.size();
    out.push_back({label, pem.substr(pos, end - pos)});
    pos = end;
  }
  return out;
}

Result<Certificate> ParseOneCertificate(std::string_view block, size_t index) {
  auto bio = detail::MemBio(block);
  X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
  if (x == nullptr) {
    return FailSsl(ErrorCode::kInvalidInput,
                   "malformed PEM certificate #" + std::to_string(index + 1));
  }
  return Certificate(x);
}

}  // namespace

Result<CertChain> ParseChainPem(std::string_view pem) {
  auto blocks = SplitPem(pem);
  if (!blocks) return Fail(blocks.error());
  CertChain chain;
  for (const auto& b : *blocks) {
    if (b.label != "CERTIFICATE") continue;
    auto c = ParseOneCertificate(b.text, chain.size());
    if (!c) return Fail(c.error());
    chain.push_back(std::move(*c));
  }
  if (chain.empty()) return Fail(ErrorCode::kInvalidInput, "no PEM certificate found");
  return chain;
}

std::string ChainToPem(const CertChain& chain) {
  std::string out;
  for (const auto& c : chain) out += c.ToPem();
  return out;
}

Result<Credential> ParseCredentialPem(std::string_view pem,
                                      const PrivateKey::PassphraseSource& passphrase) {
  auto blocks = SplitPem(pem);
  if (!blocks) return Fail(blocks.error());
  Credential cred;
  for (const auto& b : *blocks) {
    if (b.label == "CERTIFICATE") {
      auto c = ParseOneCertificate(b.text, cred.chain.size());
      if (!c) return Fail(c.error());
      cred.chain.push_back(std::move(*c));
    } else if (b.label.find("PRIVATE KEY") != std::string::npos) {
      if (cred.key) return Fail(ErrorCode::kInvalidInput, "more than one private key in the file");
      auto k = PrivateKey::FromPem(b.text, passphrase);
      if (!k) return Fail(k.error());
      cred.key = std::move(*k);
    }
  }
  if (cred.chain.empty()) return Fail(ErrorCode::kInvalidInput, "no PEM certificate found");
  if (!cred.key) return Fail(ErrorCode::kInvalidInput, "no private key found");
  if (!cred.key.Matches(cred.leaf())) {
    return Fail(ErrorCode::kInvalidInput,
                "the private key does not match the certificate " + cred.leaf().Subject());
  }
  return cred;
}

std::string CredentialToPem(const Credential& cred) {
  std::string out = cred.leaf().ToPem();
  out += cred.key.ToPem();
  for (size_t i = 1; i < cred.chain.size(); ++i) out += cred.chain[i].ToPem();
  return out;
}

Result<Credential> LoadProxyFile(const std::string& path) {
  if (!FileExists(path)) return Fail(ErrorCode::kNotFound, "no proxy at " + path);
  if (auto st = CheckPrivateFile(path); !st) return Fail(st.error());
  auto text = ReadFile(path);
  if (!text) return Fail(text.error());
  auto cred = ParseCredentialPem(*text);
  if (!cred) return Fail(cred.error().Wrap(path));
  return cred;
}

Status SaveProxyFile(const std::string& path, const Credential& cred) {
  std::string pem = CredentialToPem(cred);
  auto st = WriteFileAtomic(path, pem, 0600);
  OPENSSL_cleanse(pem.data(), pem.size());
  return st;
}

Result<Credential> LoadCertificateAndKey(const std::string& cert_path, const std::string& key_path,
                                         const PrivateKey::PassphraseSource& passphrase) {
  auto cert_text = ReadFile(cert_path);
  if (!cert_text) return Fail(cert_text.error());
  auto chain = ParseChainPem(*cert_text);
  if (!chain) return Fail(chain.error().Wrap(cert_path));
  if (auto st = CheckPrivateFile(key_path); !st) return Fail(st.error());
  auto key_text = ReadFile(key_path);
  if (!key_text) return Fail(key_text.error());
  auto key = PrivateKey::FromPem(*key_text, passphrase);
  OPENSSL_cleanse(key_text->data(), key_text->size());
  if (!key) return Fail(key.error().Wrap(key_path));
  if (!key->Matches(chain->front())) {
    return Fail(ErrorCode::kInvalidInput,
                "the key in " + key_path + " does not match the certificate in " + cert_path);
  }
  return Credential{std::move(*chain), std::move(*key)};
}

// ---- distinguished names ----

std::string NameToString(const X509_NAME* name) {
  std::string out;
  for (int i = 0; i < X509_NAME_entry_count(name); ++i) {
    const X509_NAME_ENTRY* e = X509_NAME_get_entry(name, i);
    const ASN1_OBJECT* obj = X509_NAME_ENTRY_get_object(e);
    int nid = OBJ_obj2nid(obj);
    char type[80];
    if (nid != NID_undef) {
      std::snprintf(type, sizeof type, "%s", OBJ_nid2sn(nid));
    } else {
      OBJ_obj2txt(type, sizeof type, obj, 1);
    }
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(e));
    out += '/';
    out += type;
    out += '=';
    if (n > 0) out.append(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
    OPENSSL_free(utf8);
  }
  return out;
}

namespace {

Status AddRdn(std::vector<Rdn>& out, std::string_view piece) {
  piece = Trim(piece);
  if (piece.empty()) return {};
  size_t eq = piece.find('=');
  if (eq == std::string_view::npos) {
    return Fail(ErrorCode::kInvalidInput, "'" + std::string(piece) + "' is not TYPE=VALUE");
  }
  std::string type(Trim(piece.substr(0, eq)));
  std::string value(Trim(piece.substr(eq + 1)));
  if (OBJ_txt2nid(type.c_str()) == NID_undef) {
    return Fail(ErrorCode::kInvalidInput, "unknown name attribute '" + type + "'");
  }
  if (value.empty()) return Fail(ErrorCode::kInvalidInput, "empty value for '" + type + "'");
  out.push_back({std::move(type), std::move(value)});
  return {};
}

}  // namespace

Result<std::vector<Rdn>> ParseDistinguishedName(std::string_view dn) {
  dn = Trim(dn);
  std::vector<Rdn> out;
  if (!dn.empty() && dn.front() == '/') {
    // Globus form: '/' separates attributes; a '/' inside a value must follow a value text that
    // has no '=' after it (e.g. "CN=host/example.org"), so split on "/TYPE=" boundaries only.
    size_t start = 1;
    while (start <= dn.size()) {
      size_t next = start;
      for (;;) {
        next = dn.find('/', next);
        if (next == std::string_view::npos) break;
        size_t eq = dn.find('=', next);
        size_t slash = dn.find('/', next + 1);
        if (eq != std::string_view::npos && (slash == std::string_view::npos || eq < slash)) break;
        ++next;
      }
      std::string_view piece =
          dn.substr(start, next == std::string_view::npos ? std::string_view::npos : next - start);
      if (auto st = AddRdn(out, piece); !st) return Fail(st.error());
      if (next == std::string_view::npos) break;
      start = next + 1;
    }
  } else {
    for (const auto& piece : Split(dn, ',')) {
      if (auto st = AddRdn(out, piece); !st) return Fail(st.error());
    }
  }
  if (out.empty()) return Fail(ErrorCode::kInvalidInput, "empty distinguished name");
  return out;
}

std::string FormatDistinguishedName(const std::vector<Rdn>& rdns) {
  std::string out;
  for (const auto& r : rdns) out += "/" + r.type + "=" + r.value;
  return out;
}

}  // namespace kite::credentials
