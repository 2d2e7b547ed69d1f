// Beast listener and sessions on the agent's Unix socket.
#include "agent/api_server.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>

#include "agent/agent.h"
#include "agent/api.h"

namespace kite::agent {
namespace {

namespace http = boost::beast::http;
using Socket = boost::asio::local::stream_protocol::socket;

constexpr auto kIdleTimeout = std::chrono::seconds(300);
constexpr size_t kMaxBody = 256u << 20;  // a 10,000-job cluster is well under 1 MB

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Agent& agent, Socket socket)
      : agent_(agent), socket_(std::move(socket)), timer_(socket_.get_executor()) {}

  void DoRead() {
    parser_.emplace();
    parser_->body_limit(kMaxBody);
    Arm();
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](auto ec, size_t) { self->OnRead(ec); });
  }

 private:
  void Arm() {
    timer_.expires_after(kIdleTimeout);
    timer_.async_wait([self = shared_from_this()](auto ec) {
      if (!ec) self->socket_.close();
    });
  }

  void OnRead(boost::system::error_code ec) {
    timer_.cancel();
    if (ec == http::error::end_of_stream || ec == boost::asio::error::eof) return;
    if (ec) {
      // A request we could not read (malformed, too large): say so, then close.
      ApiResponse res{http::status::bad_request, 11};
      res.set(http::field::content_type, "application/json");
      res.body() = "{\"error\":\"malformed request: " + ec.message() + "\"}";
      res.keep_alive(false);
      Write(std::move(res));
      return;
    }
    auto req = parser_->release();
    bool keep = req.keep_alive();
    HandleApiRequest(agent_, req, [self = shared_from_this(), keep](ApiResponse res) {
      res.keep_alive(keep);
      res.prepare_payload();
      self->Write(std::move(res));
    });
  }

  void Write(ApiResponse res) {
    res_ = std::make_shared<ApiResponse>(std::move(res));
    Arm();
    http::async_write(socket_, *res_, [self = shared_from_this()](auto ec, size_t) {
      self->timer_.cancel();
      if (ec || !self->res_->keep_alive()) {
        boost::system::error_code ignored;
        self->socket_.shutdown(Socket::shutdown_both, ignored);
        return;
      }
      self->DoRead();
    });
  }

  Agent& agent_;
  Socket socket_;
  boost::asio::steady_timer timer_;
  boost::beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<ApiResponse> res_;
};

}  // namespace

ApiServer::ApiServer(Agent& agent) : agent_(agent), acceptor_(agent.io()) {}
ApiServer::~ApiServer() = default;

Status ApiServer::Listen(const std::string& path) {
  path_ = path;
  ::unlink(path.c_str());
  boost::system::error_code ec;
  boost::asio::local::stream_protocol::endpoint ep(path);
  mode_t old = ::umask(0077);  // the socket is the user's alone
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.bind(ep, ec);
  ::umask(old);
  if (!ec) ::fcntl(acceptor_.native_handle(), F_SETFD, FD_CLOEXEC);
  if (!ec) acceptor_.listen(512, ec);
  if (ec) return Fail(ErrorCode::kIo, "listen on " + path + ": " + ec.message());
  ::chmod(path.c_str(), 0600);
  DoAccept();
  return {};
}

void ApiServer::Close() {
  boost::system::error_code ec;
  acceptor_.close(ec);
}

void ApiServer::DoAccept() {
  acceptor_.async_accept([this](boost::system::error_code ec, Socket socket) {
    if (ec == boost::asio::error::operation_aborted) return;
    if (!ec) {
      ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);
      std::make_shared<Session>(agent_, std::move(socket))->DoRead();
    }
    DoAccept();
  });
}

}  // namespace kite::agent
