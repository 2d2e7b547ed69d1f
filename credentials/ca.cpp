// The personal test CA: key, self-signed certificate, issued certificates, hash links, CRL.
#include "credentials/ca.h"

#include <arpa/inet.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "common/files.h"
#include "common/strings.h"
#include "credentials/ssl_util.h"

namespace kite::credentials {

using detail::FailSsl;

namespace {

constexpr const char* kCaCert = "cacert.pem";
constexpr const char* kCaKey = "private/cakey.pem";
constexpr const char* kRevoked = "revoked.txt";

Result<detail::NamePtr> BuildName(std::string_view dn) {
  auto rdns = ParseDistinguishedName(dn);
  if (!rdns) return Fail(rdns.error());
  detail::NamePtr name(X509_NAME_new());
  for (const auto& r : *rdns) {
    if (X509_NAME_add_entry_by_txt(name.get(), r.type.c_str(), MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>(r.value.c_str()), -1, -1,
                                   0) != 1) {
      return FailSsl(ErrorCode::kInvalidInput, "name attribute " + r.type + "=" + r.value);
    }
  }
  return name;
}

Status AddExt(X509* x, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, x, nullptr, nullptr, 0);
  detail::ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext || X509_add_ext(x, ext.get(), -1) != 1) {
    return FailSsl(ErrorCode::kInternal, std::string("extension ") + OBJ_nid2sn(nid));
  }
  return {};
}

void SetRandomSerial(X509* x) {
  uint64_t v = 0;
  RAND_bytes(reinterpret_cast<unsigned char*>(&v), sizeof v);
  ASN1_INTEGER_set_uint64(X509_get_serialNumber(x), (v & 0x7fffffffffffffffULL) | 1);
}

std::string HashName(const Certificate& cert) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08lx",
                X509_NAME_hash_ex(X509_get_subject_name(cert.get()), nullptr, nullptr, nullptr));
  return buf;
}

bool IsIpAddress(std::string_view s) {
  if (s.find('\0') != std::string_view::npos) return false;  // inet_pton would stop at it
  unsigned char buf[16];
  std::string z(s);
  return inet_pton(AF_INET, z.c_str(), buf) == 1 || inet_pton(AF_INET6, z.c_str(), buf) == 1;
}

std::string SigningPolicy(const std::string& ca_subject, const std::string& base) {
  return "# Globus signing policy written by `kite ca init`.\n"
         "access_id_CA      X509         '" +
         ca_subject +
         "'\n"
         "pos_rights        globus        CA:sign\n"
         "cond_subjects     globus       '\"" +
         base + "/*\"'\n";
}

}  // namespace

std::string TestCa::trusted_dir() const {
  return JoinPath(dir_, "certificates");
}

std::string TestCa::base_subject() const {
  std::string s = cert_.Subject();
  auto pos = s.rfind("/CN=");
  return pos == std::string::npos || pos == 0 ? s : s.substr(0, pos);
}

Result<TestCa> TestCa::Init(const std::string& dir, const CaOptions& options) {
  if (FileExists(JoinPath(dir, kCaCert))) {
    return Fail(ErrorCode::kAlreadyExists, "a CA already exists in " + dir);
  }
  if (auto st = MakeDirs(JoinPath(dir, "private"), 0700); !st) return Fail(st.error());
  if (auto st = MakeDirs(JoinPath(dir, "certificates"), 0755); !st) return Fail(st.error());
  auto key = PrivateKey::Generate(options.key);
  if (!key) return Fail(key.error());
  auto name = BuildName(options.subject);
  if (!name) return Fail(name.error());
  Certificate cert(X509_new());
  X509* x = cert.get();
  X509_set_version(x, 2);
  SetRandomSerial(x);
  X509_set_subject_name(x, name->get());
  X509_set_issuer_name(x, name->get());
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), static_cast<long>(options.lifetime.count()) * 3600);
  X509_set_pubkey(x, key->get());
  for (auto [nid, val] : {std::pair{NID_basic_constraints, "critical,CA:TRUE"},
                          {NID_key_usage, "critical,keyCertSign,cRLSign"},
                          {NID_subject_key_identifier, "hash"}}) {
    if (auto st = AddExt(x, x, nid, val); !st) return Fail(st.error());
  }
  if (X509_sign(x, key->get(), EVP_sha256()) <= 0) return FailSsl(ErrorCode::kInternal, "sign CA");
  TestCa ca;
  ca.dir_ = dir;
  ca.cert_ = std::move(cert);
  ca.key_ = std::move(*key);
  if (auto st = WriteFileAtomic(JoinPath(dir, kCaKey), ca.key_.ToPem(), 0600); !st) {
    return Fail(st.error());
  }
  std::string pem = ca.cert_.ToPem();
  std::string hash = HashName(ca.cert_);
  std::string tdir = ca.trusted_dir();
  for (auto [path, text] : {std::pair{JoinPath(dir, kCaCert), pem},
                            {JoinPath(tdir, hash + ".0"), pem},
                            {JoinPath(tdir, hash + ".signing_policy"),
                             SigningPolicy(ca.cert_.Subject(), ca.base_subject())}}) {
    if (auto st = WriteFileAtomic(path, text, 0644); !st) return Fail(st.error());
  }
  if (auto st = ca.WriteCrl(); !st) return Fail(st.error());
  return ca;
}

Result<TestCa> TestCa::Open(const std::string& dir) {
  auto cert_text = ReadFile(JoinPath(dir, kCaCert));
  if (!cert_text) {
    return Fail(ErrorCode::kNotFound, "no CA in " + dir + " (run `kite ca init` first)");
  }
  auto cert = Certificate::FromPem(*cert_text);
  if (!cert) return Fail(cert.error().Wrap(JoinPath(dir, kCaCert)));
  std::string key_path = JoinPath(dir, kCaKey);
  if (auto st = CheckPrivateFile(key_path); !st) return Fail(st.error());
  auto key_text = ReadFile(key_path);
  if (!key_text) return Fail(key_text.error());
  auto key = PrivateKey::FromPem(*key_text);
  if (!key) return Fail(key.error().Wrap(key_path));
  if (!key->Matches(*cert)) {
    return Fail(ErrorCode::kInvalidInput, key_path + " does not match the CA certificate");
  }
  TestCa ca;
  ca.dir_ = dir;
  ca.cert_ = std::move(*cert);
  ca.key_ = std::move(*key);
  return ca;
}

Result<std::string> TestCa::ResolveSubject(std::string_view dn) const {
  auto rdns = ParseDistinguishedName(dn);
  if (!rdns) return Fail(rdns.error());
  std::string base = base_subject();
  if (Trim(dn).starts_with('/')) {
    std::string full = FormatDistinguishedName(*rdns);
    if (!full.starts_with(base + "/")) {
      return Fail(ErrorCode::kInvalidInput,
                  "subject " + full + " is outside this CA's namespace " + base + "/...");
    }
    return full;
  }
  return base + FormatDistinguishedName(*rdns);
}

Result<Credential> TestCa::Issue(std::string_view subject, bool host, std::string_view host_name,
                                 const IssueOptions& o) {
  auto key = PrivateKey::Generate(o.key);
  if (!key) return Fail(key.error());
  auto name = BuildName(subject);
  if (!name) return Fail(name.error());
  Certificate cert(X509_new());
  X509* x = cert.get();
  X509_set_version(x, 2);
  SetRandomSerial(x);
  X509_set_subject_name(x, name->get());
  X509_set_issuer_name(x, X509_get_subject_name(cert_.get()));
  auto now = Clock::now();
  auto nb = o.not_before.value_or(now - std::chrono::minutes(5));
  auto na = o.not_after.value_or(now + o.lifetime);
  ASN1_TIME_set(X509_getm_notBefore(x), Clock::to_time_t(nb));
  ASN1_TIME_set(X509_getm_notAfter(x), Clock::to_time_t(na));
  X509_set_pubkey(x, key->get());
  bool rsa = o.key.algorithm == KeyAlgorithm::kRsa;
  std::vector<std::pair<int, std::string>> exts = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, rsa ? "critical,digitalSignature,keyEncipherment,dataEncipherment"
                          : "critical,digitalSignature,keyAgreement"},
      {NID_subject_key_identifier, "hash"},
      {NID_authority_key_identifier, "keyid"}};
  if (host) {
    std::string h(host_name);
    std::string san = IsIpAddress(h) ? "IP:" + h : "DNS:" + h;
    if (h == "localhost") san += ",IP:127.0.0.1";
    exts.push_back({NID_subject_alt_name, san});
    exts.push_back({NID_ext_key_usage, "serverAuth,clientAuth"});
  }
  for (const auto& [nid, val] : exts) {
    if (auto st = AddExt(x, cert_.get(), nid, val); !st) return Fail(st.error());
  }
  if (X509_sign(x, key_.get(), EVP_sha256()) <= 0) {
    return FailSsl(ErrorCode::kInternal, "signing certificate");
  }
  return Credential{{std::move(cert)}, std::move(*key)};
}

Result<Credential> TestCa::IssueUserCredential(std::string_view dn, const IssueOptions& options) {
  auto subject = ResolveSubject(dn);
  if (!subject) return Fail(subject.error());
  return Issue(*subject, false, "", options);
}

Result<Credential> TestCa::IssueHostCredential(std::string_view name, const IssueOptions& options) {
  std::string n(Trim(name));
  if (n.empty() || n.find_first_of("/ ,=") != std::string::npos) {
    return Fail(ErrorCode::kInvalidInput, "'" + n + "' is not a host name");
  }
  return Issue(base_subject() + "/CN=host/" + n, true, n, options);
}

namespace {

Result<IssuedFiles> WritePair(const Credential& cred, const std::string& out_dir,
                              const std::string& prefix, const IssueOptions& o) {
  IssuedFiles f{JoinPath(out_dir, prefix + "cert.pem"), JoinPath(out_dir, prefix + "key.pem"),
                cred.leaf().Subject()};
  if (!o.overwrite && (FileExists(f.cert_path) || FileExists(f.key_path))) {
    return Fail(ErrorCode::kAlreadyExists,
                f.cert_path + " or " + f.key_path + " exists (use --force to replace)");
  }
  if (auto st = MakeDirs(out_dir, 0700); !st) return Fail(st.error());
  std::string key_pem = cred.key.ToPem();
  if (!o.passphrase.empty()) {
    auto enc = cred.key.ToEncryptedPem(o.passphrase);
    if (!enc) return Fail(enc.error());
    key_pem = std::move(*enc);
  }
  if (auto st = WriteFileAtomic(f.key_path, key_pem, 0600); !st) return Fail(st.error());
  if (auto st = WriteFileAtomic(f.cert_path, cred.leaf().ToPem(), 0644); !st) {
    return Fail(st.error());
  }
  return f;
}

}  // namespace

Result<IssuedFiles> TestCa::IssueUser(std::string_view dn, const std::string& out_dir,
                                      const IssueOptions& options) {
  auto cred = IssueUserCredential(dn, options);
  if (!cred) return Fail(cred.error());
  return WritePair(*cred, out_dir, "user", options);
}

Result<IssuedFiles> TestCa::IssueHost(std::string_view name, const std::string& out_dir,
                                      const IssueOptions& options) {
  auto cred = IssueHostCredential(name, options);
  if (!cred) return Fail(cred.error());
  return WritePair(*cred, out_dir, "host", options);
}

Status TestCa::Revoke(const Certificate& cert) {
  if (X509_check_issued(cert_.get(), cert.get()) != X509_V_OK) {
    return Fail(ErrorCode::kInvalidInput, cert.Subject() + " was not issued by this CA");
  }
  std::string path = JoinPath(dir_, kRevoked);
  std::string list = ReadFile(path).value_or("");
  list += cert.SerialHex() + "\n";
  if (auto st = WriteFileAtomic(path, list, 0644); !st) return st;
  return WriteCrl();
}

Status TestCa::WriteCrl() {
  detail::CrlPtr crl(X509_CRL_new());
  X509_CRL_set_version(crl.get(), 1);
  X509_CRL_set_issuer_name(crl.get(), X509_get_subject_name(cert_.get()));
  // Backdated like the CA itself, so verifying at a slightly earlier time still finds it valid.
  ASN1_TIME* now = X509_gmtime_adj(nullptr, -3600);
  ASN1_TIME* next = X509_gmtime_adj(nullptr, 30L * 24 * 3600);
  X509_CRL_set1_lastUpdate(crl.get(), now);
  X509_CRL_set1_nextUpdate(crl.get(), next);
  for (const auto& serial : Split(ReadFile(JoinPath(dir_, kRevoked)).value_or(""), '\n')) {
    BIGNUM* bn = nullptr;
    if (BN_hex2bn(&bn, serial.c_str()) == 0) continue;
    X509_REVOKED* r = X509_REVOKED_new();
    ASN1_INTEGER* ai = BN_to_ASN1_INTEGER(bn, nullptr);
    X509_REVOKED_set_serialNumber(r, ai);
    X509_REVOKED_set_revocationDate(r, now);
    X509_CRL_add0_revoked(crl.get(), r);
    ASN1_INTEGER_free(ai);
    BN_free(bn);
  }
  ASN1_TIME_free(now);
  ASN1_TIME_free(next);
  X509_CRL_sort(crl.get());
  if (X509_CRL_sign(crl.get(), key_.get(), EVP_sha256()) <= 0) {
    return FailSsl(ErrorCode::kInternal, "signing CRL");
  }
  auto bio = detail::NewMemBio();
  PEM_write_bio_X509_CRL(bio.get(), crl.get());
  return WriteFileAtomic(JoinPath(trusted_dir(), HashName(cert_) + ".r0"),
                         detail::BioToString(bio.get()), 0644);
}

}  // namespace kite::credentials
