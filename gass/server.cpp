// The GASS server: its listener and the GassServer handle over the shared state.
#include "gass/server.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "common/accept_loop.h"
#include "gass/session.h"

namespace kite::gass {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// "HOST:PORT" or "[V6]:PORT".
Result<tcp::endpoint> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return Fail(ErrorCode::kInvalidInput, "listen address '" + listen + "' lacks :PORT");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  auto port = ParseDecimal(listen.substr(colon + 1));
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  if (ec || !port || *port > 65535) {
    return Fail(ErrorCode::kInvalidInput, "bad listen address '" + listen + "'");
  }
  return tcp::endpoint(addr, static_cast<uint16_t>(*port));
}

}  // namespace

// Accepts connections on its own strand; each accepted socket gets a new strand of its own.
class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(asio::io_context& io, std::shared_ptr<GassServer::State> state)
      : io_(io), acceptor_(asio::make_strand(io)), state_(std::move(state)) {}

  // Before any asynchronous work: binds and listens.
  Status Bind(const tcp::endpoint& ep) {
    boost::system::error_code ec;
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return Fail(ErrorCode::kUnavailable,
                  "listen on " + ep.address().to_string() + ": " + ec.message());
    }
    ::fcntl(acceptor_.native_handle(), F_SETFD, FD_CLOEXEC);
    return {};
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }

  void Start() {
    loop_ = std::make_shared<AcceptLoop<tcp>>(
        acceptor_, "gass",
        AcceptLoop<tcp>::Limits{.per_peer = state_->options.max_connections_per_peer},
        [weak = weak_from_this()](tcp::socket s, PeerLimit::Slot slot) {
          if (auto self = weak.lock()) self->OnAccept(std::move(s), std::move(slot));
        },
        [&io = io_] { return asio::any_io_executor(asio::make_strand(io)); });
    loop_->Start();
  }

  void Close() {
    asio::post(acceptor_.get_executor(), [self = shared_from_this()] {
      if (self->loop_) self->loop_->Stop();
      boost::system::error_code ec;
      self->acceptor_.close(ec);
    });
  }

 private:
  void OnAccept(tcp::socket socket, PeerLimit::Slot slot) {
    boost::system::error_code ec;
    ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);
    socket.set_option(tcp::no_delay(true), ec);
    auto session = std::make_shared<Session>(std::move(socket), state_, std::move(slot));
    if (Register(session)) {
      state_->connections.fetch_add(1, std::memory_order_relaxed);
      session->Start();
    }
  }

  bool Register(const std::shared_ptr<Session>& session) {
    std::lock_guard lock(state_->mu);
    if (state_->closed) return false;
    std::erase_if(state_->sessions, [](const auto& w) { return w.expired(); });
    state_->sessions.push_back(session);
    return true;
  }

  asio::io_context& io_;
  tcp::acceptor acceptor_;
  std::shared_ptr<GassServer::State> state_;
  std::shared_ptr<AcceptLoop<tcp>> loop_;
};

Result<std::unique_ptr<GassServer>> GassServer::Create(asio::io_context& io,
                                                       GassServerOptions options) {
  if (!options.verifier) return Fail(ErrorCode::kInvalidInput, "GASS server needs a verifier");
  auto ep = ParseListen(options.listen);
  if (!ep) return Fail(ep.error());
  auto ssl = credentials::MakeServerContext(options.credential, options.verifier);
  if (!ssl) return Fail(ssl.error().Wrap("GASS server TLS"));
  auto state = std::make_shared<State>();
  state->options = std::move(options);
  state->ssl_now = *ssl;
  state->listener = std::make_shared<Listener>(io, state);
  if (auto st = state->listener->Bind(*ep); !st) return Fail(st.error());
  state->port = state->listener->port();
  std::string host = ep->address().to_string();
  state->host = ep->address().is_v6() ? "[" + host + "]" : host;
  state->listener->Start();
  spdlog::info("gass: serving on https://{}:{}", state->host, state->port);
  return std::unique_ptr<GassServer>(new GassServer(std::move(state)));
}

GassServer::~GassServer() {
  Close();
}

uint16_t GassServer::port() const {
  return state_->port;
}

std::string GassServer::url() const {
  return "https://" + state_->host + ":" + std::to_string(state_->port);
}

Status GassServer::AddJob(std::string job_id, std::string allowed_identity,
                          std::vector<ReadableFile> readable, std::vector<WritableFile> writable) {
  return state_->jobs.Add(std::move(job_id), std::move(allowed_identity), std::move(readable),
                          std::move(writable));
}

Status GassServer::SetCredential(const credentials::Credential& credential) {
  auto ssl = credentials::MakeServerContext(credential, state_->options.verifier);
  if (!ssl) return Fail(ssl.error().Wrap("GASS server TLS"));
  std::lock_guard lock(state_->mu);
  state_->ssl_now = *ssl;
  return {};
}

bool GassServer::RemoveJob(const std::string& job_id) {
  return state_->jobs.Remove(job_id);
}

void GassServer::Close() {
  std::vector<std::weak_ptr<Session>> sessions;
  {
    std::lock_guard lock(state_->mu);
    if (state_->closed) return;
    state_->closed = true;
    sessions.swap(state_->sessions);
  }
  // The listener holds the state and the state the listener: break the cycle once closed.
  std::shared_ptr<Listener> listener = std::move(state_->listener);
  if (listener) listener->Close();
  for (auto& w : sessions) {
    if (auto s = w.lock()) s->Stop();
  }
}

GassServerStats GassServer::stats() const {
  return {state_->connections.load(), state_->requests.load(), state_->refused.load()};
}

}  // namespace kite::gass
