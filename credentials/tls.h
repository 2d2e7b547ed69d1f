// Mutual-TLS configuration for every Kite component, in one place: Boost.Asio contexts for servers
// and clients, and the same settings for a libcurl handle.
//
// Both ends present a credential (a proxy chain or a host certificate with its key) and verify the
// peer's chain with a Verifier during the handshake, so a peer with an expired, untrusted or
// RFC 3820-violating chain fails the handshake itself. After the handshake, PeerIdentity() gives
// who the peer is.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "credentials/certificate.h"
#include "credentials/verify.h"

typedef void CURL;
typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace kite::credentials {

using SslContextPtr = std::shared_ptr<boost::asio::ssl::context>;

// A server: presents `credential`, requires a client certificate chain that `verifier` accepts.
Result<SslContextPtr> MakeServerContext(const Credential& credential,
                                        std::shared_ptr<const Verifier> verifier);
// A client: presents `credential` when given (anonymous otherwise) and verifies the server's chain
// with `verifier`. Call SetPeerHost on each SSL before the handshake to check the server's name.
Result<SslContextPtr> MakeClientContext(const std::optional<Credential>& credential,
                                        std::shared_ptr<const Verifier> verifier);

// Before a client handshake: sends SNI and requires the server certificate to name `host`
// (subjectAltName DNS/IP, or a CN of "host", "host/<host>" or "myproxy/<host>", as Globus allows).
// When `expected_subject` is non-empty, the server's subject must equal it instead (the
// MYPROXY_SERVER_DN rule).
Status SetPeerHost(SSL* ssl, const std::string& host, const std::string& expected_subject = "");

// After a successful handshake: the verified identity of the peer. kAuthFailed when the peer
// presented no certificate.
Result<Identity> PeerIdentity(SSL* ssl);
// After a failed handshake: why our side refused the peer's chain ("" when it did not).
std::string PeerVerifyError(SSL* ssl);

// Settings for libcurl (OpenSSL backend). The object must outlive every transfer on the handles
// it configures.
struct CurlTls {
  std::optional<Credential> credential;
  std::shared_ptr<const Verifier> verifier;
  // Non-empty: the server must speak for this identity (Identity::subject, e.g. the user's DN
  // when the server presents the user's proxy, as a gridmanager's GASS server does) and its host
  // name is not checked. Empty: the server's certificate must name the host in the URL.
  std::string server_identity;
};
// Sets the client credential, the verification rules and host or identity checking on `curl`
// (credentials/curl_tls.cpp: only what calls it links libcurl).
Status ConfigureCurl(CURL* curl, const CurlTls& tls);
// What a failed libcurl transfer (its CURLcode, and the words of its error buffer) means: the
// peer refused us (kAuthFailed: a TLS handshake it rejected), no answer (kUnavailable: no
// connection, a timeout, a connection lost, a peer that died mid-handshake), a reply that breaks
// HTTP (kProtocol), or anything else (kIo).
ErrorCode CurlFailureCode(int curl_code, std::string_view detail);

namespace detail {
// What MakeServerContext / MakeClientContext (and ConfigureCurl) do to an OpenSSL context.
Status ConfigureContext(SSL_CTX* ctx, const std::optional<Credential>& cred,
                        std::shared_ptr<const Verifier> verifier, bool server);
// Every server a client context talks to must speak for `*identity` (CurlTls::server_identity;
// the string must outlive the context's transfers).
void RequireServerIdentity(SSL_CTX* ctx, const std::string* identity);
}  // namespace detail

}  // namespace kite::credentials
