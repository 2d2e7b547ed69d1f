// CallbackServer: a Beast TLS listener and sessions, one io thread.
#include "gram/callback_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <mutex>
#include <thread>

#include "common/accept_loop.h"
#include "credentials/tls.h"

namespace kite::gram {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr auto kTimeout = std::chrono::seconds(60);

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, credentials::SslContextPtr ctx, const CallbackServerOptions& options,
          PeerLimit::Slot slot)
      : ctx_(std::move(ctx)),
        stream_(std::move(socket), *ctx_),
        options_(options),
        slot_(std::move(slot)) {}

  void Run() {
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(10));
    stream_.async_handshake(asio::ssl::stream_base::server,
                            [self = shared_from_this()](auto ec) { self->OnHandshake(ec); });
  }

 private:
  void OnHandshake(beast::error_code ec) {
    if (ec) return;
    auto id = credentials::PeerIdentity(stream_.native_handle());
    allowed_ =
        id && (options_.accepted_identity.empty() || id->subject == options_.accepted_identity);
    DoRead();
  }

  void DoRead() {
    parser_.emplace();
    parser_->body_limit(kMaxBodyBytes);
    beast::get_lowest_layer(stream_).expires_after(kTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](auto ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec) return;
    auto req = parser_->release();
    unsigned status = 200;
    std::string body = "{}";
    if (!allowed_) {
      status = 403;
      body = ToJson(ErrorReply{ErrorCode::kAuthFailed, "not the identity this server serves"});
    } else if (req[kProtocolHeader] != std::to_string(kProtocolVersion)) {
      status = 400;
      body = ToJson(ErrorReply{ErrorCode::kProtocol, "Kite-Protocol 1 required"});
    } else if (auto s = ParseJobStatus(req.body()); !s) {
      status = 400;
      body = ToJson(ErrorReply{ErrorCode::kInvalidInput, s.error().message()});
    } else if (options_.handler) {
      options_.handler(std::string(req.target()), *s);
    }
    res_.emplace(static_cast<http::status>(status), 11);
    res_->set(kProtocolHeader, std::to_string(kProtocolVersion));
    res_->set(http::field::content_type, "application/json");
    res_->body() = body;
    res_->keep_alive(req.keep_alive());
    res_->prepare_payload();
    http::async_write(stream_, *res_, [self = shared_from_this()](auto e, size_t) {
      if (!e && self->res_->keep_alive()) self->DoRead();
    });
  }

  credentials::SslContextPtr ctx_;  // kept while the connection lives
  beast::ssl_stream<beast::tcp_stream> stream_;
  const CallbackServerOptions& options_;
  PeerLimit::Slot slot_;  // this connection's share of its peer's limit
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> res_;
  bool allowed_ = false;
};

}  // namespace

struct CallbackServer::Impl {
  explicit Impl(CallbackServerOptions o) : options(std::move(o)), acceptor(io) {}

  void StartAccepting() {
    accept_loop = std::make_shared<AcceptLoop<tcp>>(
        acceptor, "callback server",
        AcceptLoop<tcp>::Limits{.per_peer = options.max_connections_per_peer},
        [this](tcp::socket s, PeerLimit::Slot slot) {
          std::make_shared<Session>(std::move(s), CurrentContext(), options, std::move(slot))
              ->Run();
        },
        [this] { return asio::any_io_executor(asio::make_strand(io)); });
    accept_loop->Start();
  }

  credentials::SslContextPtr CurrentContext() {
    std::lock_guard lock(mu);
    return ctx;
  }

  CallbackServerOptions options;
  asio::io_context io;
  std::mutex mu;
  credentials::SslContextPtr ctx;  // guarded by mu; what new connections use
  tcp::acceptor acceptor;
  std::shared_ptr<AcceptLoop<tcp>> accept_loop;
  std::thread thread;
};

CallbackServer::CallbackServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CallbackServer::~CallbackServer() {
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<std::unique_ptr<CallbackServer>> CallbackServer::Start(CallbackServerOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  auto ctx = credentials::MakeServerContext(impl->options.credential, impl->options.verifier);
  if (!ctx) return Fail(ctx.error());
  impl->ctx = *ctx;
  beast::error_code ec;
  auto addr = asio::ip::make_address(impl->options.listen_host, ec);
  if (ec) return Fail(ErrorCode::kInvalidInput, "listen address " + impl->options.listen_host);
  tcp::endpoint ep(addr, impl->options.port);
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Fail(ErrorCode::kIo, "callback server listen: " + ec.message());
  impl->StartAccepting();
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<CallbackServer>(new CallbackServer(std::move(impl)));
}

Status CallbackServer::SetCredential(const credentials::Credential& credential) {
  auto ctx = credentials::MakeServerContext(credential, impl_->options.verifier);
  if (!ctx) return Fail(ctx.error());
  std::lock_guard lock(impl_->mu);
  impl_->ctx = *ctx;
  return {};
}

uint16_t CallbackServer::port() const {
  return impl_->acceptor.local_endpoint().port();
}

std::string CallbackServer::Url(const std::string& path) const {
  return "https://" + impl_->options.listen_host + ":" + std::to_string(port()) + path;
}

}  // namespace kite::gram
