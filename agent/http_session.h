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
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace kite::agent {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
// Answers a request through `reply`, at once or later (a long poll). A reply that carries a
// Content-Length already (a HEAD answer) is sent as it is; any other gets one from its body.
using HttpHandler =
    std::function<void(const HttpRequest& req, std::function<void(HttpResponse)> reply)>;

struct HttpLimits {
  std::chrono::seconds idle{300};   // a reply must go out within it, and a request arrive
  std::chrono::seconds request{0};  // when set: a whole request must arrive within it instead
  size_t max_header = 8192;         // bytes of request line and headers
  size_t max_body = 1 << 20;        // bytes of request body
};

// The sessions waiting for a request (a new connection, or one kept alive between requests),
// oldest first, at most `cap`: one more closes the oldest. So whoever opens connections and
// sends nothing (or a header line now and then) holds at most `cap` of them, and a client that
// sends its request at once is always served. Used on one thread.
class IdleRoster {
 public:
  using Entry = std::list<std::function<void()>>::iterator;
  explicit IdleRoster(size_t cap) : cap_(cap) {}
  // `close` ends the session; it is called at most once, after the entry is gone.
  Entry Add(std::function<void()> close) {
    while (cap_ > 0 && waiting_.size() >= cap_) EvictOldest();
    waiting_.push_back(std::move(close));
    return std::prev(waiting_.end());
  }
  void Remove(Entry e) { waiting_.erase(e); }
  // Closes the session that has waited longest; false when none waits.
  bool EvictOldest() {
    if (waiting_.empty()) return false;
    auto close = std::move(waiting_.front());
    waiting_.pop_front();
    ++evicted_;
    close();
    return true;
  }
  size_t size() const { return waiting_.size(); }
  size_t evicted() const { return evicted_; }

 private:
  size_t cap_;
  std::list<std::function<void()>> waiting_;
  size_t evicted_ = 0;
};

// The answer to a request that could not be read: 431 (headers too large), 413 (body too large)
// or 400, with {"error": "..."}; the connection closes after it.
HttpResponse MalformedRequestReply(boost::system::error_code ec);

template <class Socket>
class HttpSession : public std::enable_shared_from_this<HttpSession<Socket>> {
 public:
  // `roster` (may be null): where the session waits for each request (IdleRoster).
  HttpSession(Socket socket, HttpLimits limits, HttpHandler handler,
              std::shared_ptr<IdleRoster> roster = nullptr)
      : socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        limits_(limits),
        handler_(std::move(handler)),
        roster_(std::move(roster)) {}

  void Start() { DoRead(); }

 private:
  void DoRead() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(limits_.max_header));
    parser_->body_limit(limits_.max_body);
    if (roster_) {
      waiting_ = roster_->Add([weak = this->weak_from_this()] {
        if (auto self = weak.lock()) {
          self->waiting_.reset();
          boost::system::error_code ignored;
          self->socket_.close(ignored);
        }
      });
    }
    Arm(limits_.request.count() > 0 ? limits_.request : limits_.idle);
    boost::beast::http::async_read(
        socket_, buffer_, *parser_,
        [self = this->shared_from_this()](auto ec, size_t) { self->OnRead(ec); });
  }

  void Arm(std::chrono::seconds within) {
    timer_.expires_after(within);
    timer_.async_wait([self = this->shared_from_this()](auto ec) {
      if (!ec) self->socket_.close();
    });
  }

  void OnRead(boost::system::error_code ec) {
    namespace http = boost::beast::http;
    timer_.cancel();
    if (waiting_) roster_->Remove(*std::exchange(waiting_, std::nullopt));
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
      // A handler may close the connection after its reply; it never keeps one the client ends.
      res.keep_alive(keep && res.keep_alive());
      if (!res.has_content_length()) res.prepare_payload();
      self->Write(std::move(res));
    });
  }

  void Write(HttpResponse res) {
    res_ = std::make_shared<HttpResponse>(std::move(res));
    Arm(limits_.idle);
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
  std::shared_ptr<IdleRoster> roster_;
  std::optional<IdleRoster::Entry> waiting_;  // its place in the roster while it waits
};

}  // namespace kite::agent
