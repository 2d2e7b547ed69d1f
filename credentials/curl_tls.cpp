// The mutual-TLS settings of credentials/tls.h for a libcurl handle, apart from the rest so that
// only the programs that make HTTPS transfers link libcurl.
#include <curl/curl.h>
#include <openssl/ssl.h>

#include "credentials/tls.h"

namespace kite::credentials {
namespace {

CURLcode CurlSslCtx(CURL*, void* ssl_ctx, void* user) {
  const auto* tls = static_cast<const CurlTls*>(user);
  auto* ctx = static_cast<SSL_CTX*>(ssl_ctx);
  auto st = detail::ConfigureContext(ctx, tls->credential, tls->verifier, false);
  if (st && !tls->server_identity.empty())
    detail::RequireServerIdentity(ctx, &tls->server_identity);
  return st ? CURLE_OK : CURLE_SSL_CERTPROBLEM;
}

}  // namespace

Status ConfigureCurl(CURL* curl, const CurlTls& tls) {
  if (!tls.verifier) return Fail(ErrorCode::kInvalidInput, "CurlTls needs a verifier");
  bool ok =
      curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L) == CURLE_OK &&
      curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, tls.server_identity.empty() ? 2L : 0L) ==
          CURLE_OK &&
      curl_easy_setopt(curl, CURLOPT_CAPATH, tls.verifier->options().ca_dir.c_str()) == CURLE_OK &&
      curl_easy_setopt(curl, CURLOPT_SSL_CTX_FUNCTION, CurlSslCtx) == CURLE_OK &&
      curl_easy_setopt(curl, CURLOPT_SSL_CTX_DATA, &tls) == CURLE_OK;
  if (!ok) {
    return Fail(ErrorCode::kInternal,
                "libcurl lacks OpenSSL context hooks (needs its OpenSSL build)");
  }
  return {};
}

}  // namespace kite::credentials
