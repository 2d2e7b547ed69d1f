// Chain verification: OpenSSL's checks with proxies allowed, then RFC 3820's extra rules.
#include "credentials/verify.h"

#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdlib>

#include "common/files.h"
#include "common/paths.h"
#include "credentials/ssl_util.h"

namespace kite::credentials {

using detail::TimeText;

namespace {

// A CA that publishes no CRL is accepted, as Globus does; every other failure stands.
int VerifyCallback(int ok, X509_STORE_CTX* ctx) {
  if (!ok && X509_STORE_CTX_get_error(ctx) == X509_V_ERR_UNABLE_TO_GET_CRL) return 1;
  return ok;
}

bool IsDirectory(const std::string& path) {
  struct stat sb;
  return ::stat(path.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode);
}

Error MapVerifyError(X509_STORE_CTX* ctx, const std::string& ca_dir) {
  int err = X509_STORE_CTX_get_error(ctx);
  X509* cur = X509_STORE_CTX_get_current_cert(ctx);
  Certificate c;
  if (cur) {
    X509_up_ref(cur);
    c = Certificate(cur);
  }
  std::string who =
      c ? c.Subject()
        : "certificate at depth " + std::to_string(X509_STORE_CTX_get_error_depth(ctx));
  switch (err) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return Error(ErrorCode::kProxyExpired, who + " expired at " + TimeText(c.NotAfter()));
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return Error(ErrorCode::kProxyExpired,
                   who + " is not valid until " + TimeText(c.NotBefore()));
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
      return Error(ErrorCode::kAuthFailed, "untrusted chain: " + who + " is issued by " +
                                               (c ? c.Issuer() : "?") +
                                               ", which is not a CA trusted in " + ca_dir);
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
      return Error(ErrorCode::kAuthFailed,
                   "the signature on " + who + " does not verify (tampered certificate?)");
    case X509_V_ERR_CERT_REVOKED:
      return Error(ErrorCode::kAuthFailed,
                   who + " (serial " + c.SerialHex() + ") has been revoked by its CA");
    default:
      return Error(ErrorCode::kAuthFailed,
                   who + ": " + X509_verify_cert_error_string(static_cast<long>(err)));
  }
}

// RFC 3820 rules OpenSSL leaves to the application. `chain` is OpenSSL's verified chain.
Status CheckProxyRules(const CertChain& chain, bool reject_limited) {
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    const Certificate& c = chain[i];
    if (!c.IsProxy()) break;
    const Certificate& issuer = chain[i + 1];
    if (c.NotAfter() > issuer.NotAfter()) {
      return Fail(ErrorCode::kAuthFailed,
                  "proxy " + c.Subject() + " is valid until " + TimeText(c.NotAfter()) +
                      ", beyond its issuer's end " + TimeText(issuer.NotAfter()));
    }
    uint32_t ku = X509_get_key_usage(c.get());
    if (X509_check_ca(c.get()) != 0 || (ku != UINT32_MAX && (ku & KU_KEY_CERT_SIGN))) {
      return Fail(ErrorCode::kAuthFailed,
                  "proxy " + c.Subject() + " claims the right to sign certificates");
    }
    ProxyType t = ProxyTypeOf(c);
    if (t == ProxyType::kRestricted) {
      return Fail(ErrorCode::kAuthFailed,
                  "proxy " + c.Subject() + " has a policy language Kite cannot enforce");
    }
    if (ProxyTypeOf(issuer) == ProxyType::kLimited && t != ProxyType::kLimited) {
      return Fail(ErrorCode::kAuthFailed,
                  "proxy " + c.Subject() + " is not limited but was signed by a limited proxy");
    }
    if (reject_limited && t == ProxyType::kLimited) {
      return Fail(ErrorCode::kAuthFailed, "limited proxies are not accepted here");
    }
  }
  return {};
}

Identity MakeIdentity(const CertChain& chain) {
  Identity id;
  id.leaf_subject = chain.front().Subject();
  id.subject = EndEntity(chain).Subject();
  id.ca = chain.back().Subject();
  id.type = ProxyTypeOf(chain.front());
  id.not_after = Clock::time_point::max();
  for (const auto& c : chain) {
    id.not_after = std::min(id.not_after, c.NotAfter());
    if (!c.IsProxy()) continue;
    ++id.proxy_depth;
    if (ProxyTypeOf(c) == ProxyType::kLimited) id.limited = true;
  }
  return id;
}

}  // namespace

Result<std::shared_ptr<const Verifier>> Verifier::Create(const VerifierOptions& options) {
  if (options.ca_dir.empty() || !IsDirectory(options.ca_dir)) {
    return Fail(ErrorCode::kNotFound,
                "trusted-CA directory '" + options.ca_dir + "' does not exist");
  }
  std::shared_ptr<Verifier> v(new Verifier());
  v->options_ = options;
  v->store_ = X509_STORE_new();
  X509_LOOKUP* lookup = X509_STORE_add_lookup(v->store_, X509_LOOKUP_hash_dir());
  if (lookup == nullptr ||
      X509_LOOKUP_add_dir(lookup, options.ca_dir.c_str(), X509_FILETYPE_PEM) != 1) {
    return detail::FailSsl(ErrorCode::kInternal, "reading " + options.ca_dir);
  }
  unsigned long flags = X509_V_FLAG_ALLOW_PROXY_CERTS;
  if (options.check_crls) flags |= X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL;
  X509_STORE_set_flags(v->store_, flags);
  X509_STORE_set_verify_cb(v->store_, VerifyCallback);
  return std::shared_ptr<const Verifier>(std::move(v));
}

Verifier::~Verifier() {
  X509_STORE_free(store_);
}

Result<Identity> Verifier::Verify(const CertChain& chain,
                                  std::optional<Clock::time_point> at) const {
  if (chain.empty()) return Fail(ErrorCode::kInvalidInput, "empty certificate chain");
  detail::StoreCtxPtr ctx(X509_STORE_CTX_new());
  STACK_OF(X509)* untrusted = sk_X509_new_null();
  for (size_t i = 1; i < chain.size(); ++i) sk_X509_push(untrusted, chain[i].get());
  if (X509_STORE_CTX_init(ctx.get(), store_, chain.front().get(), untrusted) != 1) {
    sk_X509_free(untrusted);
    return detail::FailSsl(ErrorCode::kInternal, "X509_STORE_CTX_init");
  }
  if (at) X509_STORE_CTX_set_time(ctx.get(), 0, Clock::to_time_t(*at));
  int ok = X509_verify_cert(ctx.get());
  Result<Identity> result;
  if (ok != 1) {
    result = Fail(MapVerifyError(ctx.get(), options_.ca_dir));
  } else {
    CertChain verified;
    STACK_OF(X509)* vc = X509_STORE_CTX_get0_chain(ctx.get());
    for (int i = 0; i < sk_X509_num(vc); ++i) {
      X509* x = sk_X509_value(vc, i);
      X509_up_ref(x);
      verified.emplace_back(x);
    }
    if (auto st = CheckProxyRules(verified, options_.reject_limited); !st) {
      result = Fail(st.error());
    } else {
      result = MakeIdentity(verified);
    }
  }
  sk_X509_free(untrusted);
  return result;
}

std::string DefaultCaDir() {
  if (const char* d = std::getenv("X509_CERT_DIR"); d && *d) return d;
  std::vector<std::string> candidates;
  if (const char* home = std::getenv("HOME"); home && *home) {
    candidates.push_back(JoinPath(home, ".globus/certificates"));
  }
  candidates.push_back("/etc/grid-security/certificates");
  candidates.push_back(JoinPath(KiteHome(), "ca/certificates"));
  for (const auto& c : candidates) {
    if (IsDirectory(c)) return c;
  }
  return "";
}

}  // namespace kite::credentials
