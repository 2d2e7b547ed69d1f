// JmServer: Beast sessions on the job manager's Unix socket.
#include "gram/jm_server.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <chrono>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "common/accept_loop.h"
#include "common/unix_socket_path.h"

namespace kite::gram {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using Stream = beast::basic_stream<boost::asio::local::stream_protocol>;

constexpr auto kIdleTimeout = std::chrono::seconds(600);

// The gatekeeper says until when the identity it verified is valid: no request is served past
// it, whatever path it took to get here.
Status CheckIdentityExpiry(std::string_view header) {
  if (header.empty()) return {};
  int64_t until = 0;
  auto [end, ec] = std::from_chars(header.data(), header.data() + header.size(), until);
  if (ec != std::errc() || end != header.data() + header.size())
    return Fail(ErrorCode::kInvalidInput, "malformed " + std::string(kIdentityExpiresHeader));
  auto now = std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  if (now >= until) return Fail(ErrorCode::kProxyExpired, "the client's credential has expired");
  return {};
}

class JmSession : public std::enable_shared_from_this<JmSession> {
 public:
  JmSession(JobManager& jm, boost::asio::local::stream_protocol::socket s)
      : jm_(jm), stream_(std::move(s)) {}

  void DoRead() {
    parser_.emplace();
    parser_->body_limit(kMaxBodyBytes);
    stream_.expires_after(kIdleTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](auto ec, size_t) { self->OnRead(ec); });
  }

 private:
  void OnRead(beast::error_code ec) {
    if (ec) {
      if (ec == http::error::end_of_stream || ec == beast::error::timeout) return;
      Write(http::status::bad_request,
            ToJson(ErrorReply{ErrorCode::kInvalidInput, "malformed request: " + ec.message()}),
            false);
      return;
    }
    auto req = parser_->release();
    if (auto st = CheckIdentityExpiry(req[kIdentityExpiresHeader]); !st) {
      Write(static_cast<http::status>(HttpStatusFor(st.error().code())),
            ToJson(ErrorReply{st.error().code(), st.error().message()}), false);
      return;
    }
    Request r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    r.identity = std::string(req[kIdentityHeader]);
    r.contact_base = std::string(req["Kite-Contact-Base"]);
    r.body = std::move(req.body());
    bool keep = req.keep_alive();
    jm_.Handle(r, [self = shared_from_this(), keep](Response res) {
      if (res.drop) {  // fault injection: the reply is lost
        self->stream_.socket().close();
        return;
      }
      self->Write(static_cast<http::status>(res.status), std::move(res.body), keep);
    });
  }

  void Write(http::status status, std::string body, bool keep) {
    res_.emplace(status, 11);
    res_->set(kProtocolHeader, std::to_string(kProtocolVersion));
    res_->set(http::field::content_type, "application/json");
    res_->body() = std::move(body);
    res_->keep_alive(keep);
    res_->prepare_payload();
    http::async_write(stream_, *res_, [self = shared_from_this()](auto ec, size_t) {
      if (!ec && self->res_->keep_alive()) self->DoRead();
    });
  }

  JobManager& jm_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> res_;
};

}  // namespace

JmServer::JmServer(boost::asio::io_context& io, JobManager& jm) : jm_(jm), acceptor_(io) {}

Status JmServer::Listen(const std::string& path) {
  ::unlink(path.c_str());
  auto addr = UnixSocketPath::For(path);
  if (!addr) return Fail(addr.error());
  boost::system::error_code ec;
  boost::asio::local::stream_protocol::endpoint ep(addr->address());
  mode_t old = ::umask(0077);  // the socket is the account's (and root's) alone
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.bind(ep, ec);
  ::umask(old);
  if (!ec) ::fcntl(acceptor_.native_handle(), F_SETFD, FD_CLOEXEC);
  if (!ec) acceptor_.listen(512, ec);
  if (ec) return Fail(ErrorCode::kIo, "listen on " + path + ": " + ec.message());
  DoAccept();
  return {};
}

void JmServer::Close() {
  if (loop_) loop_->Stop();
  boost::system::error_code ec;
  acceptor_.close(ec);
}

void JmServer::DoAccept() {
  JobManager& jm = jm_;
  loop_ = std::make_shared<AcceptLoop<boost::asio::local::stream_protocol>>(
      acceptor_, "job manager", AcceptLoop<boost::asio::local::stream_protocol>::Limits{},
      [&jm](boost::asio::local::stream_protocol::socket s, PeerLimit::Slot) {
        ::fcntl(s.native_handle(), F_SETFD, FD_CLOEXEC);
        std::make_shared<JmSession>(jm, std::move(s))->DoRead();
      });
  loop_->Start();
}

}  // namespace kite::gram
