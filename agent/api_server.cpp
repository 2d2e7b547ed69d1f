// Beast listener on the agent's Unix socket; sessions are agent/http_session.h's.
#include "agent/api_server.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>

#include "agent/agent.h"
#include "agent/api.h"
#include "agent/http_session.h"
#include "common/accept_loop.h"
#include "common/unix_socket_path.h"

namespace kite::agent {

HttpResponse MalformedRequestReply(boost::system::error_code ec) {
  namespace http = boost::beast::http;
  auto status = http::status::bad_request;
  if (ec == http::error::header_limit) status = http::status::request_header_fields_too_large;
  if (ec == http::error::body_limit) status = http::status::payload_too_large;
  HttpResponse res{status, 11};
  res.set(http::field::content_type, "application/json");
  boost::json::object o;
  o["error"] = "malformed request: " + ec.message();
  res.body() = boost::json::serialize(o) + "\n";
  return res;
}

namespace {

using Socket = boost::asio::local::stream_protocol::socket;

// The CLI's requests: a 10,000-job cluster is well under 1 MB, and a cluster of kMaxJobsPerSubmit
// jobs with long per-job arguments fits in kMaxApiBody; a long poll may be silent a while.
HttpLimits ApiLimits() {
  HttpLimits l;
  l.idle = std::chrono::seconds(300);
  l.max_header = 64 << 10;
  l.max_body = kMaxApiBody;
  return l;
}

// The user at the other end of the socket, by the kernel's word (SO_PEERCRED), not the
// client's: the name of its uid, or the number when the password database has none; empty if
// the kernel will not say. Looked up once per connection, at accept.
std::string PeerUser(int fd) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred) return "";
  return UserNameOf(cred.uid);
}

}  // namespace

ApiServer::ApiServer(Agent& agent) : agent_(agent), acceptor_(agent.io()) {}
ApiServer::~ApiServer() = default;

Status ApiServer::Listen(const std::string& path) {
  path_ = path;
  if (auto st = ListenPrivate(acceptor_, path, 512); !st) return st;
  DoAccept();
  return {};
}

void ApiServer::Close() {
  if (loop_) loop_->Stop();
  boost::system::error_code ec;
  acceptor_.close(ec);
}

void ApiServer::DoAccept() {
  Agent& agent = agent_;
  // Connections waiting for a request hold at most a quarter of the agent's descriptors: past
  // that (or when accepting finds none left) the one idle longest is closed, so the owner's next
  // `kite` command always gets in (docs/architecture.md, the API).
  rlimit lim{};
  size_t files = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY
                     ? static_cast<size_t>(lim.rlim_cur)
                     : 65536;
  auto roster = std::make_shared<IdleRoster>(std::max<size_t>(16, files / 4));
  loop_ = std::make_shared<AcceptLoop<boost::asio::local::stream_protocol>>(
      acceptor_, "agent: API", AcceptLoop<boost::asio::local::stream_protocol>::Limits{},
      [&agent, roster](Socket socket, PeerLimit::Slot) {
        ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);
        auto handler = [&agent, caller = PeerUser(socket.native_handle())](
                           const HttpRequest& req, std::function<void(HttpResponse)> reply) {
          ApiRequest api(req);
          api.caller = caller;
          HandleApiRequest(agent, api, std::move(reply));
        };
        std::make_shared<HttpSession<Socket>>(std::move(socket), ApiLimits(), handler, roster)
            ->Start();
      });
  loop_->OnExhausted([roster] { return roster->EvictOldest(); });
  loop_->Start();
}

}  // namespace kite::agent
