// RFC 3820 proxy certificates: signing, typing and describing them.
#include "credentials/proxy.h"

#include <openssl/err.h>
#include <openssl/rand.h>

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "credentials/ssl_util.h"

namespace kite::credentials {

using detail::FailSsl;
using detail::TimeText;

std::string_view ProxyTypeName(ProxyType type) {
  switch (type) {
    case ProxyType::kEndEntity:
      return "end entity credential";
    case ProxyType::kImpersonation:
      return "RFC 3820 compliant impersonation proxy";
    case ProxyType::kLimited:
      return "RFC 3820 compliant limited proxy";
    case ProxyType::kIndependent:
      return "RFC 3820 compliant independent proxy";
    case ProxyType::kRestricted:
      return "RFC 3820 compliant restricted proxy";
  }
  return "unknown";
}

namespace {

detail::ProxyInfoPtr GetProxyInfo(const Certificate& cert) {
  return detail::ProxyInfoPtr(static_cast<PROXY_CERT_INFO_EXTENSION*>(
      X509_get_ext_d2i(cert.get(), NID_proxyCertInfo, nullptr, nullptr)));
}

bool IsLimitedOid(const ASN1_OBJECT* obj) {
  char buf[64];
  OBJ_obj2txt(buf, sizeof buf, obj, 1);
  return std::string_view(buf) == detail::kOidGlobusLimited;
}

}  // namespace

ProxyType ProxyTypeOf(const Certificate& cert) {
  if (!cert.IsProxy()) return ProxyType::kEndEntity;
  auto pci = GetProxyInfo(cert);
  if (!pci || pci->proxyPolicy == nullptr) return ProxyType::kRestricted;
  const ASN1_OBJECT* lang = pci->proxyPolicy->policyLanguage;
  switch (OBJ_obj2nid(lang)) {
    case NID_id_ppl_inheritAll:
      return ProxyType::kImpersonation;
    case NID_Independent:
      return ProxyType::kIndependent;
    default:
      return IsLimitedOid(lang) ? ProxyType::kLimited : ProxyType::kRestricted;
  }
}

int ProxyPathLength(const Certificate& cert) {
  auto pci = GetProxyInfo(cert);
  if (!pci || pci->pcPathLengthConstraint == nullptr) return -1;
  long v = ASN1_INTEGER_get(pci->pcPathLengthConstraint);
  return v < 0 ? -1 : static_cast<int>(std::min<long>(v, 1 << 20));
}

const Certificate& EndEntity(const CertChain& chain) {
  for (const auto& c : chain) {
    if (!c.IsProxy()) return c;
  }
  return chain.front();
}

namespace {

Clock::time_point ChainNotAfter(const CertChain& chain) {
  Clock::time_point t = Clock::time_point::max();
  for (const auto& c : chain) t = std::min(t, c.NotAfter());
  return t;
}

// Random positive 63-bit serial; its decimal form becomes the proxy's CN, as Globus does.
uint64_t RandomSerial() {
  uint64_t v = 0;
  RAND_bytes(reinterpret_cast<unsigned char*>(&v), sizeof v);
  v &= 0x7fffffffffffffffULL;
  return v == 0 ? 1 : v;
}

Status AddProxyCertInfo(X509* x, bool limited, int path_length) {
  detail::ProxyInfoPtr pci(PROXY_CERT_INFO_EXTENSION_new());
  pci->proxyPolicy->policyLanguage =
      limited ? OBJ_txt2obj(detail::kOidGlobusLimited, 1) : OBJ_nid2obj(NID_id_ppl_inheritAll);
  if (path_length >= 0) {
    pci->pcPathLengthConstraint = ASN1_INTEGER_new();
    ASN1_INTEGER_set(pci->pcPathLengthConstraint, path_length);
  }
  if (X509_add1_ext_i2d(x, NID_proxyCertInfo, pci.get(), 1, 0) != 1) {
    return FailSsl(ErrorCode::kInternal, "adding proxyCertInfo");
  }
  return {};
}

Status AddKeyUsage(X509* x, EVP_PKEY* key) {
  const char* ku = EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA
                       ? "critical,digitalSignature,keyEncipherment"
                       : "critical,digitalSignature";
  detail::ExtPtr ext(X509V3_EXT_conf_nid(nullptr, nullptr, NID_key_usage, ku));
  if (!ext || X509_add_ext(x, ext.get(), -1) != 1) {
    return FailSsl(ErrorCode::kInternal, "adding keyUsage");
  }
  return {};
}

// The proxy's subject: the issuer's subject plus CN=<serial>.
Status SetProxyNames(X509* x, const Certificate& issuer, uint64_t serial) {
  detail::NamePtr name(X509_NAME_dup(X509_get_subject_name(issuer.get())));
  std::string cn = std::to_string(serial);
  if (!name ||
      X509_NAME_add_entry_by_NID(name.get(), NID_commonName, MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                 0) != 1 ||
      X509_set_subject_name(x, name.get()) != 1 ||
      X509_set_issuer_name(x, X509_get_subject_name(issuer.get())) != 1) {
    return FailSsl(ErrorCode::kInternal, "setting proxy names");
  }
  return {};
}

// Validity window and flags, checked against the issuer chain.
struct Window {
  Clock::time_point not_before, not_after;
  bool limited;
  int path_length;
  bool clipped;
};

Result<Window> PlanWindow(const Credential& issuer, const ProxyOptions& o) {
  auto now = Clock::now();
  const Certificate& ic = issuer.leaf();
  if (ic.NotAfter() <= now) {
    return Fail(ErrorCode::kProxyExpired, "the issuing certificate " + ic.Subject() +
                                              " expired at " + TimeText(ic.NotAfter()));
  }
  if (ic.NotBefore() > now) {
    return Fail(ErrorCode::kProxyExpired, "the issuing certificate " + ic.Subject() +
                                              " is not valid until " + TimeText(ic.NotBefore()));
  }
  if (o.lifetime <= std::chrono::seconds(0)) {
    return Fail(ErrorCode::kInvalidInput, "proxy lifetime must be positive");
  }
  Window w{std::max(ic.NotBefore(), now - o.backdate), now + o.lifetime, o.limited, o.path_length,
           false};
  auto limit = ChainNotAfter(issuer.chain);
  if (w.not_after > limit) {
    w.not_after = limit;
    w.clipped = true;
  }
  ProxyType it = ProxyTypeOf(ic);
  if (it == ProxyType::kLimited) w.limited = true;
  if (it == ProxyType::kIndependent || it == ProxyType::kRestricted) {
    return Fail(ErrorCode::kInvalidInput,
                "cannot sign a proxy with a " + std::string(ProxyTypeName(it)));
  }
  int ipl = ProxyPathLength(ic);
  if (ic.IsProxy() && ipl == 0) {
    return Fail(ErrorCode::kInvalidInput,
                "the issuing proxy's path length is 0: it may not sign further proxies");
  }
  if (ipl > 0 && (w.path_length < 0 || w.path_length > ipl - 1)) w.path_length = ipl - 1;
  return w;
}

}  // namespace

Result<CertChain> SignProxy(const Credential& issuer, EVP_PKEY* public_key,
                            const ProxyOptions& options, bool* clipped) {
  if (issuer.chain.empty() || !issuer.key) {
    return Fail(ErrorCode::kInvalidInput, "issuer credential has no certificate or key");
  }
  auto w = PlanWindow(issuer, options);
  if (!w) return Fail(w.error());
  Certificate cert(X509_new());
  X509* x = cert.get();
  uint64_t serial = RandomSerial();
  X509_set_version(x, 2);
  ASN1_INTEGER_set_uint64(X509_get_serialNumber(x), serial);
  if (auto st = SetProxyNames(x, issuer.leaf(), serial); !st) return Fail(st.error());
  ASN1_TIME_set(X509_getm_notBefore(x), Clock::to_time_t(w->not_before));
  ASN1_TIME_set(X509_getm_notAfter(x), Clock::to_time_t(w->not_after));
  // X509_set_pubkey runs OpenSSL 3.0's provider encoder (~270 µs here, more than the signature);
  // assembling the SubjectPublicKeyInfo by hand leaves the key undecodable to other OpenSSL calls
  // on the in-memory certificate, so the encoder stays.
  if (X509_set_pubkey(x, public_key) != 1) return FailSsl(ErrorCode::kInternal, "set public key");
  if (auto st = AddKeyUsage(x, public_key); !st) return Fail(st.error());
  if (auto st = AddProxyCertInfo(x, w->limited, w->path_length); !st) return Fail(st.error());
  if (X509_sign(x, issuer.key.get(), EVP_sha256()) <= 0) {
    return FailSsl(ErrorCode::kInternal, "signing proxy certificate");
  }
  if (clipped) *clipped = w->clipped;
  CertChain chain;
  chain.reserve(issuer.chain.size() + 1);
  chain.push_back(std::move(cert));
  chain.insert(chain.end(), issuer.chain.begin(), issuer.chain.end());
  return chain;
}

Result<ProxyResult> CreateProxy(const Credential& issuer, const ProxyOptions& options) {
  auto key = PrivateKey::Generate(options.key);
  if (!key) return Fail(key.error());
  ProxyResult r;
  auto chain = SignProxy(issuer, key->get(), options, &r.clipped);
  if (!chain) return Fail(chain.error());
  r.credential = Credential{std::move(*chain), std::move(*key)};
  return r;
}

ProxyInfo DescribeCredential(const CertChain& chain, Clock::time_point now) {
  ProxyInfo info;
  if (chain.empty()) return info;
  const Certificate& leaf = chain.front();
  info.subject = leaf.Subject();
  info.issuer = leaf.Issuer();
  info.identity = EndEntity(chain).Subject();
  info.type = ProxyTypeOf(leaf);
  info.key_algorithm = leaf.KeyAlgorithm();
  info.bits = leaf.KeyBits();
  info.path_length = ProxyPathLength(leaf);
  info.not_after = ChainNotAfter(chain);
  auto left = std::chrono::duration_cast<std::chrono::seconds>(info.not_after - now);
  info.time_left = std::max(left, std::chrono::seconds(0));
  return info;
}

Result<std::chrono::seconds> ParseDuration(std::string_view text) {
  auto bad = [&] {
    return Fail(ErrorCode::kInvalidInput,
                "'" + std::string(text) + "' is not a duration (give HH:MM, or 90m, 12h, 30s)");
  };
  auto number = [](std::string_view s, long& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size() && v >= 0;
  };
  if (text.empty()) return bad();
  long a = 0, b = 0;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    if (!number(text.substr(0, colon), a) || !number(text.substr(colon + 1), b) || b >= 60 ||
        colon + 1 == text.size()) {
      return bad();
    }
    return std::chrono::seconds(a * 3600 + b * 60);
  }
  char unit = text.back();
  long mult = unit == 'h' ? 3600 : unit == 'm' ? 60 : unit == 's' ? 1 : unit == 'd' ? 86400 : 0;
  if (mult == 0 || !number(text.substr(0, text.size() - 1), a)) return bad();
  return std::chrono::seconds(a * mult);
}

std::string FormatDuration(std::chrono::seconds s) {
  long v = std::max<long>(s.count(), 0);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", v / 3600, (v / 60) % 60, v % 60);
  return buf;
}

}  // namespace kite::credentials
