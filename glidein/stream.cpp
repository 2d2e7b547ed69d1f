// Dialling the agent.
#include "glidein/stream.h"

#include <spdlog/spdlog.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/paths.h"
#include "common/strings.h"
#include "common/unix_socket_path.h"
#include "credentials/tls.h"

namespace kite::glidein {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using asio::ip::tcp;
using asio::local::stream_protocol;

constexpr auto kTlsTimeout = std::chrono::seconds(10);  // connect and handshake

class UnixDialer : public Dialer {
 public:
  UnixDialer(asio::io_context& io, std::string path) : io_(io), path_(std::move(path)) {}

  void Dial(Done done) override {
    auto addr = UnixSocketPath::For(path_);
    if (!addr) {
      asio::post(io_, [done, e = addr.error()] { done(Fail(e)); });
      return;
    }
    auto sock = std::make_shared<stream_protocol::socket>(io_);
    // The address object must live until the connect is done (it may hold a directory open).
    auto held = std::make_shared<UnixSocketPath>(std::move(*addr));
    sock->async_connect(
        stream_protocol::endpoint(held->address()),
        [this, sock, held, done](boost::system::error_code ec) {
          if (ec) {
            return done(Fail(ErrorCode::kUnavailable, "connect " + path_ + ": " + ec.message()));
          }
          using S = AsioByteStream<stream_protocol::socket>;
          done(std::unique_ptr<ByteStream>(new S(std::move(*sock))));
        });
  }

 private:
  asio::io_context& io_;
  std::string path_;
};

// Mutual TLS to a glide-in's agent: presents the proxy (read anew on each dial, so a renewed one
// is used on reconnect) and takes the connection only when the agent's verified chain speaks for
// `identity`.
class TlsDialer : public Dialer {
 public:
  TlsDialer(asio::io_context& io, std::string host, std::string port, std::string proxy,
            std::shared_ptr<const credentials::Verifier> verifier, std::string identity)
      : io_(io),
        host_(std::move(host)),
        port_(std::move(port)),
        proxy_(std::move(proxy)),
        verifier_(std::move(verifier)),
        identity_(std::move(identity)) {}

  void Dial(Done done) override {
    auto ctx = credentials::MakeClientContext(OwnCredential(), verifier_);
    if (!ctx) {
      asio::post(io_, [done, e = ctx.error()] { done(Fail(e)); });
      return;
    }
    auto a = std::make_shared<Attempt>(io_, *ctx, std::move(done));
    a->timer.expires_after(kTlsTimeout);
    a->timer.async_wait([a](auto ec) {
      if (ec) return;
      a->timed_out = true;
      a->resolver.cancel();
      boost::system::error_code ignored;
      a->stream.lowest_layer().close(ignored);
    });
    a->resolver.async_resolve(host_, port_, [this, a](auto ec, tcp::resolver::results_type r) {
      if (ec) return Finish(a, Unavailable(*a, "resolve " + host_, ec));
      asio::async_connect(a->stream.lowest_layer(), r, [this, a](auto e, const tcp::endpoint&) {
        if (e) return Finish(a, Unavailable(*a, "connect " + Where(), e));
        a->stream.async_handshake(ssl::stream_base::client,
                                  [this, a](auto h) { OnHandshake(a, h); });
      });
    });
  }

 private:
  struct Attempt {
    Attempt(asio::io_context& io, const credentials::SslContextPtr& c, Done d)
        : ctx(c), resolver(io), stream(io, *c), timer(io), done(std::move(d)) {}
    credentials::SslContextPtr ctx;
    tcp::resolver resolver;
    ssl::stream<tcp::socket> stream;
    asio::steady_timer timer;
    Done done;
    bool timed_out = false;
  };

  std::string Where() const { return "tls:" + host_ + ":" + port_; }

  Error Unavailable(const Attempt& a, const std::string& what, boost::system::error_code ec) {
    return Error(ErrorCode::kUnavailable,
                 what + ": " + (a.timed_out ? "no answer within 10 s" : ec.message()));
  }

  // The startd's own credential; without one it dials anyway, and the agent says why it refuses.
  std::optional<credentials::Credential> OwnCredential() {
    auto cred = credentials::LoadProxyFile(proxy_);
    std::string problem = cred ? "" : cred.error().message();
    if (problem != last_problem_ && !problem.empty())
      spdlog::warn("startd: no usable proxy ({}): dialing the agent without a credential", problem);
    last_problem_ = problem;
    if (!cred) return std::nullopt;
    return std::move(*cred);
  }

  void OnHandshake(const std::shared_ptr<Attempt>& a, boost::system::error_code ec) {
    SSL* ssl = a->stream.native_handle();
    if (ec) {
      std::string why = credentials::PeerVerifyError(ssl);
      if (!why.empty()) {
        return Finish(
            a, Error(ErrorCode::kUnavailable, Where() + ": the agent's certificate: " + why));
      }
      return Finish(a, Unavailable(*a, Where() + ": TLS handshake", ec));
    }
    auto id = credentials::PeerIdentity(ssl);
    if (!id)
      return Finish(a, Error(ErrorCode::kUnavailable, Where() + ": " + id.error().message()));
    if (id->subject != identity_) {
      return Finish(a, Error(ErrorCode::kAuthFailed,
                             Where() + " speaks for " + id->subject + ", not for " + identity_ +
                                 " (--agent-identity): this startd works only for the agent "
                                 "that started it"));
    }
    a->timer.cancel();
    using S = AsioByteStream<ssl::stream<tcp::socket>>;
    a->done(std::unique_ptr<ByteStream>(new S(std::move(a->stream))));
  }

  void Finish(const std::shared_ptr<Attempt>& a, Error e) {
    a->timer.cancel();
    boost::system::error_code ignored;
    a->stream.lowest_layer().close(ignored);
    a->done(Fail(std::move(e)));
  }

  asio::io_context& io_;
  std::string host_, port_, proxy_;
  std::shared_ptr<const credentials::Verifier> verifier_;
  std::string identity_;
  std::string last_problem_;  // the proxy's, logged once until it changes
};

// "tls:HOST:PORT", "tls:[::1]:PORT" -> host, port.
Result<std::pair<std::string, std::string>> TlsHostPort(std::string_view hp) {
  auto split = SplitHostPort(hp);
  if (!split) return Fail(ErrorCode::kInvalidInput, "expected tls:HOST:PORT");
  auto [host, port] = *split;
  auto p = ParsePort(port);
  if (host.empty() || !p || *p == 0)
    return Fail(ErrorCode::kInvalidInput, "expected tls:HOST:PORT with a port from 1 to 65535");
  return std::pair{std::string(host), std::string(port)};
}

Result<std::unique_ptr<Dialer>> MakeTlsDialer(asio::io_context& io, std::string_view hp,
                                              const TlsDialOptions& tls) {
  auto where = TlsHostPort(hp);
  if (!where) return Fail(where.error());
  if (tls.agent_identity.empty())
    return Fail(
        ErrorCode::kInvalidInput,
        "tls: needs --agent-identity (the DN of the agent's user, whose proxy it presents)");
  auto rdns = credentials::ParseDistinguishedName(tls.agent_identity);
  if (!rdns || rdns->empty())
    return Fail(ErrorCode::kInvalidInput,
                "--agent-identity '" + tls.agent_identity + "' is not a distinguished name");
  std::string ca_dir = tls.ca_dir.empty() ? credentials::DefaultCaDir() : tls.ca_dir;
  if (ca_dir.empty())
    return Fail(ErrorCode::kInvalidInput, "tls: needs trusted CAs: --ca-dir, or set X509_CERT_DIR");
  auto verifier = credentials::Verifier::Create({.ca_dir = ca_dir});
  if (!verifier) return Fail(verifier.error().Wrap("--ca-dir " + ca_dir));
  return std::unique_ptr<Dialer>(new TlsDialer(
      io, where->first, where->second, tls.proxy.empty() ? DefaultProxyPath() : tls.proxy,
      *verifier, credentials::FormatDistinguishedName(*rdns)));
}

}  // namespace

Result<std::unique_ptr<Dialer>> MakeDialer(asio::io_context& io, const std::string& agent,
                                           const TlsDialOptions& tls) {
  if (agent.starts_with("unix:") && agent.size() > 5) {
    return std::unique_ptr<Dialer>(new UnixDialer(io, agent.substr(5)));
  }
  if (agent.starts_with("tls:")) {
    auto d = MakeTlsDialer(io, std::string_view(agent).substr(4), tls);
    if (!d) return Fail(d.error().Wrap("--agent '" + agent + "'"));
    return d;
  }
  return Fail(ErrorCode::kInvalidInput,
              "--agent '" + agent + "': expected unix:/path/to/pool.sock or tls:HOST:PORT");
}

}  // namespace kite::glidein
