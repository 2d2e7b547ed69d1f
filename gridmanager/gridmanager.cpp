// kite-gridmanager's shell: the lock, the proxy, the GASS and callback servers, and the real
// links (gram::Client to the sites, the agent's Unix socket) around the engine.
#include "gridmanager/gridmanager.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include "client/agent_client.h"
#include "common/files.h"
#include "credentials/certificate.h"
#include "credentials/verify.h"
#include "gass/server.h"
#include "gram/callback_server.h"
#include "gridmanager/engine.h"
#include "gridmanager/proxy_watch.h"

namespace kite::gridmanager {
namespace {

namespace asio = boost::asio;

// The agent over its Unix socket: one connection for the long poll, one for updates, each used
// by one pool thread at a time.
class SocketAgentTransport : public AgentTransport {
 public:
  SocketAgentTransport(std::unique_ptr<client::AgentClient> poll,
                       std::unique_ptr<client::AgentClient> update, asio::thread_pool& pool,
                       asio::io_context& io)
      : poll_(std::move(poll)), update_(std::move(update)), pool_(pool), io_(io) {}

  void Poll(const grid::PollRequest& req,
            std::function<void(Result<grid::PollResponse>)> done) override {
    Post(*poll_, "/v1/grid/jobs", grid::ToJsonValue(req), std::move(done),
         [](const boost::json::object& o) { return grid::ParsePollResponse(o); });
  }
  void Update(const grid::UpdateRequest& req,
              std::function<void(Result<grid::UpdateResponse>)> done) override {
    Post(*update_, "/v1/grid/update", grid::ToJsonValue(req), std::move(done),
         [](const boost::json::object& o) { return grid::ParseUpdateResponse(o); });
  }

 private:
  template <class T, class P>
  void Post(client::AgentClient& link, const char* target, boost::json::value body,
            std::function<void(Result<T>)> done, P parse) {
    asio::post(pool_, [&link, target, body = std::move(body), done = std::move(done), parse,
                       &io = io_]() mutable {
      auto reply = link.PostJson(target, body.as_object());
      auto result = std::make_shared<Result<T>>(Fail(ErrorCode::kInternal, ""));
      if (!reply) {
        *result = Fail(reply.error());
      } else if (auto parsed = parse(*reply)) {
        *result = std::move(*parsed);
      } else {
        *result = Fail(ErrorCode::kProtocol, parsed.error().message());
      }
      asio::post(io, [result, done = std::move(done)] { done(std::move(*result)); });
    });
  }

  std::unique_ptr<client::AgentClient> poll_, update_;
  asio::thread_pool& pool_;
  asio::io_context& io_;
};

// `path` with links and "." / ".." resolved; when it cannot be (it does not exist yet), the same
// path made clean by its text alone, so that the transfer reports what is wrong with the file.
std::string Resolved(const std::string& path) {
  if (char* real = ::realpath(path.c_str(), nullptr)) {
    std::string out(real);
    std::free(real);
    return out;
  }
  return std::filesystem::path(path).lexically_normal().string();
}

// The GASS and callback servers.
class ServerEndpoints : public JobEndpoints {
 public:
  ServerEndpoints(gass::GassServer& gass, gram::CallbackServer& callbacks, std::string identity)
      : gass_(gass), callbacks_(callbacks), identity_(std::move(identity)) {}
  std::string GassUrl(const std::string& job) override { return gass_.url() + "/jobs/" + job; }
  std::string CallbackUrl(const std::string& job) override {
    return callbacks_.Url("/callbacks/" + job);
  }
  // The files the user named are served as what they name now: a symbolic link (/bin/sh) or a
  // path through ".." is resolved here, once; the server then opens the resolved path without
  // following links, so a link swapped in afterwards is still refused.
  Status AddJob(const std::string& job, const GridJobPlan& plan) override {
    auto readable = plan.readable;
    for (auto& f : readable) f.path = Resolved(f.path);
    return gass_.AddJob(job, identity_, std::move(readable), plan.writable);
  }
  void RemoveJob(const std::string& job) override { gass_.RemoveJob(job); }

 private:
  gass::GassServer& gass_;
  gram::CallbackServer& callbacks_;
  std::string identity_;
};

}  // namespace

// Where links send their sites' news (LinkContext::news) while this gridmanager lives: a GRAM5
// helper outlives it (grid/gt5_link.cpp) and may still have news as it goes.
struct NewsRelay {
  std::mutex mu;
  std::function<void(const std::string&)> to;  // guarded by mu
};

struct GridManager::Impl {
  explicit Impl(GridManagerOptions o) : options(std::move(o)), pool(options.threads) {}

  GridManagerOptions options;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> guard{io.get_executor()};
  asio::thread_pool pool;
  asio::io_context gass_io;
  std::unique_ptr<asio::executor_work_guard<asio::io_context::executor_type>> gass_guard;
  std::thread gass_thread;
  int lock_fd = -1;
  int exit_code = 0;

  credentials::Credential credential;
  int64_t credential_gen = 1;  // +1 each time a refreshed proxy is taken in
  std::shared_ptr<const credentials::Verifier> verifier;
  std::string identity;  // the proxy's end-entity subject
  std::unique_ptr<gass::GassServer> gass;
  std::unique_ptr<gram::CallbackServer> callbacks;
  std::unique_ptr<ProxyWatch> proxy_watch;
  asio::steady_timer proxy_timer{io};

  std::unique_ptr<SocketAgentTransport> agent;
  std::unique_ptr<ServerEndpoints> endpoints;
  std::unique_ptr<Engine> engine;
  std::shared_ptr<NewsRelay> news = std::make_shared<NewsRelay>();

  Status Start();
  Status TakeLock();
  Status LoadProxy();
  Status StartServers();
  Result<std::shared_ptr<SiteLink>> Connect(const GridResource& name);
  void WatchProxy();
};

GridManager::GridManager(GridManagerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

GridManager::~GridManager() {
  {
    std::lock_guard lock(impl_->news->mu);
    impl_->news->to = nullptr;
  }
  impl_->pool.stop();
  impl_->pool.join();
  if (impl_->gass) impl_->gass->Close();
  impl_->gass_guard.reset();
  impl_->gass_io.stop();
  if (impl_->gass_thread.joinable()) impl_->gass_thread.join();
  if (impl_->lock_fd >= 0) ::close(impl_->lock_fd);
}

Status GridManager::Start() {
  return impl_->Start();
}

int GridManager::Run() {
  impl_->io.run();
  return impl_->exit_code;
}

Status GridManager::Impl::TakeLock() {
  std::string dir = options.home + "/gridmanager";
  if (auto st = MakeDirs(dir, 0700); !st) return st;
  std::string path = dir + "/" + std::to_string(std::hash<std::string>{}(options.proxy)) + ".lock";
  lock_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0) return Fail(ErrorCode::kIo, "cannot open " + path);
  for (int i = 0; i < 300; ++i) {
    if (::flock(lock_fd, LOCK_EX | LOCK_NB) == 0) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Fail(ErrorCode::kConflict,
              "another kite-gridmanager still drives the jobs of " + options.proxy);
}

Status GridManager::Impl::LoadProxy() {
  std::string ca_dir = options.ca_dir.empty() ? credentials::DefaultCaDir() : options.ca_dir;
  auto v = credentials::Verifier::Create({.ca_dir = ca_dir});
  if (!v) return Fail(v.error().Wrap("trusted CAs"));
  verifier = std::move(*v);
  struct stat loaded {};
  ::stat(options.proxy.c_str(), &loaded);
  auto cred = credentials::LoadProxyFile(options.proxy);
  if (!cred) return Fail(cred.error().Wrap("proxy " + options.proxy));
  auto id = verifier->Verify(cred->chain);
  if (!id) return Fail(id.error().Wrap("proxy " + options.proxy));
  credential = std::move(*cred);
  identity = id->subject;
  proxy_watch = std::make_unique<ProxyWatch>(options.proxy, verifier, identity, loaded);
  return {};
}

Status GridManager::Impl::StartServers() {
  gass::GassServerOptions go;
  go.listen = options.listen_host + ":0";
  go.credential = credential;
  go.verifier = verifier;
  auto g = gass::GassServer::Create(gass_io, go);
  if (!g) return Fail(g.error().Wrap("GASS server"));
  gass = std::move(*g);
  gass_guard = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(
      gass_io.get_executor());
  gass_thread = std::thread([this] { gass_io.run(); });

  gram::CallbackServerOptions co;
  co.listen_host = options.listen_host;
  co.credential = credential;
  co.verifier = verifier;
  co.accepted_identity = identity;
  co.handler = [this](const std::string&, const gram::JobStatus& st) {
    asio::post(io, [this, st] {
      if (engine) engine->OnCallback(st);
    });
  };
  auto cb = gram::CallbackServer::Start(std::move(co));
  if (!cb) return Fail(cb.error().Wrap("callback server"));
  callbacks = std::move(*cb);
  return {};
}

Result<std::shared_ptr<SiteLink>> GridManager::Impl::Connect(const GridResource& name) {
  return grid::ConnectSite(name, {.credential = &credential,
                                  .verifier = verifier,
                                  .pool = &pool,
                                  .io = &io,
                                  .max_requests = options.max_requests_per_resource,
                                  .proxy_file = options.proxy,
                                  .home = options.home,
                                  .news = [relay = news](const std::string& job_id) {
                                    std::lock_guard lock(relay->mu);
                                    if (relay->to) relay->to(job_id);
                                  }});
}

Status GridManager::Impl::Start() {
  if (auto st = TakeLock(); !st) return st;
  double start_ms =
      std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  auto poll_link = client::AgentClient::Connect(options.home);
  if (!poll_link) return Fail(poll_link.error());
  auto update_link = client::AgentClient::Connect(options.home);
  if (!update_link) return Fail(update_link.error());
  if (auto st = LoadProxy(); !st) return st;
  if (auto st = StartServers(); !st) return st;
  agent = std::make_unique<SocketAgentTransport>(std::move(*poll_link), std::move(*update_link),
                                                 pool, io);
  endpoints = std::make_unique<ServerEndpoints>(*gass, *callbacks, identity);
  EngineOptions eo{.proxy = options.proxy,
                   .probe_interval = options.probe_interval,
                   .max_resubmits = options.max_resubmits,
                   .max_jobs_per_resource = options.max_jobs_per_resource,
                   .max_requests_per_resource = options.max_requests_per_resource,
                   .linger = options.linger,
                   .run_id = static_cast<int64_t>(start_ms)};
  engine = std::make_unique<Engine>(
      io, eo, [this](const GridResource& name) { return Connect(name); }, *agent, *endpoints);
  {
    std::lock_guard lock(news->mu);
    news->to = [this](const std::string& job_id) {
      asio::post(io, [this, job_id] {
        if (engine) engine->OnNews(job_id);
      });
    };
  }
  spdlog::info("gridmanager: proxy {} ({}), GASS {}, callbacks {}", options.proxy, identity,
               gass->url(), callbacks->Url());
  asio::post(io, [this] {
    engine->Start([this](int code, const std::string&) {
      exit_code = code;
      proxy_timer.cancel();
      guard.reset();
      io.stop();
    });
    WatchProxy();
  });
  return {};
}

// A new proxy in the file: presented from now on, and handed to every site that holds a
// delegation made from the old one. Looked at on the probe tick.
void GridManager::Impl::WatchProxy() {
  if (auto fresh = proxy_watch->Check()) {
    credential = std::move(fresh->credential);
    ++credential_gen;
    if (auto s = gass->SetCredential(credential); !s) {
      spdlog::error("gridmanager: GASS server keeps the old proxy: {}", s.error().message());
    }
    if (auto s = callbacks->SetCredential(credential); !s) {
      spdlog::error("gridmanager: callback server keeps the old proxy: {}", s.error().message());
    }
    auto left = std::chrono::duration_cast<std::chrono::seconds>(fresh->identity.not_after -
                                                                 credentials::Clock::now());
    spdlog::info("gridmanager: proxy {} refreshed ({} s left); re-delegating to {} site(s)",
                 options.proxy, left.count(), engine->OnProxyRefreshed(credential_gen));
  }
  double every = std::clamp(options.probe_interval / 4, 0.25, 15.0);
  proxy_timer.expires_after(std::chrono::milliseconds(static_cast<int64_t>(every * 1000)));
  proxy_timer.async_wait([this](auto ec) {
    if (!ec) WatchProxy();
  });
}

}  // namespace kite::gridmanager
