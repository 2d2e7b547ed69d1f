// The glide-ins' mutual-TLS listener: the proxy it presents, the handshake, who is let in.
#include "agent/pool_tls.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <list>

#include "agent/pool.h"
#include "agent/rest_server.h"
#include "common/accept_loop.h"
#include "common/files.h"
#include "common/paths.h"
#include "common/strings.h"
#include "credentials/tls.h"
#include "pool/protocol.h"
#include "pool/stream.h"

namespace kite::agent {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using asio::ip::tcp;

namespace {

constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
using TlsStream = ssl::stream<tcp::socket>;

// An adopted connection that holds its place in the listener's per-peer limit while it lives.
class CountedStream : public pool::ByteStream {
 public:
  CountedStream(std::unique_ptr<pool::ByteStream> inner, PeerLimit::Slot slot)
      : inner_(std::move(inner)), slot_(std::move(slot)) {}
  void AsyncReadSome(char* buf, size_t size, Handler done) override {
    inner_->AsyncReadSome(buf, size, std::move(done));
  }
  void AsyncWrite(const char* data, size_t size, Handler done) override {
    inner_->AsyncWrite(data, size, std::move(done));
  }
  void Close() override { inner_->Close(); }

 private:
  std::unique_ptr<pool::ByteStream> inner_;
  PeerLimit::Slot slot_;
};

std::string Address(const tcp::endpoint& ep) {
  std::string host = ep.address().to_string();
  if (ep.address().is_v6()) host = "[" + host + "]";
  return host + ":" + std::to_string(ep.port());
}

// Why a failed handshake failed, in words a user can act on.
std::string HandshakeFailure(const boost::system::error_code& ec, SSL* ssl) {
  if (std::string why = credentials::PeerVerifyError(ssl); !why.empty()) return why;
  if (ec.category() == asio::error::get_ssl_category() &&
      ERR_GET_REASON(static_cast<unsigned long>(ec.value())) ==
          SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE) {
    return "it presented no certificate (a startd needs a proxy: --proxy or $X509_USER_PROXY)";
  }
  if (ec == asio::error::eof || ec == ssl::error::stream_truncated)
    return "it closed the connection during the TLS handshake";
  if (ec == asio::error::operation_aborted) return "no TLS handshake within 10 s";
  return "TLS handshake: " + ec.message();
}

}  // namespace

std::string PoolPeerRefusal(const std::string& peer, const std::string& own,
                            const std::vector<std::string>& allowed) {
  if (!own.empty() && peer == own) return "";
  for (const auto& a : allowed)
    if (peer == a) return "";
  return "its identity " + peer + " is neither this user's (" + own +
         ") nor in [pool] allow_identities";
}

struct PoolTlsListener::State {
  State(asio::io_context& io, const PoolSettings& s, PoolTlsListener::Paths p, Pool& pl)
      : settings(s), paths(std::move(p)), pool(pl), acceptor(io) {}

  const PoolSettings& settings;
  PoolTlsListener::Paths paths;
  Pool& pool;
  std::chrono::milliseconds recheck{};
  Limits limits;
  std::string proxy_path;  // resolved once: [pool] proxy, $X509_USER_PROXY, /tmp/x509up_u<uid>
  tcp::acceptor acceptor;
  std::shared_ptr<AcceptLoop<tcp>> loop;
  std::unique_ptr<asio::steady_timer> recheck_timer;
  std::shared_ptr<const credentials::Verifier> verifier;
  credentials::SslContextPtr ctx;  // for new handshakes; each keeps the context it started with
  std::string proxy_pem;           // what ctx presents, to see a renewal
  std::string own;                 // the identity of that proxy
  std::string problem;             // the last reason the proxy could not be used (logged once)
  std::string address;             // where it listens (pool.address)
  bool stopped = false;
  std::list<std::weak_ptr<Handshake>> handshakes;  // pending, ended on Stop
};

// One accepted connection until its peer is let in (Pool::Adopt) or refused.
class PoolTlsListener::Handshake : public std::enable_shared_from_this<Handshake> {
 public:
  Handshake(std::shared_ptr<State> state, tcp::socket socket, PeerLimit::Slot slot)
      : state_(std::move(state)),
        slot_(std::move(slot)),
        timer_(socket.get_executor()),
        stream_(std::move(socket), *state_->ctx) {
    boost::system::error_code ec;
    auto ep = stream_.lowest_layer().remote_endpoint(ec);
    addr_ = ec ? "an unknown address" : Address(ep);
  }

  void Run() {
    timer_.expires_after(kHandshakeTimeout);
    timer_.async_wait([self = shared_from_this()](auto ec) {
      if (!ec) self->Cancel();
    });
    stream_.async_handshake(ssl::stream_base::server,
                            [self = shared_from_this()](auto ec) { self->OnHandshake(ec); });
  }

  void Cancel() {
    boost::system::error_code ignored;
    stream_.lowest_layer().cancel(ignored);
    stream_.lowest_layer().close(ignored);
  }

 private:
  void OnHandshake(boost::system::error_code ec) {
    timer_.cancel();
    if (state_->stopped) return;
    if (ec) return Refused(HandshakeFailure(ec, stream_.native_handle()));
    auto id = credentials::PeerIdentity(stream_.native_handle());
    if (!id) return Refused(id.error().message());
    std::string why = PoolPeerRefusal(id->subject, state_->own, state_->settings.allow_identities);
    // A limited proxy may not have work started in its name (RFC 3820, as gatekeepers hold it).
    if (why.empty() && id->limited) why = "it presented a limited proxy of " + id->subject;
    if (!why.empty()) return Refuse(why);
    spdlog::info("agent: pool: a startd from {} speaks for {}", addr_, id->subject);
    auto inner = std::make_unique<pool::AsioByteStream<TlsStream>>(std::move(stream_));
    double not_after = std::chrono::duration<double>(id->not_after.time_since_epoch()).count();
    state_->pool.Adopt(
        std::make_unique<CountedStream>(std::move(inner), std::move(slot_)),
        PoolPeer{
            .who = id->subject + " at " + addr_, .door = PoolDoor::kTls, .not_after = not_after});
  }

  void Refused(const std::string& why) {
    spdlog::warn("agent: pool: refused a startd from {}: {}", addr_, why);
    Cancel();
  }

  // Past the handshake the startd can be told why (it then stops, as on the pool's own refuse).
  void Refuse(const std::string& why) {
    spdlog::warn("agent: pool: refused a startd from {}: {}", addr_, why);
    frame_ = pool::EncodeFrame(pool::Message{.type = pool::MsgType::kRefuse, .reason = why});
    timer_.expires_after(kHandshakeTimeout);
    timer_.async_wait([self = shared_from_this()](auto e) {
      if (!e) self->Cancel();
    });
    asio::async_write(stream_, asio::buffer(frame_), [self = shared_from_this()](auto ec, size_t) {
      if (ec) return self->Cancel();
      boost::system::error_code ignored;
      self->stream_.lowest_layer().shutdown(tcp::socket::shutdown_send, ignored);
      self->Drain();
    });
  }

  // Reads what the startd still sends (its hello) until it closes: closing with unread bytes
  // would reset the connection, and the startd could lose the refuse before reading it.
  void Drain() {
    stream_.async_read_some(asio::buffer(drain_), [self = shared_from_this()](auto ec, size_t) {
      if (ec) {
        self->timer_.cancel();
        return self->Cancel();
      }
      self->Drain();
    });
  }

  std::shared_ptr<State> state_;
  PeerLimit::Slot slot_;
  asio::steady_timer timer_;
  TlsStream stream_;
  std::string addr_;
  std::string frame_;
  std::array<char, 4096> drain_{};
};

PoolTlsListener::PoolTlsListener(asio::io_context& io, const PoolSettings& settings, Paths paths,
                                 Pool& pool, std::chrono::milliseconds recheck, Limits limits)
    : state_(std::make_shared<State>(io, settings, std::move(paths), pool)) {
  state_->recheck = recheck;
  state_->limits = limits;
  state_->proxy_path = settings.proxy.empty() ? DefaultProxyPath() : settings.proxy;
  state_->recheck_timer = std::make_unique<asio::steady_timer>(io);
}

PoolTlsListener::~PoolTlsListener() {
  Stop();
}

bool PoolTlsListener::listening() const {
  return state_->acceptor.is_open();
}

PoolTlsListener::View PoolTlsListener::Describe() const {
  const State& s = *state_;
  View v{.configured = !s.settings.listen.empty(), .listening = listening()};
  if (v.listening) v.address = s.address;
  if (!v.configured) {
    v.problem = "[pool] listen is \"\" in config.toml: this agent takes no glide-ins";
  } else if (!s.problem.empty()) {
    v.problem = s.problem;
  }
  return v;
}

void PoolTlsListener::Recheck() {
  State& s = *state_;
  if (s.stopped || s.settings.listen.empty()) return;
  s.recheck_timer->cancel();
  Check();
}

void PoolTlsListener::Start() {
  ::unlink(state_->paths.address.c_str());
  if (state_->settings.listen.empty()) {
    spdlog::info("agent: pool: no TLS listener for glide-ins ([pool] listen is \"\")");
    return;
  }
  Check();
}

void PoolTlsListener::Stop() {
  State& s = *state_;
  if (s.stopped) return;
  s.stopped = true;
  s.recheck_timer->cancel();
  if (s.loop) s.loop->Stop();
  boost::system::error_code ec;
  if (s.acceptor.is_open()) {
    s.acceptor.close(ec);
    ::unlink(s.paths.address.c_str());
  }
  for (auto& w : s.handshakes)
    if (auto h = w.lock()) h->Cancel();
  s.handshakes.clear();
}

namespace {

// The proxy the listener presents: loaded, verified as a startd would verify it.
struct Presented {
  credentials::SslContextPtr ctx;
  std::string pem;
  std::string identity;
};

Result<Presented> LoadPresented(const std::string& path,
                                const std::shared_ptr<const credentials::Verifier>& verifier) {
  auto cred = credentials::LoadProxyFile(path);
  if (!cred) return Fail(cred.error().Wrap("proxy " + path));
  auto id = verifier->Verify(cred->chain);
  if (!id) {
    // The verifier names the CA it comes from; how to give the agent another is added: the usual
    // case is a proxy of another grid (or an old one) in the default place.
    return Fail(id.error().code(),
                "proxy " + path + ": " + id.error().message() +
                    "; make one this agent trusts with `kite proxy init`, or name another in "
                    "[pool] proxy (config.toml)");
  }
  auto ctx = credentials::MakeServerContext(*cred, verifier);
  if (!ctx) return Fail(ctx.error().Wrap("proxy " + path));
  return Presented{*ctx, credentials::CredentialToPem(*cred), id->subject};
}

}  // namespace

// Loads (or reloads) the proxy and listens once it is usable. Each problem is logged once, until
// it changes or goes away.
void PoolTlsListener::Check() {
  State& s = *state_;
  if (s.stopped) return;
  Status st = Refresh();
  if (st && !listening()) st = Listen();
  if (!st && st.error().message() != s.problem) {
    // An expired proxy after a good one: new handshakes fail on the startds' side until it is
    // renewed; connected startds stay.
    spdlog::warn("agent: pool: {} glide-ins: {} (the local slots work; looking again every {} s)",
                 listening() ? "cannot renew the TLS credential for" : "no TLS listener for",
                 st.error().message(), s.recheck.count() / 1000.0);
  }
  s.problem = st ? "" : st.error().message();
  ArmRecheck();
}

// The trusted CAs (once) and the proxy (when it changed).
Status PoolTlsListener::Refresh() {
  State& s = *state_;
  if (!s.verifier) {
    std::string ca_dir = credentials::DefaultCaDir();
    if (ca_dir.empty())
      return Fail(ErrorCode::kNotFound, "no trusted-CA directory (set X509_CERT_DIR)");
    auto v = credentials::Verifier::Create({.ca_dir = ca_dir});
    if (!v) return Fail(v.error());
    s.verifier = *v;
  }
  auto p = LoadPresented(s.proxy_path, s.verifier);
  if (!p) return Fail(p.error());
  if (p->pem != s.proxy_pem) {
    if (s.ctx) spdlog::info("agent: pool: presenting the renewed proxy {}", s.proxy_path);
    s.ctx = p->ctx;
    s.proxy_pem = std::move(p->pem);
    s.own = std::move(p->identity);
  }
  return {};
}

void PoolTlsListener::ArmRecheck() {
  State& s = *state_;
  if (s.stopped) return;
  s.recheck_timer->expires_after(s.recheck);
  // Stop() (which the destructor calls) sets `stopped` first: then `this` is not used.
  s.recheck_timer->async_wait([this, weak = std::weak_ptr<State>(state_)](auto ec) {
    if (auto st = weak.lock(); !ec && st && !st->stopped) Check();
  });
}

namespace {

// The port in `path` (pool.port), or 0.
unsigned short RememberedPort(const std::string& path) {
  auto text = ReadFile(path, {.max_bytes = 64});
  auto port = text ? ParsePort(Trim(*text)) : std::nullopt;
  return static_cast<unsigned short>(port.value_or(0));
}

}  // namespace

boost::system::error_code PoolTlsListener::Bind(const boost::asio::ip::tcp::endpoint& ep) {
  State& s = *state_;
  boost::system::error_code ec;
  s.acceptor.open(ep.protocol(), ec);
  if (!ec) ::fcntl(s.acceptor.native_handle(), F_SETFD, FD_CLOEXEC);
  if (!ec) s.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(ep, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    boost::system::error_code ignored;
    s.acceptor.close(ignored);
  }
  return ec;
}

Status PoolTlsListener::Listen() {
  State& s = *state_;
  auto ep = ParsePoolListen(s.settings.listen, s.settings.allow_remote);
  if (!ep) return Fail(ep.error());
  boost::system::error_code ec;
  // Port 0: the port of the last run first, where glide-ins started then are dialling.
  if (unsigned short last = RememberedPort(s.paths.port); ep->port() == 0 && last) {
    ec = Bind(boost::asio::ip::tcp::endpoint(ep->address(), last));
    if (ec) {
      spdlog::warn(
          "agent: pool: port {} of the last run is taken ({}); glide-ins started before "
          "cannot reach this agent, a new port is picked",
          last, ec.message());
    }
  }
  if (!s.acceptor.is_open()) ec = Bind(*ep);
  if (ec) return Fail(ErrorCode::kIo, "listen on " + s.settings.listen + ": " + ec.message());
  std::string bound = Address(s.acceptor.local_endpoint());
  s.address = bound;
  if (auto st = WriteFileAtomic(s.paths.port,
                                std::to_string(s.acceptor.local_endpoint().port()) + "\n", 0600);
      !st) {
    spdlog::warn("agent: pool: cannot remember the port: {}", st.error().ToString());
  }
  if (auto st = WriteFileAtomic(s.paths.address, bound + "\n", 0600); !st) {
    s.acceptor.close(ec);
    return st;
  }
  s.loop = std::make_shared<AcceptLoop<tcp>>(
      s.acceptor, "agent: pool",
      AcceptLoop<tcp>::Limits{.per_peer = s.limits.per_peer, .total = s.limits.total},
      [weak = std::weak_ptr<State>(state_)](tcp::socket sock, PeerLimit::Slot slot) {
        auto st = weak.lock();
        if (!st || st->stopped) return;
        ::fcntl(sock.native_handle(), F_SETFD, FD_CLOEXEC);
        auto h = std::make_shared<Handshake>(st, std::move(sock), std::move(slot));
        std::erase_if(st->handshakes, [](const auto& w) { return w.expired(); });
        st->handshakes.push_back(h);
        h->Run();
      });
  s.loop->Start();
  spdlog::info("agent: pool: glide-ins dial tls:{} (presenting a proxy of {})", bound, s.own);
  return {};
}

}  // namespace kite::agent
