// Delegation: the receiver's key and CSR, the delegator's checked signature.
#include "credentials/delegation.h"

#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "credentials/ssl_util.h"

namespace kite::credentials {

using detail::FailSsl;

Result<DelegationRequest> DelegationRequest::Create(const KeySpec& key) {
  auto k = PrivateKey::Generate(key);
  if (!k) return Fail(k.error());
  detail::ReqPtr req(X509_REQ_new());
  X509_REQ_set_version(req.get(), 0);
  // The subject is ignored by the delegator (a proxy's name derives from its issuer); a fixed CN
  // keeps the request well formed.
  X509_NAME* name = X509_REQ_get_subject_name(req.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("kite delegation"), -1, -1, 0);
  if (X509_REQ_set_pubkey(req.get(), k->get()) != 1 ||
      X509_REQ_sign(req.get(), k->get(), EVP_sha256()) <= 0) {
    return FailSsl(ErrorCode::kInternal, "making certificate request");
  }
  auto bio = detail::NewMemBio();
  PEM_write_bio_X509_REQ(bio.get(), req.get());
  DelegationRequest r;
  r.key_ = std::move(*k);
  r.csr_pem_ = detail::BioToString(bio.get());
  return r;
}

std::string DelegationRequest::csr_der() const {
  auto bio = detail::MemBio(csr_pem_);
  detail::ReqPtr req(PEM_read_bio_X509_REQ(bio.get(), nullptr, nullptr, nullptr));
  unsigned char* buf = nullptr;
  int n = i2d_X509_REQ(req.get(), &buf);
  std::string out(reinterpret_cast<char*>(buf), static_cast<size_t>(std::max(n, 0)));
  OPENSSL_free(buf);
  return out;
}

Result<Credential> DelegationRequest::Complete(std::string_view chain_pem) const {
  auto chain = ParseChainPem(chain_pem);
  if (!chain) return Fail(chain.error());
  return Complete(std::move(*chain));
}

Result<Credential> DelegationRequest::Complete(CertChain chain) const {
  if (chain.empty()) return Fail(ErrorCode::kInvalidInput, "empty delegated chain");
  if (!key_.Matches(chain.front())) {
    return Fail(ErrorCode::kInvalidInput,
                "the delegated certificate is not for this request's key");
  }
  return Credential{std::move(chain), key_};
}

namespace {

Status CheckRequestKey(X509_REQ* req) {
  EVP_PKEY* pub = X509_REQ_get0_pubkey(req);
  if (pub == nullptr) return Fail(ErrorCode::kInvalidInput, "certificate request has no key");
  int bits = EVP_PKEY_get_bits(pub);
  switch (EVP_PKEY_get_base_id(pub)) {
    case EVP_PKEY_RSA:
      if (bits < 2048) {
        return Fail(ErrorCode::kInvalidInput, "certificate request has a weak RSA key (" +
                                                  std::to_string(bits) +
                                                  " bits; at least 2048 required)");
      }
      return {};
    case EVP_PKEY_EC: {
      char curve[64] = {0};
      size_t len = 0;
      EVP_PKEY_get_utf8_string_param(pub, "group", curve, sizeof curve, &len);
      std::string_view c(curve);
      if (c != "prime256v1" && c != "secp384r1" && c != "secp521r1") {
        return Fail(ErrorCode::kInvalidInput, "certificate request uses unsupported EC curve '" +
                                                  std::string(c) + "' (P-256/384/521 only)");
      }
      return {};
    }
    default:
      return Fail(ErrorCode::kInvalidInput,
                  std::string("certificate request uses unsupported key algorithm ") +
                      OBJ_nid2sn(EVP_PKEY_get_base_id(pub)) + " (RSA or EC only)");
  }
}

Status CheckRequest(X509_REQ* req) {
  if (auto st = CheckRequestKey(req); !st) return st;
  int md_nid = NID_undef;
  int pk_nid = NID_undef;
  OBJ_find_sigid_algs(X509_REQ_get_signature_nid(req), &md_nid, &pk_nid);
  if (md_nid == NID_md5 || md_nid == NID_md4 || md_nid == NID_md2 || md_nid == NID_undef) {
    return Fail(ErrorCode::kInvalidInput,
                std::string("certificate request signed with a refused digest (") +
                    (md_nid == NID_undef ? "unknown" : OBJ_nid2sn(md_nid)) + ")");
  }
  if (X509_REQ_verify(req, X509_REQ_get0_pubkey(req)) != 1) {
    return FailSsl(ErrorCode::kInvalidInput, "certificate request signature does not verify");
  }
  return {};
}

Result<CertChain> SignRequest(X509_REQ* req, const Credential& delegator,
                              const ProxyOptions& options) {
  if (auto st = CheckRequest(req); !st) return Fail(st.error());
  return SignProxy(delegator, X509_REQ_get0_pubkey(req), options);
}

}  // namespace

Result<std::string> SignDelegation(std::string_view csr_pem, const Credential& delegator,
                                   const ProxyOptions& options) {
  auto bio = detail::MemBio(csr_pem);
  detail::ReqPtr req(PEM_read_bio_X509_REQ(bio.get(), nullptr, nullptr, nullptr));
  if (!req) return FailSsl(ErrorCode::kInvalidInput, "malformed certificate request PEM");
  auto chain = SignRequest(req.get(), delegator, options);
  if (!chain) return Fail(chain.error());
  return ChainToPem(*chain);
}

Result<CertChain> SignDelegationDer(std::string_view csr_der, const Credential& delegator,
                                    const ProxyOptions& options) {
  auto* p = reinterpret_cast<const unsigned char*>(csr_der.data());
  detail::ReqPtr req(d2i_X509_REQ(nullptr, &p, static_cast<long>(csr_der.size())));
  if (!req) return FailSsl(ErrorCode::kInvalidInput, "malformed DER certificate request");
  return SignRequest(req.get(), delegator, options);
}

}  // namespace kite::credentials
