// The gridmanager's per-job state machine, its sites, and its link to the agent.
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
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include "agent/cli/client.h"
#include "classad/io.h"
#include "common/files.h"
#include "credentials/certificate.h"
#include "credentials/verify.h"
#include "gass/server.h"
#include "gram/callback_server.h"
#include "gram/client.h"
#include "gridmanager/grid_job.h"
#include "submit/quoting.h"

namespace kite::gridmanager {
namespace {

namespace json = boost::json;
using gram::JobState;

// HTCondor's JobStatus and HoldReasonCode values the gridmanager uses.
constexpr int kIdle = 1, kRunning = 2, kRemoved = 3, kCompleted = 4, kHeld = 5;
constexpr int kHoldGridError = 2;        // the site or the protocol refused or failed the job
constexpr int kHoldCredentialError = 4;  // the proxy is missing, expired or refused

double SteadyNow() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

double WallNow() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string Quote(std::string_view s) {
  return submit::QuoteClassAdString(s);
}

std::string RandomHex(int bytes) {
  std::random_device rd;
  std::string out;
  static const char* kHex = "0123456789abcdef";
  for (int i = 0; i < bytes; ++i) {
    unsigned v = rd() & 0xff;
    out += kHex[v >> 4];
    out += kHex[v & 15];
  }
  return out;
}

bool SiteDown(const Error& e) {
  switch (e.code()) {
    case ErrorCode::kUnavailable:
    case ErrorCode::kTimeout:
    case ErrorCode::kIo:
    case ErrorCode::kInternal:
      return true;
    default:
      return false;
  }
}

}  // namespace

// How far a job got at its site. Recorded in the agent's queue as GridJobId (set from
// kSubmitted on) and GridFinal (kFinal); the rest is worked out again after a restart.
enum class Phase {
  kIdle,       // nothing at the site that we know of: submit next (when the job wants to run)
  kSubmitted,  // the site has it (GridJobId stored): commit next, or cancel
  kCommitted,  // it may run: follow callbacks and probes
  kFinal,      // it ended and that is stored (GridFinal): commit-end, then tell the agent
  kCancelled,  // cancelled (removed or held) and confirmed: commit-end, then tell the agent
};

struct Resource {
  GridResource name;
  std::shared_ptr<gram::Client> client;  // replaced when the proxy is refreshed
  std::string delegation_id;
  double delegation_not_after = 0;
  int64_t delegated_gen = 0;  // the proxy generation the site's delegation was made from
  bool delegating = false;
  bool delegation_refused = false;  // the site refused our proxy (the last time we asked)
  int in_flight = 0;
  std::deque<std::function<void()>> queued;  // requests waiting for a slot
  int active_jobs = 0;                       // jobs with a GridJobId here
  double down_until = 0;                     // steady seconds
  double backoff = 0;
  std::unique_ptr<boost::asio::steady_timer> retry_timer;
  // What the agent shows of it (grid/update "resources"): the last outcome, and what was sent.
  bool up = false;
  double last_contact = 0;  // unix time of its last answer
  std::string last_error;
  bool report_due = false;
  bool reported_up = false;
  double reported_contact = -1;
};

struct GridJob {
  std::string id;  // "C.P"
  classad::ClassAd ad;
  int status = kIdle;  // the agent's JobStatus as last known
  Phase phase = Phase::kIdle;
  int attempt = 0;
  std::string contact, site_id;
  int64_t seq = -1;
  std::string remote_state;
  bool request = false;   // a request to the site is under way
  bool saving = false;    // an update to the queue that the next step depends on is under way
  bool resignal = false;  // after a restart: tell the site our new GASS and callback URLs
  bool counted = false;   // counted in the resource's active_jobs
  bool unknown = false;   // known at a site before this start; not heard from since
  double last_heard = 0;
  gram::JobStatus final;  // kFinal: how the job ended
  GridJobPlan plan;
  Resource* res = nullptr;
};

struct GridManager::Impl {
  explicit Impl(GridManagerOptions o) : options(std::move(o)), pool(options.threads) {}

  GridManagerOptions options;
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{io.get_executor()};
  boost::asio::thread_pool pool;
  boost::asio::io_context gass_io;
  std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>
      gass_guard;
  std::thread gass_thread;
  int lock_fd = -1;
  int exit_code = 0;
  bool stopping = false;
  double start_ms = 0;  // wall clock, ms: tells this run's request ids from earlier runs'
  double started = 0;   // steady seconds

  credentials::Credential credential;
  int64_t credential_gen = 1;  // +1 each time a refreshed proxy is taken in
  struct stat proxy_stat {};   // of the proxy file when `credential` was read
  std::shared_ptr<const credentials::Verifier> verifier;
  std::string identity;  // the proxy's end-entity subject
  std::unique_ptr<gass::GassServer> gass;
  std::unique_ptr<gram::CallbackServer> callbacks;

  std::unique_ptr<cli::AgentClient> poll_link, update_link;
  std::string epoch;
  int64_t generation = 0;
  double empty_since = 0;

  std::map<std::string, std::unique_ptr<Resource>> resources;  // by HOST:PORT
  std::map<std::string, GridJob> jobs;                         // by "C.P"
  std::map<std::string, std::string> by_site_id;               // site job id -> "C.P"
  int unknown_jobs = 0;  // jobs at sites not heard from since this start (see Heard)
  boost::asio::steady_timer probe_timer{io};

  struct Update {
    json::object body;
    std::function<void(const json::object& result)> after;
  };
  std::vector<Update> pending_updates;
  bool update_in_flight = false;

  // --- set-up -------------------------------------------------------------------------------
  Status Start();
  Status TakeLock();

  // --- the agent link -----------------------------------------------------------------------
  void Poll();
  void OnPoll(Result<json::object> reply);
  void QueueUpdate(json::object body, std::function<void(const json::object&)> after = {});
  void SendUpdates();
  void Shutdown(int code, const std::string& why);

  // --- jobs ---------------------------------------------------------------------------------
  void Learn(const std::string& id, int status, const std::string& ad_text);
  void Drive(GridJob& j);
  void DriveResource(Resource& r);
  void Submit(GridJob& j);
  void Commit(GridJob& j);
  void Resignal(GridJob& j);
  void Cancel(GridJob& j);
  void CommitEnd(GridJob& j);
  void AfterCommitEnd(GridJob& j);
  void Apply(GridJob& j, const gram::JobStatus& st);
  void Failed(GridJob& j, const Error& e, const std::string& what);
  void Hold(GridJob& j, const std::string& reason, int code, int subcode);
  void Forget(GridJob& j);
  void SetContact(GridJob& j, const std::string& contact);
  void EnsureDelegation(Resource& r);
  // A site answered for `j`. After a restart, the moment the last job known at a site before it is
  // heard of again is logged (the recovery time bench/recovery measures).
  void Heard(GridJob& j) {
    if (!j.unknown) return;
    j.unknown = false;
    if (--unknown_jobs == 0) {
      spdlog::info("gridmanager: every job at the sites heard from again, {:.3f} s after start",
                   SteadyNow() - started);
    }
  }
  void RefreshDelegation(Resource& r);
  void CheckProxy();
  Result<std::shared_ptr<gram::Client>> MakeClient(const GridResource& name);
  void Probe();
  Resource* ResourceFor(const GridResource& name, std::string* error);
  json::object UpdateFor(const GridJob& j) const;
  void ClearAttempt(GridJob& j, json::object& set);
  bool WantsToRun(const GridJob& j) const { return j.status == kIdle || j.status == kRunning; }
  // The job a site's reply is for, with its request marked done; null when it is gone.
  GridJob* Replied(const std::string& id) {
    auto it = jobs.find(id);
    if (it == jobs.end()) return nullptr;
    it->second.request = false;
    return &it->second;
  }
  // What runs when an update a job waited on is committed: drive the job on, or forget it when
  // it has left the queue meanwhile (removed before anything of it was committed at a site).
  std::function<void(const json::object&)> Saved(const std::string& id) {
    return [this, id](const json::object& res) {
      auto it = jobs.find(id);
      if (it == jobs.end()) return;
      it->second.saving = false;
      if (res.contains("error")) return Forget(it->second);
      Drive(it->second);
    };
  }

  // Runs `call` on the pool against `r`'s client (at most max_requests_per_resource at once)
  // and `done` with its result back on the io thread.
  template <class R>
  void Call(Resource& r, std::function<R(gram::Client&)> call, std::function<void(R)> done) {
    auto start = [this, &r, call = std::move(call), done = std::move(done)]() mutable {
      ++r.in_flight;
      // The client of this moment: a proxy refresh may replace r.client while the call runs.
      boost::asio::post(pool, [this, &r, client = r.client, call = std::move(call),
                               done = std::move(done)]() mutable {
        auto result = std::make_shared<R>(call(*client));
        boost::asio::post(io, [this, &r, result, done = std::move(done)]() {
          --r.in_flight;
          done(std::move(*result));
          while (!r.queued.empty() && r.in_flight < options.max_requests_per_resource) {
            auto next = std::move(r.queued.front());
            r.queued.pop_front();
            next();
          }
        });
      });
    };
    if (r.in_flight < options.max_requests_per_resource) {
      start();
    } else {
      r.queued.push_back(std::move(start));
    }
  }
  void MarkDown(Resource& r, const Error& e);
  void MarkUp(Resource& r) {
    r.backoff = 0;
    r.down_until = 0;
    NoteResource(r, true, "");
  }
  // Records an answer from `r` (or a failure to reach it) for the agent; the report goes out with
  // the next update, at once when reachability changed or the agent's last contact is 10 s old.
  void NoteResource(Resource& r, bool up, const std::string& error) {
    r.up = up;
    if (up) r.last_contact = WallNow();
    if (!up) r.last_error = error;
    if (r.reported_up == up && r.reported_contact >= 0 && r.last_contact - r.reported_contact < 10)
      return;
    r.report_due = true;
    SendUpdates();
  }
};

GridManager::GridManager(GridManagerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

GridManager::~GridManager() {
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

Status GridManager::Impl::Start() {
  if (auto st = TakeLock(); !st) return st;
  started = SteadyNow();
  start_ms =
      std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  auto link = cli::AgentClient::Connect(options.home);
  if (!link) return Fail(link.error());
  poll_link = std::move(*link);
  link = cli::AgentClient::Connect(options.home);
  if (!link) return Fail(link.error());
  update_link = std::move(*link);

  std::string ca_dir = options.ca_dir.empty() ? credentials::DefaultCaDir() : options.ca_dir;
  auto v = credentials::Verifier::Create({.ca_dir = ca_dir});
  if (!v) return Fail(v.error().Wrap("trusted CAs"));
  verifier = std::move(*v);
  ::stat(options.proxy.c_str(), &proxy_stat);
  auto cred = credentials::LoadProxyFile(options.proxy);
  if (!cred) return Fail(cred.error().Wrap("proxy " + options.proxy));
  auto id = verifier->Verify(cred->chain);
  if (!id) return Fail(id.error().Wrap("proxy " + options.proxy));
  credential = std::move(*cred);
  identity = id->subject;

  gass::GassServerOptions go;
  go.listen = options.listen_host + ":0";
  go.credential = credential;
  go.verifier = verifier;
  auto g = gass::GassServer::Create(gass_io, go);
  if (!g) return Fail(g.error().Wrap("GASS server"));
  gass = std::move(*g);
  gass_guard =
      std::make_unique<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
          gass_io.get_executor());
  gass_thread = std::thread([this] { gass_io.run(); });

  gram::CallbackServerOptions co;
  co.listen_host = options.listen_host;
  co.credential = credential;
  co.verifier = verifier;
  co.accepted_identity = identity;
  co.handler = [this](const std::string&, const gram::JobStatus& st) {
    boost::asio::post(io, [this, st] {
      auto it = by_site_id.find(st.job_id);
      if (it == by_site_id.end()) return;
      auto j = jobs.find(it->second);
      if (j != jobs.end()) Apply(j->second, st);
    });
  };
  auto cb = gram::CallbackServer::Start(std::move(co));
  if (!cb) return Fail(cb.error().Wrap("callback server"));
  callbacks = std::move(*cb);

  spdlog::info("gridmanager: proxy {} ({}), GASS {}, callbacks {}", options.proxy, identity,
               gass->url(), callbacks->Url());
  boost::asio::post(io, [this] {
    Poll();
    Probe();
  });
  return {};
}

// --- the agent link ------------------------------------------------------------------------

void GridManager::Impl::Shutdown(int code, const std::string& why) {
  if (stopping) return;
  stopping = true;
  exit_code = code;
  spdlog::info("gridmanager: exiting: {}", why);
  probe_timer.cancel();
  guard.reset();
  io.stop();
}

void GridManager::Impl::Poll() {
  json::object req{{"proxy", options.proxy},
                   {"since", generation},
                   {"epoch", epoch},
                   {"timeout", jobs.empty() ? options.linger : 20.0}};
  boost::asio::post(pool, [this, req] {
    auto r = poll_link->PostJson("/v1/grid/jobs", req);
    boost::asio::post(io, [this, r = std::move(r)]() mutable { OnPoll(std::move(r)); });
  });
}

void GridManager::Impl::OnPoll(Result<json::object> reply) {
  if (stopping) return;
  if (!reply) return Shutdown(3, "the agent went away: " + reply.error().message());
  const json::object& o = *reply;
  size_t seen = 0;
  try {
    epoch = std::string(o.at("epoch").as_string());
    generation = o.at("generation").to_number<int64_t>();
    for (auto& v : o.at("jobs").as_array()) {
      const auto& e = v.as_object();
      if (e.at("status").to_number<int64_t>() == 0) {
        // Left the queue without our word (removed before it reached a site, rm --forcex):
        // whatever is still under way for it stops. Nothing of it runs: it was never committed,
        // or the user chose not to wait for the site.
        if (auto it = jobs.find(std::string(e.at("id").as_string())); it != jobs.end()) {
          spdlog::info("gridmanager: job {} left the queue", it->first);
          Forget(it->second);
        }
        ++seen;
        continue;
      }
      Learn(std::string(e.at("id").as_string()),
            static_cast<int>(e.at("status").to_number<int64_t>()),
            std::string(e.at("ad").as_string()));
      ++seen;
    }
  } catch (const std::exception& e) {
    return Shutdown(4, std::string("the agent sent a malformed job list: ") + e.what());
  }
  if (jobs.empty() && seen == 0 && pending_updates.empty() && !update_in_flight) {
    if (empty_since == 0) empty_since = SteadyNow();
    if (SteadyNow() - empty_since >= options.linger) return Shutdown(0, "no grid jobs left");
  } else {
    empty_since = 0;
  }
  Poll();
}

void GridManager::Impl::QueueUpdate(json::object body,
                                    std::function<void(const json::object&)> after) {
  pending_updates.push_back({std::move(body), std::move(after)});
  SendUpdates();
}

// One batch in flight at a time; whatever queues meanwhile goes in the next batch, so the agent
// commits many jobs' changes in one transaction.
void GridManager::Impl::SendUpdates() {
  json::array reports;
  if (!update_in_flight && !stopping) {
    for (auto& [key, r] : resources) {
      if (!r->report_due) continue;
      r->report_due = false;
      r->reported_up = r->up;
      r->reported_contact = r->last_contact;
      reports.push_back(json::object{{"resource", r->name.HostPort()},
                                     {"reachable", r->up},
                                     {"last_contact", r->last_contact},
                                     {"last_error", r->last_error}});
    }
  }
  if (update_in_flight || (pending_updates.empty() && reports.empty()) || stopping) return;
  update_in_flight = true;
  auto batch = std::make_shared<std::vector<Update>>(std::move(pending_updates));
  pending_updates.clear();
  json::array list;
  for (auto& u : *batch) list.push_back(u.body);
  json::object req{{"updates", std::move(list)}};
  if (!reports.empty()) req["resources"] = std::move(reports);
  boost::asio::post(pool, [this, batch, req = std::move(req)] {
    auto r = update_link->PostJson("/v1/grid/update", req);
    boost::asio::post(io, [this, batch, r = std::move(r)] {
      update_in_flight = false;
      if (!r) return Shutdown(3, "the agent refused or lost an update: " + r.error().message());
      const json::array* results = nullptr;
      if (auto* v = r->if_contains("results"); v && v->is_array()) results = &v->as_array();
      for (size_t i = 0; i < batch->size(); ++i) {
        json::object res;
        if (results && i < results->size() && (*results)[i].is_object()) {
          res = (*results)[i].as_object();
        }
        if ((*batch)[i].after) (*batch)[i].after(res);
      }
      SendUpdates();
    });
  });
}

// --- jobs ----------------------------------------------------------------------------------

json::object GridManager::Impl::UpdateFor(const GridJob& j) const {
  return json::object{{"id", j.id}};
}

void GridManager::Impl::Learn(const std::string& id, int status, const std::string& ad_text) {
  auto it = jobs.find(id);
  if (it != jobs.end()) {
    it->second.status = status;
    Drive(it->second);
    return;
  }
  auto ad = classad::ParseOldAd(ad_text);
  if (!ad) {
    spdlog::error("gridmanager: job {}: unreadable ad from the agent: {}", id,
                  ad.error().message());
    return;
  }
  GridJob& j = jobs[id];
  j.id = id;
  j.ad = std::move(*ad);
  j.status = status;
  j.attempt = static_cast<int>(j.ad.EvaluateInt("GridAttempt").value_or(0));
  j.remote_state = j.ad.EvaluateString("GridJobStatus").value_or("");
  auto plan = PlanGridJob(j.ad);
  std::string contact = j.ad.EvaluateString("GridJobId").value_or("");
  if (!plan) {
    // Nothing of it can have reached a site (it could never be planned): settle it here.
    if (status == kRemoved) {
      json::object u = UpdateFor(j);
      u["action"] = "retire";
      QueueUpdate(std::move(u));
    } else if (WantsToRun(j)) {
      json::object u = UpdateFor(j);
      u["action"] = "hold";
      u["reason"] = "Cannot run this grid job: " + plan.error().message();
      u["code"] = kHoldGridError;
      QueueUpdate(std::move(u));
    }
    jobs.erase(id);
    return;
  }
  j.plan = std::move(*plan);
  std::string err;
  j.res = ResourceFor(j.plan.resource, &err);
  if (!j.res) {
    Hold(j, "Cannot reach grid resource " + j.plan.resource.HostPort() + ": " + err, kHoldGridError,
         0);
    jobs.erase(id);
    return;
  }
  if (auto st = gass->AddJob(id, identity, j.plan.readable, j.plan.writable); !st) {
    Hold(j, "Cannot serve the job's files: " + st.error().message(), kHoldGridError, 0);
    jobs.erase(id);
    return;
  }
  if (!contact.empty()) {
    SetContact(j, contact);
    j.phase = Phase::kSubmitted;  // committed or not: a commit or a status tells
    j.resignal = true;
    j.unknown = true;
    ++unknown_jobs;
  }
  if (j.ad.EvaluateBool("GridFinal").value_or(false)) {
    j.phase = Phase::kFinal;
    auto state = gram::ParseJobState(j.remote_state);
    j.final.state = state.value_or(JobState::kFailed);
    if (auto code = j.ad.EvaluateInt("GridExitCode")) {
      j.final.exit = gram::ExitInfo{j.ad.EvaluateBool("GridExitBySignal").value_or(false),
                                    static_cast<int>(*code)};
    }
    j.final.failure = gram::ParseFailureCode(j.ad.EvaluateString("GridFailureCode").value_or(""))
                          .value_or(gram::FailureCode::kNone);
    j.final.failure_message = j.ad.EvaluateString("GridFailureMessage").value_or("");
  }
  Drive(j);
}

Result<std::shared_ptr<gram::Client>> GridManager::Impl::MakeClient(const GridResource& name) {
  gram::ClientOptions co;
  co.host = name.host;
  co.port = name.port;
  co.credential = credential;
  co.verifier = verifier;
  co.max_idle_connections = static_cast<size_t>(options.max_requests_per_resource) + 2;
  auto client = gram::Client::Create(std::move(co));
  if (!client) return Fail(client.error());
  return std::shared_ptr<gram::Client>(std::move(*client));
}

Resource* GridManager::Impl::ResourceFor(const GridResource& name, std::string* error) {
  std::string key = name.HostPort();
  auto it = resources.find(key);
  if (it != resources.end()) return it->second.get();
  auto client = MakeClient(name);
  if (!client) {
    *error = client.error().message();
    return nullptr;
  }
  auto r = std::make_unique<Resource>();
  r->name = name;
  r->client = std::move(*client);
  r->retry_timer = std::make_unique<boost::asio::steady_timer>(io);
  Resource* raw = r.get();
  resources.emplace(key, std::move(r));
  return raw;
}

void GridManager::Impl::SetContact(GridJob& j, const std::string& contact) {
  if (!j.site_id.empty()) by_site_id.erase(j.site_id);
  j.contact = contact;
  j.site_id = contact.empty() ? "" : gram::JobIdFromContact(contact);
  if (!j.site_id.empty()) by_site_id[j.site_id] = j.id;
  bool count = !contact.empty();
  if (count != j.counted && j.res) j.res->active_jobs += count ? 1 : -1;
  j.counted = count;
}

void GridManager::Impl::MarkDown(Resource& r, const Error& e) {
  double now = SteadyNow();
  if (r.down_until > now) return;  // already waiting
  r.backoff = std::min(60.0, std::max(1.0, r.backoff * 2));
  r.down_until = now + r.backoff;
  NoteResource(r, false, e.message());
  spdlog::warn("gridmanager: {} unreachable ({}); retrying in {:.0f} s", r.name.HostPort(),
               e.message(), r.backoff);
  r.retry_timer->expires_after(std::chrono::milliseconds(static_cast<int64_t>(r.backoff * 1000)));
  r.retry_timer->async_wait([this, &r](auto ec) {
    if (!ec) DriveResource(r);
  });
}

void GridManager::Impl::DriveResource(Resource& r) {
  if (!r.delegation_id.empty() && r.delegated_gen < credential_gen && !r.delegating) {
    return RefreshDelegation(r);  // jobs go on once the site holds the new proxy
  }
  std::vector<std::string> ids;
  for (auto& [id, j] : jobs) {
    if (j.res == &r) ids.push_back(id);
  }
  for (auto& id : ids) {
    auto it = jobs.find(id);
    if (it != jobs.end()) Drive(it->second);
  }
}

// The one place that decides what a job needs next.
void GridManager::Impl::Drive(GridJob& j) {
  if (j.request || j.saving || stopping) return;
  if (j.res && j.res->down_until > SteadyNow()) return;  // the retry timer drives it again
  bool stop = j.status == kRemoved || j.status == kHeld || j.status == kCompleted;
  switch (j.phase) {
    case Phase::kIdle:
      if (j.status == kRemoved) {
        json::object u = UpdateFor(j);
        u["action"] = "retire";
        j.saving = true;
        QueueUpdate(std::move(u), [this, id = j.id](const json::object&) {
          if (auto it = jobs.find(id); it != jobs.end()) Forget(it->second);
        });
      } else if (stop) {
        Forget(j);  // held: nothing at any site; a release brings it back
      } else {
        Submit(j);
      }
      return;
    case Phase::kSubmitted:
      if (stop) return Cancel(j);
      if (j.resignal) return Resignal(j);
      return Commit(j);
    case Phase::kCommitted:
      if (stop) return Cancel(j);
      if (j.resignal) return Resignal(j);
      return;  // callbacks and probes bring news
    case Phase::kFinal:
    case Phase::kCancelled:
      return CommitEnd(j);
  }
}

void GridManager::Impl::EnsureDelegation(Resource& r) {
  if (r.delegating) return;
  r.delegating = true;
  std::string rid = "kite-delegation-" + RandomHex(12);
  Call<Result<gram::Delegation>>(
      r, [rid](gram::Client& c) { return c.Delegate(rid); },
      [this, &r, gen = credential_gen](Result<gram::Delegation> d) {
        r.delegating = false;
        if (d) {
          MarkUp(r);
          r.delegation_id = d->id;
          r.delegation_not_after = d->not_after;
          r.delegated_gen = gen;
          r.delegation_refused = false;
          spdlog::info("gridmanager: delegated to {} as {}", r.name.HostPort(), d->id);
        } else if (SiteDown(d.error())) {
          MarkDown(r, d.error());
          return;
        } else {
          // Refused: no job can go there with this proxy. Jobs already there are told where
          // GASS and callbacks moved without a new delegation.
          r.delegation_refused = true;
          std::vector<std::string> ids;
          for (auto& [id, j] : jobs) {
            if (j.res == &r && j.phase == Phase::kIdle && WantsToRun(j)) ids.push_back(id);
          }
          for (auto& id : ids) {
            auto it = jobs.find(id);
            Hold(
                it->second,
                "Grid resource " + r.name.HostPort() + " refused the proxy: " + d.error().message(),
                kHoldCredentialError, 0);
          }
          std::vector<std::string> moved;
          for (auto& [id, j] : jobs) {
            if (j.res == &r && j.resignal) moved.push_back(id);
          }
          for (auto& id : moved) {
            if (auto it = jobs.find(id); it != jobs.end()) Drive(it->second);
          }
          return;
        }
        DriveResource(r);
      });
}

// The site keeps the delegation's id and swaps the proxy behind it, so every job there that uses
// it (all of this gridmanager's jobs there: see Resignal) goes on with the new one.
void GridManager::Impl::RefreshDelegation(Resource& r) {
  r.delegating = true;
  std::string rid = "kite-delegation-" + RandomHex(12);
  Call<Result<gram::Delegation>>(
      r, [rid, id = r.delegation_id](gram::Client& c) { return c.Delegate(rid, id); },
      [this, &r, gen = credential_gen](Result<gram::Delegation> d) {
        r.delegating = false;
        if (d) {
          MarkUp(r);
          r.delegation_not_after = d->not_after;
          r.delegated_gen = gen;
          spdlog::info("gridmanager: refreshed delegation {} at {} (valid until {:.0f})",
                       r.delegation_id, r.name.HostPort(), d->not_after);
        } else if (SiteDown(d.error())) {
          return MarkDown(r, d.error());
        } else {
          // The site no longer has it (or refuses the new proxy): start a new delegation; jobs
          // there are moved to it when they are next signalled.
          spdlog::warn("gridmanager: refreshing delegation {} at {} failed: {}", r.delegation_id,
                       r.name.HostPort(), d.error().message());
          r.delegation_id.clear();
          for (auto& [id, j] : jobs) {
            if (j.res == &r && (j.phase == Phase::kSubmitted || j.phase == Phase::kCommitted)) {
              j.resignal = true;
            }
          }
        }
        DriveResource(r);
      });
}

// A new proxy in the file (kite proxy init again, MyProxy renewal): present it from now on,
// and hand it to every site that holds a delegation made from the old one.
void GridManager::Impl::CheckProxy() {
  struct stat st {};
  if (::stat(options.proxy.c_str(), &st) != 0) return;  // gone for now: keep what we have
  if (st.st_ino == proxy_stat.st_ino && st.st_size == proxy_stat.st_size &&
      st.st_mtim.tv_sec == proxy_stat.st_mtim.tv_sec &&
      st.st_mtim.tv_nsec == proxy_stat.st_mtim.tv_nsec) {
    return;
  }
  auto cred = credentials::LoadProxyFile(options.proxy);
  Result<credentials::Identity> id = Fail(ErrorCode::kInvalidInput, "unreadable");
  if (cred) {
    id = verifier->Verify(cred->chain);
  } else {
    id = Fail(cred.error());
  }
  if (!id) {
    // Half-written or not (yet) valid: look again at the next tick, keep the old one meanwhile.
    spdlog::warn("gridmanager: proxy {} changed but cannot be used: {}", options.proxy,
                 id.error().message());
    return;
  }
  proxy_stat = st;
  if (id->subject != identity) {
    spdlog::error("gridmanager: proxy {} now speaks for {}, not {}; keeping the old one",
                  options.proxy, id->subject, identity);
    return;
  }
  credential = std::move(*cred);
  ++credential_gen;
  if (auto s = gass->SetCredential(credential); !s) {
    spdlog::error("gridmanager: GASS server keeps the old proxy: {}", s.error().message());
  }
  if (auto s = callbacks->SetCredential(credential); !s) {
    spdlog::error("gridmanager: callback server keeps the old proxy: {}", s.error().message());
  }
  int sites = 0;
  for (auto& [key, r] : resources) {
    if (auto c = MakeClient(r->name)) r->client = std::move(*c);
    r->delegation_refused = false;
    if (!r->delegation_id.empty()) ++sites;
  }
  spdlog::info(
      "gridmanager: proxy {} refreshed ({} s left); re-delegating to {} site(s)", options.proxy,
      std::chrono::duration_cast<std::chrono::seconds>(id->not_after - credentials::Clock::now())
          .count(),
      sites);
  for (auto& [key, r] : resources) DriveResource(*r);
}

void GridManager::Impl::Submit(GridJob& j) {
  Resource& r = *j.res;
  double now_wall =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // A delegation near its end is replaced only when a newer proxy can do better (a short proxy
  // gives short delegations; the agent holds jobs whose proxy runs out).
  if (r.delegation_id.empty() ||
      (r.delegation_not_after < now_wall + 60 && r.delegated_gen < credential_gen)) {
    r.delegation_id.clear();
    return EnsureDelegation(r);
  }
  if (r.active_jobs >= options.max_jobs_per_resource) return;  // a finishing job drives it
  // Output starts afresh with each attempt: nothing of this attempt can have been written yet,
  // since a job's output flows only after its GridJobId is stored and it is committed.
  for (auto& w : j.plan.writable) {
    if (::truncate(w.path.c_str(), 0) != 0 && errno != ENOENT) {
      spdlog::warn("gridmanager: job {}: cannot empty {}", j.id, w.path);
    }
  }
  gram::JobDescription desc = j.plan.desc;
  desc.gass_url = gass->url() + "/jobs/" + j.id;
  desc.delegation_id = r.delegation_id;
  desc.callback_url = callbacks->Url("/callbacks/" + j.id);
  std::string rid = RequestIdBase(j.ad, j.attempt) + "/submit";
  j.request = true;
  Call<Result<gram::JobStatus>>(
      r, [rid, desc](gram::Client& c) { return c.Submit(rid, desc); },
      [this, id = j.id](Result<gram::JobStatus> st) {
        GridJob* replied = Replied(id);
        if (!replied) return;
        GridJob& g = *replied;
        if (!st) {
          if (st.error().code() == ErrorCode::kNotFound) {  // our delegation is gone there
            g.res->delegation_id.clear();
            return Drive(g);
          }
          return Failed(g, st.error(), "submit");
        }
        MarkUp(*g.res);
        SetContact(g, st->contact);
        g.phase = Phase::kSubmitted;
        g.seq = st->seq;
        g.remote_state = std::string(gram::JobStateName(st->state));
        // Write ahead: the contact is stored before the commit that lets the job run.
        json::object u = UpdateFor(g);
        u["set"] = json::object{{"GridJobId", Quote(g.contact)},
                                {"GridJobStatus", Quote(g.remote_state)},
                                {"GridAttempt", std::to_string(g.attempt)}};
        u["event"] =
            json::object{{"code", 27},
                         {"text", "Job submitted to grid resource\n    GridResource: kite " +
                                      g.res->name.HostPort() + "\n    GridJobId: " + g.contact}};
        g.saving = true;
        QueueUpdate(std::move(u), Saved(id));
      });
}

void GridManager::Impl::Commit(GridJob& j) {
  std::string rid = RequestIdBase(j.ad, j.attempt) + "/commit";
  j.request = true;
  Call<Result<gram::JobStatus>>(
      *j.res, [rid, site = j.site_id](gram::Client& c) { return c.Commit(rid, site); },
      [this, id = j.id](Result<gram::JobStatus> st) {
        GridJob* replied = Replied(id);
        if (!replied) return;
        GridJob& g = *replied;
        if (!st && st.error().code() == ErrorCode::kNotFound) {
          // The site forgot it before it was committed (its commit timeout): it never ran.
          json::object u = UpdateFor(g);
          json::object set;
          ClearAttempt(g, set);
          u["set"] = std::move(set);
          g.saving = true;
          return QueueUpdate(std::move(u), Saved(id));
        }
        if (!st) return Failed(g, st.error(), "commit");
        MarkUp(*g.res);
        if (g.phase == Phase::kSubmitted) g.phase = Phase::kCommitted;
        Apply(g, *st);
        // What happened while the commit was under way (a kite rm, a callback with the job's
        // end, which Apply of this older news then ignores) is acted on now.
        Drive(g);
      });
}

void GridManager::Impl::Resignal(GridJob& j) {
  Resource& r = *j.res;
  // Moved to this run's delegation too, so that a refreshed proxy reaches it (jobs of an earlier
  // run were submitted under a delegation this run does not know).
  if (r.delegation_id.empty() && !r.delegation_refused) return EnsureDelegation(r);
  gram::SignalRequest sig;
  sig.gass_url = gass->url() + "/jobs/" + j.id;
  sig.callback_url = callbacks->Url("/callbacks/" + j.id);
  sig.delegation_id = r.delegation_id;
  std::string rid =
      RequestIdBase(j.ad, j.attempt) + "/signal-" + std::to_string(static_cast<int64_t>(start_ms));
  j.request = true;
  Call<Result<gram::JobStatus>>(
      *j.res, [rid, site = j.site_id, sig](gram::Client& c) { return c.Signal(rid, site, sig); },
      [this, id = j.id](Result<gram::JobStatus> st) {
        GridJob* replied = Replied(id);
        if (!replied) return;
        GridJob& g = *replied;
        if (!st && st.error().code() == ErrorCode::kNotFound) {
          g.resignal = false;
          Heard(g);
          return Commit(g);  // the commit finds out how it was lost
        }
        if (!st && st.error().code() == ErrorCode::kConflict) {
          g.resignal = false;  // finished jobs take no signals; a status tells how it ended
          Heard(g);
          return Commit(g);
        }
        if (!st) return Failed(g, st.error(), "signal");
        MarkUp(*g.res);
        g.resignal = false;
        if (st->state != JobState::kPendingCommit && g.phase == Phase::kSubmitted) {
          g.phase = Phase::kCommitted;
        }
        Apply(g, *st);
        Drive(g);
      });
}

void GridManager::Impl::Cancel(GridJob& j) {
  std::string rid = RequestIdBase(j.ad, j.attempt) + "/cancel";
  j.request = true;
  Call<Result<gram::JobStatus>>(
      *j.res, [rid, site = j.site_id](gram::Client& c) { return c.Cancel(rid, site); },
      [this, id = j.id](Result<gram::JobStatus> st) {
        GridJob* replied = Replied(id);
        if (!replied) return;
        GridJob& g = *replied;
        if (!st && st.error().code() == ErrorCode::kNotFound) {
          g.phase = Phase::kCancelled;  // already gone there
          return AfterCommitEnd(g);
        }
        if (!st) return Failed(g, st.error(), "cancel");
        MarkUp(*g.res);
        Apply(g, *st);
        // A callback with the end may have overtaken this reply (Apply then ignores the reply):
        // go on to commit-end. A cancel still under way at the site is followed by callbacks
        // and probes.
        if (g.phase == Phase::kCancelled || g.phase == Phase::kFinal) Drive(g);
      });
}

void GridManager::Impl::CommitEnd(GridJob& j) {
  std::string rid = RequestIdBase(j.ad, j.attempt) + "/commit-end";
  j.request = true;
  Call<kite::Status>(
      *j.res, [rid, site = j.site_id](gram::Client& c) { return c.CommitEnd(rid, site); },
      [this, id = j.id](kite::Status st) {
        GridJob* replied = Replied(id);
        if (!replied) return;
        GridJob& g = *replied;
        if (!st && st.error().code() != ErrorCode::kNotFound) {
          return Failed(g, st.error(), "commit-end");
        }
        MarkUp(*g.res);
        AfterCommitEnd(g);
      });
}

// Clears what ties the job to its last attempt, for the next one.
void GridManager::Impl::ClearAttempt(GridJob& j, json::object& set) {
  ++j.attempt;
  SetContact(j, "");
  j.phase = Phase::kIdle;
  j.seq = -1;
  j.remote_state.clear();
  j.final = {};
  set["GridJobId"] = "undefined";
  set["GridFinal"] = "undefined";
  set["GridJobStatus"] = "undefined";
  set["GridAttempt"] = std::to_string(j.attempt);
  // A finishing job may let a waiting one go to this site.
  if (j.res) {
    boost::asio::post(io, [this, r = j.res] { DriveResource(*r); });
  }
}

// The site has forgotten the job (commit-end, or it was gone): tell the agent what became of it.
void GridManager::Impl::AfterCommitEnd(GridJob& j) {
  gram::JobStatus final = j.final;
  bool was_final = j.phase == Phase::kFinal;
  json::object u = UpdateFor(j);
  json::object set;
  ClearAttempt(j, set);
  u["set"] = std::move(set);
  std::string id = j.id;
  if (j.status == kRemoved) {
    u["action"] = "retire";
  } else if (!was_final || !WantsToRun(j)) {
    // Cancelled because it was held (or released meanwhile): nothing more to tell.
  } else if (final.state == JobState::kDone) {
    json::object exit{{"signaled", final.exit ? final.exit->signaled : false},
                      {"code", final.exit ? final.exit->code : 0}};
    u["action"] = "exited";
    u["exit"] = std::move(exit);
    // The history keeps where it ran, as HTCondor's does.
    u["set"].as_object().erase("GridJobId");
    u["set"].as_object()["GridJobStatus"] = Quote("done");
  } else if (gram::IsRetryable(final.failure) && j.attempt <= options.max_resubmits) {
    u["action"] = "idle";
    u["reason"] = "The grid resource " + j.res->name.HostPort() + " reported " +
                  std::string(gram::FailureCodeName(final.failure)) + ": " + final.failure_message +
                  "; resubmitting (attempt " + std::to_string(j.attempt + 1) + " of " +
                  std::to_string(options.max_resubmits + 1) + ").";
  } else {
    u["action"] = "hold";
    u["reason"] =
        "Error from grid resource " + j.res->name.HostPort() + ": " +
        std::string(gram::FailureCodeName(final.failure)) + ": " + final.failure_message +
        (gram::IsRetryable(final.failure) ? " (after " + std::to_string(j.attempt) + " attempts)"
                                          : "");
    u["code"] = final.failure == gram::FailureCode::kCredentialExpired ? kHoldCredentialError
                                                                       : kHoldGridError;
    u["subcode"] = static_cast<int>(final.failure);
    j.status = kHeld;
  }
  j.saving = true;
  QueueUpdate(std::move(u), [this, id](const json::object& res) {
    auto it = jobs.find(id);
    if (it == jobs.end()) return;
    GridJob& g = it->second;
    g.saving = false;
    auto* s = res.if_contains("status");
    if (!s || !s->is_int64() || s->as_int64() == 0) return Forget(g);  // left the queue
    g.status = static_cast<int>(s->as_int64());
    Drive(g);
  });
}

// News of the job from the site: a reply or a callback.
void GridManager::Impl::Apply(GridJob& j, const gram::JobStatus& st) {
  Heard(j);
  if (st.seq < j.seq) return;  // an older callback overtaken by a reply
  j.seq = st.seq;
  j.last_heard = SteadyNow();
  if (j.phase == Phase::kFinal || j.phase == Phase::kCancelled || j.phase == Phase::kIdle) return;
  std::string name(gram::JobStateName(st.state));
  bool changed = name != j.remote_state;
  j.remote_state = name;
  if (st.state != JobState::kPendingCommit && j.phase == Phase::kSubmitted && !j.resignal) {
    j.phase = Phase::kCommitted;
  }
  if (gram::IsTerminal(st.state)) {
    if (!WantsToRun(j)) {
      j.phase = Phase::kCancelled;
      return Drive(j);
    }
    j.phase = Phase::kFinal;
    j.final = st;
    // Write ahead: how it ended is stored before commit-end lets the site forget it.
    json::object set{{"GridFinal", "true"}, {"GridJobStatus", Quote(name)}};
    if (st.exit) {
      set["GridExitCode"] = std::to_string(st.exit->code);
      set["GridExitBySignal"] = st.exit->signaled ? "true" : "false";
    }
    if (st.failure != gram::FailureCode::kNone) {
      set["GridFailureCode"] = Quote(gram::FailureCodeName(st.failure));
      set["GridFailureMessage"] = Quote(st.failure_message);
    }
    json::object u = UpdateFor(j);
    u["set"] = std::move(set);
    j.saving = true;
    return QueueUpdate(std::move(u), Saved(j.id));
  }
  if (!changed) return;
  json::object u = UpdateFor(j);
  u["set"] = json::object{{"GridJobStatus", Quote(name)}};
  if (st.state == JobState::kActive && j.status == kIdle) {
    u["action"] = "running";
    j.status = kRunning;
  }
  QueueUpdate(std::move(u));
}

void GridManager::Impl::Failed(GridJob& j, const Error& e, const std::string& what) {
  if (SiteDown(e)) {
    MarkDown(*j.res, e);
    return;
  }
  int code = e.code() == ErrorCode::kProxyExpired || e.code() == ErrorCode::kAuthFailed
                 ? kHoldCredentialError
                 : kHoldGridError;
  std::string reason =
      "Grid resource " + j.res->name.HostPort() + " refused the " + what + ": " + e.message();
  if (j.phase == Phase::kIdle || !WantsToRun(j)) {
    if (j.phase != Phase::kIdle) {
      // A cancel or commit-end refused for good: the site will not let us settle the job.
      spdlog::error("gridmanager: job {}: {}", j.id, reason);
      if (j.status == kRemoved) {
        j.phase = Phase::kCancelled;
        return AfterCommitEnd(j);
      }
    }
    if (WantsToRun(j)) Hold(j, reason, code, 0);
    return;
  }
  Hold(j, reason, code, 0);
  Drive(j);  // held with something at the site: cancel it there
}

void GridManager::Impl::Hold(GridJob& j, const std::string& reason, int code, int subcode) {
  spdlog::warn("gridmanager: holding job {}: {}", j.id, reason);
  json::object u = UpdateFor(j);
  u["action"] = "hold";
  u["reason"] = reason;
  u["code"] = code;
  u["subcode"] = subcode;
  j.status = kHeld;
  QueueUpdate(std::move(u));
}

void GridManager::Impl::Forget(GridJob& j) {
  SetContact(j, "");
  gass->RemoveJob(j.id);
  jobs.erase(j.id);
}

void GridManager::Impl::Probe() {
  CheckProxy();
  double now = SteadyNow();
  for (auto& [id, j] : jobs) {
    if (j.request || j.saving || j.phase != Phase::kCommitted || j.resignal) continue;
    if (now - j.last_heard < options.probe_interval) continue;
    if (j.res->down_until > now) continue;
    j.request = true;
    j.last_heard = now;
    Call<Result<gram::JobStatus>>(
        *j.res, [site = j.site_id](gram::Client& c) { return c.Status(site); },
        [this, id](Result<gram::JobStatus> st) {
          GridJob* replied = Replied(id);
          if (!replied) return;
          GridJob& g = *replied;
          if (!st && st.error().code() == ErrorCode::kNotFound) {
            // Committed and gone without an end we stored: the site lost it. Run it again.
            g.final = {};
            g.final.state = JobState::kFailed;
            g.final.failure = gram::FailureCode::kBatchLost;
            g.final.failure_message = "the site no longer knows the job";
            g.phase = Phase::kFinal;
            return AfterCommitEnd(g);
          }
          if (!st) return Failed(g, st.error(), "status probe");
          MarkUp(*g.res);
          Apply(g, *st);
          Drive(g);
        });
  }
  double every = std::clamp(options.probe_interval / 4, 0.25, 15.0);
  probe_timer.expires_after(std::chrono::milliseconds(static_cast<int64_t>(every * 1000)));
  probe_timer.async_wait([this](auto ec) {
    if (!ec) Probe();
  });
}

}  // namespace kite::gridmanager
