// One HTTP/1.1 connection served with Boost.Beast, for any stream socket (the agent's Unix socket
// and the REST endpoint's TCP socket share it).
//
// A session reads a request, hands it to a handler (a function of the request, callable without a
// socket) and writes the handler's reply, keeping the connection open for the next request. Every
// read and write has a timeout; headers and bodies are bounded; a request that cannot be read is
// answered with a 4xx and the connection closed. Runs on the agent's single thread.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace kite::agent {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
// Answers a request through `reply`, at once or later (a long poll). A reply that carries a
// Content-Length already (a HEAD answer) is sent as it is; any other gets one from its body.
using HttpHandler =
    std::function<void(const HttpRequest& req, std::function<void(HttpResponse)> reply)>;

struct HttpLimits {
  std::chrono::seconds idle{300};  // silence allowed while reading or writing
  size_t max_header = 8192;        // bytes of request line and headers
  size_t max_body = 1 << 20;       // bytes of request body
};

// The answer to a request that could not be read: 431 (headers too large), 413 (body too large)
// or 400, with {"error": "..."}; the connection closes after it.
HttpResponse MalformedRequestReply(boost::system::error_code ec);

template <class Socket>
class HttpSession : public std::enable_shared_from_this<HttpSession<Socket>> {
 public:
  HttpSession(Socket socket, HttpLimits limits, HttpHandler handler)
      : socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        limits_(limits),
        handler_(std::move(handler)) {}

  void Start() { DoRead(); }

 private:
  void DoRead() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(limits_.max_header));
    parser_->body_limit(limits_.max_body);
    Arm();
    boost::beast::http::async_read(
        socket_, buffer_, *parser_,
        [self = this->shared_from_this()](auto ec, size_t) { self->OnRead(ec); });
  }

  void Arm() {
    timer_.expires_after(limits_.idle);
    timer_.async_wait([self = this->shared_from_this()](auto ec) {
      if (!ec) self->socket_.close();
    });
  }

  void OnRead(boost::system::error_code ec) {
    namespace http = boost::beast::http;
    timer_.cancel();
    if (ec == http::error::end_of_stream || ec == boost::asio::error::eof) return;
    if (ec == boost::asio::error::operation_aborted || !socket_.is_open()) return;
    if (ec) {
      auto res = MalformedRequestReply(ec);
      res.keep_alive(false);
      res.prepare_payload();
      return Write(std::move(res));
    }
    auto req = parser_->release();
    bool keep = req.keep_alive();
    handler_(req, [self = this->shared_from_this(), keep](HttpResponse res) {
      res.keep_alive(keep);
      if (!res.has_content_length()) res.prepare_payload();
      self->Write(std::move(res));
    });
  }

  void Write(HttpResponse res) {
    res_ = std::make_shared<HttpResponse>(std::move(res));
    Arm();
    boost::beast::http::async_write(socket_, *res_,
                                    [self = this->shared_from_this()](auto ec, size_t) {
                                      self->timer_.cancel();
                                      if (ec || !self->res_->keep_alive()) {
                                        boost::system::error_code ignored;
                                        self->socket_.shutdown(Socket::shutdown_both, ignored);
                                        return;
                                      }
                                      self->DoRead();
                                    });
  }

  Socket socket_;
  boost::asio::steady_timer timer_;
  HttpLimits limits_;
  HttpHandler handler_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::shared_ptr<HttpResponse> res_;
};

}  // namespace kite::agent
