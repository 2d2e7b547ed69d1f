// Internal to kite_credentials: OpenSSL ownership helpers and error text. Not a public header.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"

namespace kite::credentials::detail {

struct BioFree {
  void operator()(BIO* b) const { BIO_free_all(b); }
};
struct X509ReqFree {
  void operator()(X509_REQ* r) const { X509_REQ_free(r); }
};
struct X509StoreCtxFree {
  void operator()(X509_STORE_CTX* c) const { X509_STORE_CTX_free(c); }
};
struct ExtFree {
  void operator()(X509_EXTENSION* e) const { X509_EXTENSION_free(e); }
};
struct NameFree {
  void operator()(X509_NAME* n) const { X509_NAME_free(n); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
struct ProxyInfoFree {
  void operator()(PROXY_CERT_INFO_EXTENSION* p) const { PROXY_CERT_INFO_EXTENSION_free(p); }
};
struct X509CrlFree {
  void operator()(X509_CRL* c) const { X509_CRL_free(c); }
};

using BioPtr = std::unique_ptr<BIO, BioFree>;
using ReqPtr = std::unique_ptr<X509_REQ, X509ReqFree>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, X509StoreCtxFree>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, ExtFree>;
using NamePtr = std::unique_ptr<X509_NAME, NameFree>;
using PkeyCtxPtr = std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree>;
using ProxyInfoPtr = std::unique_ptr<PROXY_CERT_INFO_EXTENSION, ProxyInfoFree>;
using CrlPtr = std::unique_ptr<X509_CRL, X509CrlFree>;

// A read-only memory BIO over `data` (which must outlive the BIO).
BioPtr MemBio(std::string_view data);
// A fresh writable memory BIO, and its contents as a string.
BioPtr NewMemBio();
std::string BioToString(BIO* bio);

// The most recent OpenSSL error reason (and clears the queue), or "unknown OpenSSL error".
std::string TakeSslError();
// Fail(code, what + ": " + TakeSslError()).
std::unexpected<Error> FailSsl(ErrorCode code, std::string_view what);

// ASN1_TIME <-> system_clock.
std::chrono::system_clock::time_point AsnTimeToClock(const ASN1_TIME* t);

// "2026-11-22 10:00:00 UTC", for messages about validity periods.
std::string TimeText(std::chrono::system_clock::time_point t);

// Object identifiers Kite recognises in proxyCertInfo policies.
inline constexpr const char* kOidGlobusLimited = "1.3.6.1.4.1.3536.1.1.1.9";

}  // namespace kite::credentials::detail
