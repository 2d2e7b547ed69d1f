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

// A handshake that the peer's process ended (it was killed, it is restarting) is not a refusal:
// curl reports it as CURLE_SSL_CONNECT_ERROR with the socket's own words.
bool TransportFailure(std::string_view detail) {
  for (std::string_view words :
       {"reset by peer", "Connection refused", "timed out", "Broken pipe", "unexpected eof",
        "SSL_ERROR_SYSCALL", "Recv failure", "Send failure"}) {
    if (detail.find(words) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

ErrorCode CurlFailureCode(int code, std::string_view detail) {
  switch (static_cast<CURLcode>(code)) {
    case CURLE_SSL_CONNECT_ERROR:
      return TransportFailure(detail) ? ErrorCode::kUnavailable : ErrorCode::kAuthFailed;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
      return ErrorCode::kAuthFailed;
    case CURLE_RECV_ERROR:
      // TLS 1.3: a server that refuses our certificate says so in an alert after the handshake.
      return detail.find("alert") != detail.npos ? ErrorCode::kAuthFailed : ErrorCode::kUnavailable;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
      return ErrorCode::kUnavailable;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
      return ErrorCode::kProtocol;
    default:
      return ErrorCode::kIo;
  }
}

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
