// Gatekeeper: TLS listener, sessions that authenticate, map and forward, and the job manager
// launcher.
#include "gram/gatekeeper.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>

#include "common/accept_loop.h"
#include "common/files.h"
#include "common/spawn.h"
#include "common/unix_socket_path.h"
#include "credentials/gridmap.h"
#include "credentials/tls.h"
#include "gram/batch/batch_adapter.h"
#include "gram/fault.h"
#include "gram/job_manager_options.h"
#include "gram/protocol.h"

namespace kite::gram {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Upstream = beast::basic_stream<asio::local::stream_protocol>;

constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
constexpr auto kUpstreamTimeout = std::chrono::seconds(60);
constexpr auto kConnectRetry = std::chrono::milliseconds(25);
constexpr int kConnectAttempts = 400;  // 10 s for a job manager to come up
constexpr auto kRestartGap = std::chrono::seconds(2);

}  // namespace

struct Gatekeeper::Impl {
  explicit Impl(GatekeeperOptions o) : options(std::move(o)), acceptor(io) {}

  Result<std::string> MapAccount(const std::string& subject);
  Status EnsureJobManager(const std::string& account);
  Result<pid_t> SpawnJobManager(const std::string& account);
  std::string SocketPath(const std::string& account) const {
    return options.state_dir + "/users/" + account + "/jm.sock";
  }
  std::string ContactBase() const {
    return "https://" +
           (options.contact_host.empty() ? options.listen_host : options.contact_host) + ":" +
           std::to_string(acceptor.local_endpoint().port());
  }
  void StartAccepting();

  GatekeeperOptions options;
  asio::io_context io;
  credentials::SslContextPtr ctx;
  tcp::acceptor acceptor;
  std::shared_ptr<AcceptLoop<tcp>> accept_loop;
  std::vector<std::thread> threads;

  std::mutex gridmap_mu;
  credentials::GridMap gridmap;      // guarded by gridmap_mu
  struct timespec gridmap_mtime {};  // guarded by gridmap_mu, as the two below
  ino_t gridmap_ino = 0;
  off_t gridmap_size = -1;

  std::mutex jm_mu;
  std::map<std::string, std::chrono::steady_clock::time_point> jm_started;  // guarded by jm_mu
  std::vector<pid_t> jm_pids;                                               // guarded by jm_mu
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Gatekeeper::Impl& gk, tcp::socket socket, PeerLimit::Slot slot)
      : gk_(gk),
        slot_(std::move(slot)),
        stream_(std::move(socket), *gk.ctx),
        upstream_(stream_.get_executor()),
        retry_(stream_.get_executor()) {}

  void Run() {
    beast::get_lowest_layer(stream_).expires_after(kHandshakeTimeout);
    stream_.async_handshake(asio::ssl::stream_base::server,
                            [self = shared_from_this()](auto ec) { self->OnHandshake(ec); });
  }

 private:
  void OnHandshake(beast::error_code ec) {
    if (ec) {
      std::string why = credentials::PeerVerifyError(stream_.native_handle());
      spdlog::info("TLS handshake refused: {}", why.empty() ? ec.message() : why);
      return;
    }
    auto id = credentials::PeerIdentity(stream_.native_handle());
    if (!id) {
      refusal_ = id.error();
    } else {
      identity_ = id->subject;
      not_after_ = id->not_after;
      expires_ = std::to_string(
          std::chrono::duration_cast<std::chrono::seconds>(id->not_after.time_since_epoch())
              .count());
    }
    DoRead();
  }

  // Every request is authorised anew: the identity must still be within its validity and still
  // mapped by the grid-mapfile as it is now. A connection outlives neither.
  Status Authorise() {
    if (!refusal_.message().empty()) return Fail(refusal_);
    if (std::chrono::system_clock::now() >= not_after_) {
      return Fail(ErrorCode::kProxyExpired,
                  "the credential of " + identity_ + " expired during this connection");
    }
    auto account = gk_.MapAccount(identity_);
    if (!account) return Fail(account.error());
    if (*account != account_) {
      upstream_.close();  // mapped to another account now: talk to that one's job manager
      account_ = *account;
    }
    return {};
  }

  void DoRead() {
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    parser_->body_limit(kMaxBodyBytes);
    // An idle connection is closed when its identity expires, if that comes first.
    auto idle =
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(gk_.options.idle_timeout);
    if (refusal_.message().empty()) {
      auto left = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          not_after_ - std::chrono::system_clock::now());
      idle = std::clamp(left, std::chrono::steady_clock::duration(0), idle);
    }
    beast::get_lowest_layer(stream_).expires_after(idle);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](auto ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == asio::ssl::error::stream_truncated ||
        ec == beast::error::timeout || ec == asio::error::operation_aborted) {
      return Close();
    }
    if (ec == http::error::body_limit || ec == http::error::header_limit) {
      return Reply(http::status::payload_too_large, ErrorCode::kInvalidInput,
                   "request larger than the protocol's limit (1 MiB body, 16 KiB headers)", true);
    }
    if (ec) {
      return Reply(http::status::bad_request, ErrorCode::kInvalidInput,
                   "malformed HTTP request: " + ec.message(), true);
    }
    req_ = parser_->release();
    keep_alive_ = req_.keep_alive();
    std::string version(req_[kProtocolHeader]);
    if (version != std::to_string(kProtocolVersion)) {
      return Reply(http::status::bad_request, ErrorCode::kProtocol,
                   "protocol version mismatch: this site speaks Kite-Protocol " +
                       std::to_string(kProtocolVersion) + ", the request says '" + version + "'",
                   false);
    }
    if (auto st = Authorise(); !st) {
      bool close = st.error().code() != ErrorCode::kUnavailable;
      return Reply(static_cast<http::status>(HttpStatusFor(st.error().code())), st.error().code(),
                   st.error().message(), close);
    }
    if (FaultFires(Fault::kGatekeeperDropBeforeForward)) return Close();
    // The identity headers are ours alone: drop any the client sent.
    req_.erase(kIdentityHeader);
    req_.erase(kIdentityExpiresHeader);
    req_.set(kIdentityHeader, identity_);
    req_.set(kIdentityExpiresHeader, expires_);
    req_.set("Kite-Contact-Base", gk_.ContactBase());
    req_.keep_alive(true);
    attempts_ = 0;
    resent_ = false;
    if (upstream_.socket().is_open()) return WriteUpstream();
    ConnectUpstream();
  }

  void ConnectUpstream() {
    auto addr = UnixSocketPath::For(gk_.SocketPath(account_));
    if (!addr) {
      return Reply(http::status::internal_server_error, ErrorCode::kInternal,
                   addr.error().message(), false);
    }
    asio::local::stream_protocol::endpoint ep(addr->address());
    auto held = std::make_shared<UnixSocketPath>(std::move(*addr));
    upstream_.expires_after(std::chrono::seconds(5));
    upstream_.async_connect(ep, [self = shared_from_this(), held](auto ec) {
      (void)held;  // the address's directory stays open until connected
      self->OnConnect(ec);
    });
  }

  void OnConnect(beast::error_code ec) {
    if (!ec) return WriteUpstream();
    upstream_.close();
    if (++attempts_ >= kConnectAttempts) {
      return Reply(http::status::service_unavailable, ErrorCode::kUnavailable,
                   "the job manager for account " + account_ + " does not start", false);
    }
    if (auto st = gk_.EnsureJobManager(account_); !st) {
      return Reply(static_cast<http::status>(HttpStatusFor(st.error().code())), st.error().code(),
                   st.error().message(), false);
    }
    retry_.expires_after(kConnectRetry);
    retry_.async_wait([self = shared_from_this()](auto) { self->ConnectUpstream(); });
  }

  void WriteUpstream() {
    upstream_.expires_after(kUpstreamTimeout);
    http::async_write(upstream_, req_,
                      [self = shared_from_this()](auto ec, size_t) { self->OnUpstreamWrite(ec); });
  }

  void OnUpstreamWrite(beast::error_code ec) {
    if (ec) {
      upstream_.close();
      // A kept-alive connection to a job manager that has since died: reconnect (and restart it)
      // once. Resending is safe: mutations carry request ids.
      if (!resent_) {
        resent_ = true;
        return ConnectUpstream();
      }
      return Reply(http::status::bad_gateway, ErrorCode::kUnavailable,
                   "the job manager did not take the request", false);
    }
    up_parser_.emplace();
    up_parser_->body_limit(64u << 20);
    up_buffer_.clear();
    http::async_read(upstream_, up_buffer_, *up_parser_,
                     [self = shared_from_this()](auto e, size_t) { self->OnUpstreamRead(e); });
  }

  void OnUpstreamRead(beast::error_code ec) {
    if (ec) {
      // The job manager may have acted on the request: the reply is lost, as on any network. The
      // client resends with the same request id and gets the stored result.
      spdlog::info("job manager of {} closed without a reply: {}", account_, ec.message());
      upstream_.close();
      return Close();
    }
    res_.emplace(up_parser_->release());
    res_->set(kProtocolHeader, std::to_string(kProtocolVersion));
    res_->keep_alive(keep_alive_);
    res_->prepare_payload();
    Write();
  }

  void Reply(http::status status, ErrorCode code, const std::string& message, bool close) {
    res_.emplace(status, 11);
    res_->set(kProtocolHeader, std::to_string(kProtocolVersion));
    res_->set(http::field::content_type, "application/json");
    res_->body() = ToJson(ErrorReply{code, message});
    res_->keep_alive(!close && keep_alive_);
    res_->prepare_payload();
    Write();
  }

  void Write() {
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(30));
    http::async_write(stream_, *res_, [self = shared_from_this()](auto ec, size_t) {
      if (ec || !self->res_->keep_alive()) return self->Close();
      self->DoRead();
    });
  }

  void Close() {
    upstream_.close();
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(2));
    stream_.async_shutdown(
        [self = shared_from_this()](auto) { beast::get_lowest_layer(self->stream_).close(); });
  }

  Gatekeeper::Impl& gk_;
  PeerLimit::Slot slot_;  // this connection's share of its peer's limit
  beast::ssl_stream<beast::tcp_stream> stream_;
  Upstream upstream_;
  asio::steady_timer retry_;
  beast::flat_buffer buffer_, up_buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response_parser<http::string_body>> up_parser_;
  http::request<http::string_body> req_;
  std::optional<http::response<http::string_body>> res_;
  std::string identity_, account_, expires_;
  std::chrono::system_clock::time_point not_after_{};
  Error refusal_{ErrorCode::kOk, ""};
  bool keep_alive_ = true;
  bool resent_ = false;
  int attempts_ = 0;
};

}  // namespace

void Gatekeeper::Impl::StartAccepting() {
  accept_loop = std::make_shared<AcceptLoop<tcp>>(
      acceptor, "gatekeeper", AcceptLoop<tcp>::Limits{.per_peer = options.max_connections_per_peer},
      [this](tcp::socket s, PeerLimit::Slot slot) {
        beast::error_code ec;
        s.set_option(tcp::no_delay(true), ec);
        std::make_shared<Session>(*this, std::move(s), std::move(slot))->Run();
      },
      [this] { return asio::any_io_executor(asio::make_strand(io)); });
  accept_loop->Start();
}

Result<std::string> Gatekeeper::Impl::MapAccount(const std::string& subject) {
  std::lock_guard lock(gridmap_mu);
  struct stat st {};
  // Replaced (a new inode, as an editor or a rename writes it) or changed in place: read again.
  if (::stat(options.gridmap_path.c_str(), &st) == 0 &&
      (st.st_ino != gridmap_ino || st.st_size != gridmap_size ||
       st.st_mtim.tv_sec != gridmap_mtime.tv_sec || st.st_mtim.tv_nsec != gridmap_mtime.tv_nsec)) {
    auto map = credentials::GridMap::Load(options.gridmap_path);
    if (map) {
      gridmap = std::move(*map);
      gridmap_mtime = st.st_mtim;
      gridmap_ino = st.st_ino;
      gridmap_size = st.st_size;
    } else {
      spdlog::error("grid-mapfile: {} (keeping the previous one)", map.error().ToString());
    }
  }
  auto account = gridmap.DefaultAccount(subject);
  if (!account) {
    return Fail(ErrorCode::kAuthFailed,
                "the identity " + subject + " is not in this site's grid-mapfile");
  }
  return *account;
}

Status Gatekeeper::Impl::EnsureJobManager(const std::string& account) {
  std::lock_guard lock(jm_mu);
  std::erase_if(jm_pids, [](pid_t p) { return ::waitpid(p, nullptr, WNOHANG) != 0; });
  auto now = std::chrono::steady_clock::now();
  auto it = jm_started.find(account);
  if (it != jm_started.end() && now - it->second < kRestartGap) return {};  // starting already
  auto pid = SpawnJobManager(account);
  if (!pid) return Fail(pid.error());
  jm_started[account] = now;
  jm_pids.push_back(*pid);
  spdlog::info("started kite-jobmanager for {} (pid {})", account, *pid);
  return {};
}

namespace {

// fork + drop to the account + exec, for a root gatekeeper. Everything the child needs is built
// before fork(): between fork and exec it calls only async-signal-safe functions.
Result<pid_t> SpawnAs(const passwd& pw, const std::vector<std::string>& argv,
                      const std::vector<std::string>& env, const std::string& err_path) {
  int ngroups = 64;
  std::vector<gid_t> groups(ngroups);
  if (::getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &ngroups) < 0) {
    groups.resize(ngroups);
    ::getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &ngroups);
  }
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  uid_t uid = pw.pw_uid;
  gid_t gid = pw.pw_gid;
  pid_t pid = ::fork();
  if (pid < 0) return FailErrno("fork");
  if (pid == 0) {
    ::setsid();
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; ++s) ::sigaction(s, &dfl, nullptr);
    if (::setgroups(static_cast<size_t>(ngroups), groups.data()) != 0 || ::setgid(gid) != 0 ||
        ::setuid(uid) != 0) {
      ::_exit(126);
    }
    int in = ::open("/dev/null", O_RDONLY);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    ::dup2(in, 0);
    ::dup2(err >= 0 ? err : in, 1);
    ::dup2(err >= 0 ? err : in, 2);
    ::close_range(3, ~0U, 0);
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(127);
  }
  return pid;
}

}  // namespace

Result<pid_t> Gatekeeper::Impl::SpawnJobManager(const std::string& account) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (int err = ::getpwnam_r(account.c_str(), &pw, buf.data(), buf.size(), &found); err != 0) {
    // Out of file descriptors or memory, say: a shortage, not a refusal.
    return Fail(ErrorCode::kUnavailable,
                "cannot look up account '" + account + "' now: " + std::strerror(err));
  }
  if (!found) {
    return Fail(ErrorCode::kAuthFailed, "the grid-mapfile maps to account '" + account +
                                            "', which does not exist at this site");
  }
  bool root = ::geteuid() == 0;
  if (!root && pw.pw_uid != ::geteuid()) {
    return Fail(ErrorCode::kAuthFailed,
                "this gatekeeper does not run as root and cannot start a "
                "job manager for account '" +
                    account + "'");
  }
  std::string dir = options.state_dir + "/users/" + account;
  if (auto st = MakeDirs(dir, 0700); !st) return Fail(st.error());
  if (root &&
      (::chown(dir.c_str(), pw.pw_uid, pw.pw_gid) != 0 || ::chmod(dir.c_str(), 0700) != 0)) {
    return FailErrno("chown " + dir);
  }
  JobManagerOptions jm;
  jm.state_dir = dir;
  jm.ca_dir = options.ca_dir;
  jm.batch = options.batch;
  jm.account = account;
  jm.commit_timeout = options.commit_timeout;
  jm.batch_poll_interval = options.batch_poll_interval;
  jm.fork_limits = options.fork_limits;
  jm.site_attributes = options.site_attributes;
  jm.log_file = dir + "/jobmanager.log";
  jm.log_level = options.jobmanager_log_level;
  std::vector<std::string> argv = {options.jobmanager_path};
  std::ranges::copy(jm.ToArgs(), std::back_inserter(argv));
  std::vector<std::string> env = {
      "PATH=/usr/local/bin:/usr/bin:/bin", std::string("HOME=") + pw.pw_dir,
      std::string("USER=") + pw.pw_name, std::string("LOGNAME=") + pw.pw_name};
  for (const auto& name : options.pass_environment) {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) continue;
    std::erase_if(env, [&](const std::string& e) { return e.starts_with(name + "="); });
    env.push_back(name + "=" + v);
  }
  if (auto faults = FaultEnvironment(); !faults.empty()) env.push_back(faults);
  if (root && pw.pw_uid != 0) return SpawnAs(pw, argv, env, dir + "/jobmanager.err");
  SpawnOptions so;
  so.program = options.jobmanager_path;
  so.argv = argv;
  so.env = env;
  so.stdout_path = dir + "/jobmanager.err";
  so.stderr_path = dir + "/jobmanager.err";
  return Spawn(so);
}

Gatekeeper::Gatekeeper(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gatekeeper::~Gatekeeper() {
  Stop();
}

Result<std::unique_ptr<Gatekeeper>> Gatekeeper::Create(GatekeeperOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  auto& o = impl->options;
  auto verifier = credentials::Verifier::Create({.ca_dir = o.ca_dir, .reject_limited = true});
  if (!verifier) return Fail(verifier.error());
  auto ctx = credentials::MakeServerContext(o.host_credential, *verifier);
  if (!ctx) return Fail(ctx.error());
  impl->ctx = *ctx;
  auto map = credentials::GridMap::Load(o.gridmap_path);
  if (!map) return Fail(map.error());
  impl->gridmap = std::move(*map);
  if (auto st = MakeDirs(o.state_dir + "/users", 0755); !st) return Fail(st.error());
  if (auto adapter = batch::MakeAdapter(o.batch, {}); !adapter) return Fail(adapter.error());
  if (!FileExists(o.jobmanager_path)) {
    return Fail(ErrorCode::kNotFound, "no job manager program at " + o.jobmanager_path);
  }
  return std::unique_ptr<Gatekeeper>(new Gatekeeper(std::move(impl)));
}

Status Gatekeeper::Start() {
  auto& i = *impl_;
  beast::error_code ec;
  auto addr = asio::ip::make_address(i.options.listen_host, ec);
  if (ec) return Fail(ErrorCode::kInvalidInput, "bad listen address " + i.options.listen_host);
  tcp::endpoint ep(addr, i.options.port);
  i.acceptor.open(ep.protocol(), ec);
  if (!ec) i.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) i.acceptor.bind(ep, ec);
  if (!ec) i.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Fail(ErrorCode::kIo, "listen on " + i.options.listen_host + ":" +
                                    std::to_string(i.options.port) + ": " + ec.message());
  }
  i.StartAccepting();
  for (int t = 0; t < std::max(1, i.options.threads); ++t) {
    i.threads.emplace_back([&i] { i.io.run(); });
  }
  return {};
}

uint16_t Gatekeeper::port() const {
  return impl_->acceptor.local_endpoint().port();
}

void Gatekeeper::Stop() {
  impl_->io.stop();
  for (auto& t : impl_->threads)
    if (t.joinable()) t.join();
  impl_->threads.clear();
}

void Gatekeeper::Wait() {
  for (auto& t : impl_->threads)
    if (t.joinable()) t.join();
}

}  // namespace kite::gram
