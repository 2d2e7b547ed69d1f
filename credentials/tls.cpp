// Mutual-TLS contexts and the handshake-time chain verification they share.
#include "credentials/tls.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "credentials/ssl_util.h"

namespace kite::credentials {

namespace {

// Per-SSL state: what the client expects of the server, and what verification found.
struct PeerState {
  std::string host;
  std::string expected_subject;
  std::optional<Identity> identity;
  std::string error;
};

void FreePeerState(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<PeerState*>(ptr);
}
void FreeVerifierRef(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<std::shared_ptr<const Verifier>*>(ptr);
}

int SslIndex() {
  static const int idx = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, FreePeerState);
  return idx;
}
int CtxIndex() {
  static const int idx = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, FreeVerifierRef);
  return idx;
}
int ServerIdentityIndex() {
  static const int idx = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return idx;
}

PeerState* StateOf(SSL* ssl, bool create) {
  auto* st = static_cast<PeerState*>(SSL_get_ex_data(ssl, SslIndex()));
  if (st == nullptr && create) {
    st = new PeerState();
    SSL_set_ex_data(ssl, SslIndex(), st);
  }
  return st;
}

bool HostMatches(const Certificate& cert, const std::string& host) {
  X509* x = cert.get();
  if (X509_check_host(x, host.c_str(), host.size(), 0, nullptr) == 1) return true;
  if (X509_check_ip_asc(x, host.c_str(), 0) == 1) return true;
  // Globus host certificates name the host as CN=host/<fqdn> (or myproxy/<fqdn>).
  std::string subject = cert.Subject();
  for (const char* prefix : {"/CN=host/", "/CN=myproxy/", "/CN="}) {
    std::string tail = prefix + host;
    if (subject.size() >= tail.size() &&
        subject.compare(subject.size() - tail.size(), tail.size(), tail) == 0) {
      return true;
    }
  }
  return false;
}

Status CheckServerName(SSL* ssl, const PeerState& st, const Certificate& leaf, const Identity& id) {
  const auto* wanted = static_cast<const std::string*>(
      SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ServerIdentityIndex()));
  if (wanted != nullptr && !wanted->empty()) {
    if (id.subject != *wanted) {
      return Fail(ErrorCode::kAuthFailed,
                  "server speaks for " + id.subject + ", expected " + *wanted);
    }
    return {};
  }
  if (!st.expected_subject.empty()) {
    if (leaf.Subject() != st.expected_subject) {
      return Fail(ErrorCode::kAuthFailed,
                  "server is " + leaf.Subject() + ", expected " + st.expected_subject);
    }
    return {};
  }
  if (!st.host.empty() && !HostMatches(leaf, st.host)) {
    return Fail(ErrorCode::kAuthFailed,
                "server certificate " + leaf.Subject() + " does not name host " + st.host);
  }
  return {};
}

// Replaces OpenSSL's chain verification for the peer's chain with Verifier::Verify.
int CertVerify(X509_STORE_CTX* ctx, void* arg) {
  auto* verifier = static_cast<const Verifier*>(arg);
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(ctx, SSL_get_ex_data_X509_STORE_CTX_idx()));
  PeerState* st = StateOf(ssl, true);
  CertChain chain;
  X509* leaf = X509_STORE_CTX_get0_cert(ctx);
  X509_up_ref(leaf);
  chain.emplace_back(leaf);
  STACK_OF(X509)* rest = X509_STORE_CTX_get0_untrusted(ctx);
  for (int i = 0; rest && i < sk_X509_num(rest); ++i) {
    X509* x = sk_X509_value(rest, i);
    if (X509_cmp(x, leaf) == 0) continue;
    X509_up_ref(x);
    chain.emplace_back(x);
  }
  auto id = verifier->Verify(chain);
  Status named =
      id ? (SSL_is_server(ssl) ? Status{} : CheckServerName(ssl, *st, chain.front(), *id))
         : Status(Fail(id.error()));
  if (!named) {
    st->error = named.error().message();
    X509_STORE_CTX_set_error(ctx, named.error().code() == ErrorCode::kProxyExpired
                                      ? X509_V_ERR_CERT_HAS_EXPIRED
                                      : X509_V_ERR_APPLICATION_VERIFICATION);
    return 0;
  }
  st->identity = std::move(*id);
  X509_STORE_CTX_set_error(ctx, X509_V_OK);
  return 1;
}

}  // namespace

Status detail::ConfigureContext(SSL_CTX* ctx, const std::optional<Credential>& cred,
                                std::shared_ptr<const Verifier> verifier, bool server) {
  if (!verifier) return Fail(ErrorCode::kInvalidInput, "TLS context needs a verifier");
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (cred) {
    STACK_OF(X509)* chain = sk_X509_new_null();
    for (size_t i = 1; i < cred->chain.size(); ++i) sk_X509_push(chain, cred->chain[i].get());
    int ok = SSL_CTX_use_cert_and_key(ctx, cred->leaf().get(), cred->key.get(), chain, 1);
    sk_X509_free(chain);
    if (ok != 1) return detail::FailSsl(ErrorCode::kInvalidInput, "TLS credential");
  }
  int mode = SSL_VERIFY_PEER | (server ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0);
  SSL_CTX_set_verify(ctx, mode, nullptr);
  const Verifier* raw = verifier.get();
  SSL_CTX_set_ex_data(ctx, CtxIndex(), new std::shared_ptr<const Verifier>(std::move(verifier)));
  SSL_CTX_set_cert_verify_callback(ctx, CertVerify, const_cast<Verifier*>(raw));
  if (server) {
    // No resumption: a resumed session skips the chain's verification (a proxy may have expired
    // or been replaced since), and the identity checks after the handshake read what that
    // verification found. A client offering an old session (libcurl does) gets a full handshake;
    // the session id context is set so that OpenSSL declines the offer instead of failing it.
    static constexpr unsigned char kSessionContext[] = "kite";
    SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ctx, 0);
  }
  return {};
}

void detail::RequireServerIdentity(SSL_CTX* ctx, const std::string* identity) {
  SSL_CTX_set_ex_data(ctx, ServerIdentityIndex(), const_cast<std::string*>(identity));
}

namespace {

Result<SslContextPtr> MakeContext(boost::asio::ssl::context::method method,
                                  const std::optional<Credential>& cred,
                                  std::shared_ptr<const Verifier> verifier, bool server) {
  auto ctx = std::make_shared<boost::asio::ssl::context>(method);
  ctx->set_options(boost::asio::ssl::context::default_workarounds |
                   boost::asio::ssl::context::no_sslv2 | boost::asio::ssl::context::no_sslv3 |
                   boost::asio::ssl::context::single_dh_use);
  if (auto st = detail::ConfigureContext(ctx->native_handle(), cred, std::move(verifier), server);
      !st) {
    return Fail(st.error());
  }
  return ctx;
}

}  // namespace

Result<SslContextPtr> MakeServerContext(const Credential& credential,
                                        std::shared_ptr<const Verifier> verifier) {
  return MakeContext(boost::asio::ssl::context::tls_server, credential, std::move(verifier), true);
}

Result<SslContextPtr> MakeClientContext(const std::optional<Credential>& credential,
                                        std::shared_ptr<const Verifier> verifier) {
  return MakeContext(boost::asio::ssl::context::tls_client, credential, std::move(verifier), false);
}

Status SetPeerHost(SSL* ssl, const std::string& host, const std::string& expected_subject) {
  PeerState* st = StateOf(ssl, true);
  st->host = host;
  st->expected_subject = expected_subject;
  if (!host.empty() && SSL_set_tlsext_host_name(ssl, host.c_str()) != 1) {
    return detail::FailSsl(ErrorCode::kInvalidInput, "server name " + host);
  }
  return {};
}

Result<Identity> PeerIdentity(SSL* ssl) {
  PeerState* st = StateOf(ssl, false);
  if (st == nullptr || !st->identity) {
    return Fail(ErrorCode::kAuthFailed, "the peer presented no verified certificate");
  }
  return *st->identity;
}

std::string PeerVerifyError(SSL* ssl) {
  PeerState* st = StateOf(ssl, false);
  return st ? st->error : "";
}

}  // namespace kite::credentials
