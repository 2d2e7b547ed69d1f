// kite-agent: start-up, the wiring of the agent's parts, actions on jobs, policies, commits.
#include "agent/agent.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <chrono>
#include <optional>

#include "agent/analyze.h"
#include "agent/api_server.h"
#include "agent/cred_monitor.h"
#include "agent/dags.h"
#include "agent/gridmanager_supervisor.h"
#include "agent/local_jobs.h"
#include "agent/local_startd.h"
#include "agent/mailer.h"
#include "agent/myproxy_renewal.h"
#include "agent/notifier.h"
#include "agent/policy.h"
#include "agent/pool.h"
#include "agent/pool_tls.h"
#include "agent/rest_server.h"
#include "agent/userlog.h"
#include "common/clock.h"
#include "common/files.h"

namespace kite::agent {
namespace {

// The home holds the queue (arguments, environments) and the logs: the user's alone. A home made
// with a wider mode (by hand, or by an older Kite) is tightened, not refused: that is the fix.
Status MakeHomePrivate(const std::string& home) {
  if (auto st = MakeDirs(home, 0700); !st) return st;
  struct stat sb {};
  if (::stat(home.c_str(), &sb) != 0) return FailErrno("stat " + home);
  if (sb.st_uid != ::geteuid())
    return Fail(ErrorCode::kPermission, home + " belongs to another user (uid " +
                                            std::to_string(sb.st_uid) + "); refusing to use it");
  if ((sb.st_mode & 077) == 0) return {};
  if (::chmod(home.c_str(), sb.st_mode & 0700) != 0) return FailErrno("chmod " + home);
  spdlog::warn("agent: {} was readable by others (mode {:o}); it is now {:o}", home,
               sb.st_mode & 0777, sb.st_mode & 0700);
  return {};
}

// SQLite takes an empty file for a new database: an emptied queue.db (a full disk, a copy gone
// wrong) would silently restart the queue, its history and its cluster ids. Only a home without
// a queue.db starts a new queue.
Status CheckQueueFile(const std::string& path) {
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0) return {};
  if (!S_ISREG(sb.st_mode)) return Fail(ErrorCode::kInvalidInput, path + " is not a file");
  if (sb.st_size == 0)
    return Fail(ErrorCode::kInvalidInput,
                path +
                    " is empty (0 bytes): the queue, its history and its cluster ids are "
                    "gone. Restore it from a backup, or move it away to start a new queue.");
  return {};
}

}  // namespace

Agent::Agent(AgentOptions options)
    : options_(std::move(options)),
      child_signals_(io_, SIGCHLD),
      stop_signals_(io_, SIGTERM, SIGINT),
      flush_timer_(io_),
      periodic_timer_(io_),
      cred_timer_(io_) {}

Agent::~Agent() {
  if (local_startd_) local_startd_->Stop();  // in-process agents (tests) never call Stop()
}

Status Agent::Start() {
  if (auto st = MakeHomePrivate(options_.home); !st) return st;
  if (auto st = CheckQueueFile(options_.queue_path()); !st) return st;
  if (auto st = MakeDirs(options_.spool_path(), 0700); !st) return st;
  auto store = store::JobQueueStore::Open(options_.queue_path());
  if (!store) return Fail(store.error());
  store_ = std::move(*store);
  queue_ =
      std::make_unique<JobQueue>(store_.get(), WallNow, static_cast<size_t>(options_.history_max));
  auto retire = [this](Job& j) { Finish(j); };
  local_ = std::make_unique<LocalJobs>(io_, *queue_,
                                       LocalJobs::Options{.spool = options_.spool_path(),
                                                          .max_jobs = options_.max_local_jobs,
                                                          .kill_grace = options_.kill_grace},
                                       LocalJobs::Hooks{[this] { CommitSoon(); }, retire});
  grid_ = std::make_unique<GridHub>(
      io_, *queue_, GridHub::Hooks{retire, [this](Job& j) { broker_->FinishMove(j); }});
  broker_ = std::make_unique<Broker>(io_, *queue_, options_.broker, Broker::Hooks{[this](Job& j) {
                                       grid_->OnStatus(j, false);  // the gridmanager hears of it
                                       CommitSoon();
                                     }});
  auto authority = PoolAuthority::Open(options_.home + "/pool", WallNow);
  if (!authority) return Fail(authority.error().Wrap("the pool's credentials"));
  pool_authority_ = std::move(*authority);
  pool_ = std::make_unique<Pool>(io_, *queue_, options_.pool, options_.spool_path(),
                                 *pool_authority_, Pool::Hooks{[this] { CommitSoon(); }, retire});
  supervisor_ = std::make_unique<GridManagerSupervisor>(io_, options_, [this] {
    auto proxies = grid_->ProxiesNeedingManager();
    // A proxy the credential monitor found unusable holds its jobs; no gridmanager would start.
    std::erase_if(proxies, [this](const std::string& p) {
      return cred_monitor_ && cred_monitor_->Unusable(p);
    });
    return proxies;
  });
  flood_ = std::make_unique<Flood>(
      io_, *queue_, *pool_, *broker_, *pool_authority_, options_.home + "/flood.json",
      Flood::Hooks{[this] { CommitSoon(); },
                   [this](const std::vector<Job*>& jobs, const std::string& reason) {
                     std::vector<std::string> errors;
                     Act(Action::kRemove, jobs, reason, &errors);
                     for (const auto& e : errors) spdlog::warn("flood: {}", e);
                   }});
  waiters_ = std::make_unique<Waiters>(io_, *queue_, *store_);
  dags_ = std::make_unique<Dags>(io_, *queue_,
                                 Dags::Hooks{[this] { CommitSoon(); }, retire,
                                             [this](Job& j, const std::string& reason) {
                                               std::vector<std::string> errors;
                                               Act(Action::kRemove, {&j}, reason, &errors);
                                             }});
  queue_->OnStatusChange([this](Job& j, bool leaving) { OnStatusChange(j, leaving); });
  queue_->OnFlushed([this] { OnFlushed(); });
  if (auto st = queue_->Load(); !st) return st;
  dags_->Recover();  // before anything retires a node's job
  StartMailAndCredentials();
  local_->Recover();
  pool_->Recover();
  if (auto st = queue_->Flush(); !st) return st;

  api_ = std::make_unique<ApiServer>(*this);
  if (auto st = api_->Listen(options_.socket_path()); !st) return st;
  ::unlink(options_.rest_address_path().c_str());
  if (!options_.rest_listen.empty()) {
    auto rest = StartRestServer(*this);
    if (!rest) return Fail(rest.error());
    rest_ = std::move(*rest);
  }

  child_signals_.async_wait([this](auto ec, int) {
    if (!ec) OnChildSignal();
  });
  stop_signals_.async_wait([this](auto ec, int sig) {
    if (!ec) {
      spdlog::info("agent: signal {}, stopping", sig);
      Stop();
    }
  });
  if (auto st = pool_->Listen(options_.pool_socket_path()); !st) return st;
  pool_tls_ = std::make_unique<PoolTlsListener>(
      io_, options_.pool,
      PoolTlsListener::Paths{options_.pool_address_path(), options_.pool_port_path()}, *pool_);
  pool_tls_->Start();
  local_startd_ = std::make_unique<LocalStartd>(
      io_, options_.pool, options_.home, options_.pool_socket_path(), *pool_authority_,
      [this](const std::string& name) { pool_->StartdDied(name); },
      [this](const std::string& name) { return pool_->HasRunsOn(name); });
  local_startd_->Start();
  ArmTimer(periodic_timer_, options_.periodic_interval, &Agent::PeriodicPolicy);
  local_->Schedule();
  OnChildSignal();  // reap anything that ended before the handler was installed
  supervisor_->Ensure();
  broker_->Start();
  flood_->Start();
  spdlog::info("agent: serving {} with {} jobs queued", options_.socket_path(),
               queue_->jobs().size());
  return {};
}

void Agent::RecheckPool() {
  pool_->RecheckAdmissions();
}

// Every status change of every job passes here (the queue's hook), to the parts that follow it.
void Agent::OnStatusChange(Job& j, bool leaving) {
  if (notifier_) notifier_->OnStatusChange(j, leaving);
  dags_->OnStatus(j, leaving);
  if (!leaving && cred_monitor_ && !j.ad.LookupOwn("x509UserProxyExpiration") &&
      j.ad.Lookup("x509userproxy"))
    CheckCredentialsSoon();
  if (j.universe == kUniverseGrid) {
    broker_->OnStatus(j, leaving);  // brokered jobs and flood glide-ins
    grid_->OnStatus(j, leaving);
    if (j.ad.EvaluateBool("KiteGlidein").value_or(false)) pool_->OnGlideinStatus(j, leaving);
  } else if (j.universe == kUniverseLocal) {
    local_->OnStatus(j, leaving);
  } else if (j.universe == kUniverseVanilla) {
    pool_->OnStatus(j, leaving);
  }
}

void Agent::OnFlushed() {
  local_->OnFlushed();
  if (notifier_) notifier_->OnFlushed();
  waiters_->Answer();
  pool_->OnFlushed();
  grid_->AnswerPolls();
  if (grid_->check_managers()) {
    grid_->managers_checked();
    supervisor_->Ensure();
  }
}

void Agent::StartMailAndCredentials() {
  std::string domain = UidDomain(options_.mail);
  if (options_.mail.enabled()) {
    mailer_ = std::make_unique<Mailer>(options_.mail, options_.outbox_path());
    if (auto st = mailer_->Start(); !st) {
      spdlog::error("agent: mail disabled: {}", st.error().ToString());
      mailer_.reset();
    }
  }
  notifier_ = std::make_unique<Notifier>(*queue_, mailer_.get(), domain);
  notifier_->Enable();
  CredentialMonitor::Actions actions;
  actions.hold = [this](Job& j, const std::string& reason, int code, int subcode) {
    HoldBySystem(j, reason, code, subcode);
  };
  actions.release = [this](Job& j, const std::string& reason) {
    std::vector<std::string> errors;
    Act(Action::kRelease, {&j}, reason, &errors);
  };
  actions.commit = [this] {
    if (auto st = queue_->Flush(); !st) {
      spdlog::error("agent: cannot write the queue: {}; retrying", st.error().ToString());
      CommitSoon();
      return false;
    }
    return true;
  };
  cred_monitor_ = std::make_unique<CredentialMonitor>(*queue_, options_.credentials,
                                                      options_.credential_state_path(),
                                                      mailer_.get(), domain, std::move(actions));
  cred_monitor_->LoadState();
  if (options_.myproxy.enabled()) {
    renewer_ = std::make_unique<ProxyRenewer>(
        io_, options_.myproxy,
        [this](const std::string&, const Result<double>&) { CheckCredentialsSoon(); });
    // Below min_lifetime the monitor would hold the proxy's jobs: not while a renewal is under
    // way (or can start now).
    cred_monitor_->SetRenewalHook([this](const RenewalRequest& r) {
      renewer_->Consider(r.path, static_cast<double>(r.time_left));
      return renewer_->Busy(r.path) ? RenewalAnswer::kRenewing : RenewalAnswer::kHold;
    });
  }
  ArmTimer(cred_timer_, options_.credentials.check_interval, &Agent::CheckCredentials);
  CheckCredentialsSoon();
}

void Agent::CheckCredentials() {
  cred_monitor_->Check();
  if (!renewer_) return;
  // MyProxy renewal starts well before the monitor would hold anything (renew_before).
  double now = WallNow();
  for (const auto& [path, p] : cred_monitor_->proxies()) {
    if (p.valid && !p.jobs.empty())
      renewer_->Consider(path, static_cast<double>(p.not_after) - now);
  }
}

// New jobs get their proxy attributes (and an expired proxy's jobs their hold) at once, not a
// check_interval later.
void Agent::CheckCredentialsSoon() {
  if (cred_check_posted_ || !cred_monitor_) return;
  cred_check_posted_ = true;
  boost::asio::post(io_, [this] {
    cred_check_posted_ = false;
    CheckCredentials();
  });
}

void Agent::Run() {
  io_.run();
}

void Agent::Stop(bool stop_local_startd) {
  // Running local jobs keep running under their wrappers, and pool jobs on their startds; the
  // next agent adopts them.
  if (auto st = queue_->Flush(); !st)
    spdlog::error("agent: final flush: {}", st.error().ToString());
  if (api_) api_->Close();
  if (local_startd_) {
    if (stop_local_startd) {
      local_startd_->Stop();
    } else {
      local_startd_->Detach();
    }
  }
  if (pool_tls_) pool_tls_->Stop();
  if (pool_) pool_->Close();
  if (flood_) flood_->Stop();
  if (broker_) broker_->Stop();
  if (rest_) {
    rest_->Close();
    ::unlink(options_.rest_address_path().c_str());
  }
  if (mailer_) mailer_->Stop();
  io_.stop();
}

ApiResponse Agent::HandleNow(const ApiRequest& request) {
  std::optional<ApiResponse> out;
  HandleApiRequest(*this, request, [&out](ApiResponse r) { out = std::move(r); });
  while (!out) {
    if (io_.stopped()) io_.restart();
    io_.run_one();
  }
  return std::move(*out);
}

void Agent::ArmTimer(boost::asio::steady_timer& t, double seconds, void (Agent::*fn)()) {
  t.expires_after(std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6)));
  t.async_wait([this, &t, seconds, fn](auto ec) {
    if (ec) return;
    (this->*fn)();
    ArmTimer(t, seconds, fn);
  });
}

// Changes wait at most commit_delay_ms to share one transaction.
void Agent::CommitSoon() {
  if (flush_armed_) return;
  flush_armed_ = true;
  flush_timer_.expires_after(std::chrono::milliseconds(options_.commit_delay_ms));
  flush_timer_.async_wait([this](auto ec) {
    flush_armed_ = false;
    if (!ec) FlushNow();
  });
}

void Agent::FlushNow() {
  if (auto st = queue_->Flush(); !st) {
    spdlog::error("agent: cannot write the queue: {}; retrying", st.error().ToString());
    CommitSoon();
  }
}

// Every ended child is reaped here; its owner (the local jobs, the gridmanager supervisor) is
// found by pid.
void Agent::OnChildSignal() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    if (supervisor_->Reaped(pid, status)) continue;
    if (dags_->Reaped(pid, status)) continue;
    if (local_startd_ && local_startd_->Reaped(pid, status)) continue;
    local_->Reaped(pid, status);
  }
  child_signals_.async_wait([this](auto ec, int) {
    if (!ec) OnChildSignal();
  });
}

std::string Agent::Analyze(const std::vector<JobKey>& keys) const {
  AnalyzeFacts f;
  f.max_local_jobs = options_.max_local_jobs;
  f.local_running = local_->running();
  f.site = [this](const std::string& hp) -> std::optional<AnalyzeFacts::Site> {
    auto it = grid_->resources().find(hp);
    if (it == grid_->resources().end()) return std::nullopt;
    return AnalyzeFacts::Site{it->second.reachable, it->second.last_contact, it->second.last_error};
  };
  f.proxy_problem = [this](const std::string& proxy) -> std::string {
    if (!cred_monitor_) return "";
    auto it = cred_monitor_->proxies().find(proxy);
    if (it == cred_monitor_->proxies().end()) return "";
    return it->second.error.empty() ? it->second.untrusted : it->second.error;
  };
  double now = queue_->Now();
  f.gridmanager = [this, now](const std::string& proxy) {
    return supervisor_->Describe(proxy, now);
  };
  for (const auto& slot : pool_->Slots())
    f.slots.push_back({slot.ad, slot.job.has_value(), slot.local});
  f.local_restore_site_checkpoints = options_.pool.local_restore_site_checkpoints;
  if (pool_tls_) {
    auto v = pool_tls_->Describe();
    if (v.configured && !v.listening) f.glidein_problem = v.problem;
  }
  auto before = local_->IdleBefore(std::set<JobKey>(keys.begin(), keys.end()));
  std::string out;
  for (JobKey k : keys) {
    const Job* j = queue_->Find(k);
    if (!j) continue;
    auto it = before.find(k);
    f.local_idle_before = it == before.end() ? 0 : it->second;
    out += AnalyzeJob(*j, f, now);
  }
  return out;
}

void Agent::Finish(Job& job) {
  if (job.universe == kUniverseLocal) local_->Forget(job.key);
  if (dags_->KeepsForNode(job)) return;  // until its DAG has its result (agent/dags.h)
  queue_->Retire(job);
}

void Agent::PeriodicPolicy() {
  local_->SampleUsage();  // so that a policy on MemoryUsage or RemoteUserCpu sees the latest
  std::vector<std::pair<JobKey, PolicyDecision>> todo;
  for (auto& [key, j] : queue_->jobs()) {
    if (!HasPeriodicPolicy(j)) continue;
    auto d = EvaluatePeriodic(j);
    if (d.action != PolicyDecision::Action::kNone) todo.emplace_back(key, std::move(d));
  }
  for (auto& [key, d] : todo) {
    Job* j = queue_->Find(key);
    if (!j) continue;
    std::vector<std::string> errors;
    switch (d.action) {
      case PolicyDecision::Action::kRemove:
        Act(Action::kRemove, {j}, d.reason, &errors);
        break;
      case PolicyDecision::Action::kHold:
        HoldBySystem(*j, d.reason, d.code, d.subcode);
        break;
      case PolicyDecision::Action::kRelease:
        (void)queue_->Release(*j, d.reason);
        break;
      case PolicyDecision::Action::kNone:
        break;
    }
  }
  if (!todo.empty()) CommitSoon();
}

void Agent::HoldBySystem(Job& job, const std::string& reason, int code, int subcode) {
  bool stop = job.status == kRunning && job.universe == kUniverseLocal;
  if (!queue_->Hold(job, reason, code, subcode)) return;
  if (stop) local_->StartKill(job);
  CommitSoon();
}

int Agent::Act(Action action, const std::vector<Job*>& jobs, const std::string& reason,
               std::vector<std::string>* errors) {
  int changed = 0;
  for (Job* j : jobs) {
    bool local = j->universe == kUniverseLocal;
    // A job known at a site, or running in the pool, leaves once it is stopped there.
    bool at_site =
        (j->universe == kUniverseGrid && j->ad.EvaluateString("GridJobId").has_value()) ||
        (j->universe == kUniverseVanilla && pool_->HasRun(*j));
    Status st;
    switch (action) {
      case Action::kForceRemove:
        if (j->universe == kUniverseGrid) {
          if (j->status != kRemoved) st = queue_->MarkRemoved(*j, reason);
          if (!st) break;
          if (at_site) {
            queue_->AddEvent(*j, kEventGeneric,
                             "Removed with --forcex: the site was not asked to confirm the "
                             "cancel; the job may still run there.");
          }
          Finish(*j);
          break;
        }
        [[fallthrough]];  // local jobs: as rm
      case Action::kRemove:
        st = queue_->MarkRemoved(*j, reason);
        if (!st) break;
        if (local && local_->HasProcess(*j)) {
          local_->StartKill(*j);
        } else if (!at_site) {
          // A grid job known at a site stays until its gridmanager has cancelled it there (and
          // then retires it); anything else leaves now.
          Finish(*j);
        }
        break;
      case Action::kHold:
        st = queue_->Hold(*j, reason, kHoldUserRequest);
        if (st && local && local_->HasProcess(*j)) local_->StartKill(*j);
        break;
      case Action::kRelease:
        if (j->status == kHeld &&
            (j->kill_sent || (j->universe == kUniverseVanilla && pool_->HasRun(*j)))) {
          st = Fail(ErrorCode::kConflict,
                    "Job " + JobIdString(j->key) + " is still stopping; release it in a moment");
          break;
        }
        st = queue_->Release(*j, reason);
        break;
      case Action::kVacate:
        st = pool_->VacateJob(*j, reason);
        break;
      case Action::kCheckpoint:
        st = pool_->CheckpointJob(*j);
        break;
    }
    if (!st) {
      errors->push_back(st.error().message());
      continue;
    }
    ++changed;
  }
  return changed;
}

}  // namespace kite::agent
