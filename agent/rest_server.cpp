// The REST endpoint's listener.
#include "agent/rest_server.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>

#include <charconv>

#include "agent/agent.h"
#include "agent/http_session.h"
#include "agent/rest.h"
#include "common/accept_guard.h"
#include "common/accept_loop.h"
#include "common/files.h"

namespace kite::agent {
namespace {

using tcp = boost::asio::ip::tcp;

// Monitoring clients and the status page ask small questions; nothing may hold a connection long.
// A request (its line and headers, and a body) must be in within 10 s of the first byte asked
// for, however slowly it trickles.
HttpLimits RestLimits() {
  HttpLimits l;
  l.idle = std::chrono::seconds(30);
  l.request = std::chrono::seconds(10);
  l.max_header = 8192;
  l.max_body = 64 << 10;
  return l;
}

// Connections open at once; more wait in the kernel's backlog until one closes. Of them, at most
// kMaxWaiting wait for a request (the oldest is closed for a new one), so connections that send
// nothing never keep a client out; and one address may hold kMaxSessionsPerPeer connections
// that have sent the token (counted after authentication: all local users share 127.0.0.1).
constexpr size_t kMaxSessions = 1024;
constexpr size_t kMaxWaiting = 128;
constexpr size_t kMaxSessionsPerPeer = 64;

// What one connection holds: its place among its address's authenticated connections.
struct RestConnection {
  std::string peer;
  PeerLimit::Slot authenticated;
};

}  // namespace

Result<std::unique_ptr<RestServer>> StartRestServer(Agent& agent) {
  const AgentOptions& o = agent.options();
  auto endpoint = ParseListenAddress(o.rest_listen, o.rest_allow_remote);
  if (!endpoint)
    return Fail(ErrorCode::kInvalidInput,
                "REST endpoint " + o.rest_listen + ": " + endpoint.error().message());
  auto token = LoadOrCreateRestToken(o.rest_token_path());
  if (!token) return Fail(token.error());
  auto server = std::make_unique<RestServer>(agent, std::move(*token));
  if (auto st = server->Listen(*endpoint); !st) return Fail(st.error());
  auto bound = server->local_endpoint();
  std::string host = bound.address().to_string();
  if (bound.address().is_v6()) host = "[" + host + "]";
  std::string url = "http://" + host + ":" + std::to_string(bound.port()) + "/";
  if (auto st = WriteFileAtomic(o.rest_address_path(), url + "\n", 0600); !st)
    return Fail(st.error());
  spdlog::info("agent: REST status endpoint at {} (token in {})", url, o.rest_token_path());
  return server;
}

RestServer::RestServer(Agent& agent, std::string token)
    : agent_(agent),
      service_(std::make_unique<RestService>(agent, std::move(token))),
      acceptor_(agent.io()),
      roster_(std::make_shared<IdleRoster>(kMaxWaiting)),
      peers_(std::make_shared<PeerLimit>(kMaxSessionsPerPeer)) {}

RestServer::~RestServer() = default;

Status RestServer::Listen(const tcp::endpoint& endpoint) {
  boost::system::error_code ec;
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) ::fcntl(acceptor_.native_handle(), F_SETFD, FD_CLOEXEC);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(512, ec);
  if (ec) {
    std::string where = endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
    return Fail(ErrorCode::kIo, "REST endpoint: listen on " + where + ": " + ec.message());
  }
  DoAccept();
  return {};
}

void RestServer::Close() {
  if (loop_) loop_->Stop();
  boost::system::error_code ec;
  acceptor_.close(ec);
}

tcp::endpoint RestServer::local_endpoint() const {
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec);
}

void RestServer::DoAccept() {
  RestService* service = service_.get();
  auto roster = roster_;
  auto peers = peers_;
  loop_ = std::make_shared<AcceptLoop<tcp>>(
      acceptor_, "agent: REST endpoint", AcceptLoop<tcp>::Limits{.total = kMaxSessions},
      [service, roster, peers](tcp::socket socket, PeerLimit::Slot slot) {
        boost::system::error_code ec;
        ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);
        socket.set_option(tcp::no_delay(true), ec);
        auto conn = std::make_shared<RestConnection>();
        auto ep = socket.remote_endpoint(ec);
        conn->peer = ec ? "" : ep.address().to_string();
        // The slots go when the session (and so the connection) is destroyed.
        auto handler = [service, peers, conn, slot](const HttpRequest& req,
                                                    std::function<void(HttpResponse)> reply) {
          if (!conn->authenticated && service->Authenticated(req)) {
            conn->authenticated = peers->Admit(conn->peer);
            if (!conn->authenticated) {
              HttpResponse res{boost::beast::http::status::service_unavailable, 11};
              res.set(boost::beast::http::field::content_type, "application/json");
              res.body() = "{\"error\":\"too many connections from " + conn->peer + " (" +
                           std::to_string(kMaxSessionsPerPeer) + ")\"}\n";
              res.keep_alive(false);
              return reply(std::move(res));
            }
          }
          service->Handle(req, reply);
        };
        std::make_shared<HttpSession<tcp::socket>>(std::move(socket), RestLimits(), handler, roster)
            ->Start();
      });
  loop_->Start();
}

}  // namespace kite::agent
