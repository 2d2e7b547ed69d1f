// kite-agent's event loop: scheduling local jobs, reaping them, policies, restart recovery.
#include "agent/agent.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdlib>

#include "agent/api_server.h"
#include "agent/cred_monitor.h"
#include "agent/mailer.h"
#include "agent/myproxy_renewal.h"
#include "agent/notifier.h"
#include "agent/policy.h"
#include "agent/rest_server.h"
#include "agent/userlog.h"
#include "classad/expr.h"
#include "classad/parser.h"
#include "common/files.h"
#include "common/paths.h"
#include "common/spawn.h"

namespace kite::agent {
namespace {

double WallNow() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// The environment every local job starts from: the agent's own, as HTCondor's local universe
// passes the schedd's environment to local jobs only in part; Kite keeps the basics.
std::vector<std::string> BaseEnvironment() {
  std::vector<std::string> env;
  for (auto& e : CurrentEnvironment()) {
    for (const char* keep : {"PATH=", "HOME=", "USER=", "LOGNAME=", "LANG=", "TMPDIR=", "TZ="}) {
      if (e.starts_with(keep)) env.push_back(e);
    }
  }
  return env;
}

// How long a grid job that left the queue is reported to polling gridmanagers (they poll at
// least every 20 s, and one that starts afresh never knew of it).
constexpr double kGridLeftKeep = 600;

int HoldCodeFor(const ExecStatus& s) {
  if (s.kind == ExecStatus::Kind::kExecFailed) return kHoldFailedToCreateProcess;
  if (s.message.find("standard output") != std::string::npos ||
      s.message.find("standard error") != std::string::npos)
    return kHoldUnableToOpenOutput;
  if (s.message.find("standard input") != std::string::npos) return kHoldUnableToOpenInput;
  if (s.message.find("directory") != std::string::npos) return kHoldIwdError;
  return kHoldFailedToCreateProcess;
}

}  // namespace

Result<JobSelector> ParseJobSelector(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Fail(ErrorCode::kInvalidInput, "bad job id '" + std::string(text) + "': " + why);
  };
  auto number = [&](std::string_view part, int64_t min) -> Result<int> {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || end != part.data() + part.size() ||
        (ec != std::errc() && ec != std::errc::result_out_of_range))
      return bad("expected CLUSTER or CLUSTER.PROC");
    if (ec == std::errc::result_out_of_range || v > kMaxJobId)
      return bad("ids go up to " + std::to_string(kMaxJobId));
    if (v < min) return bad(min == 1 ? "cluster ids start at 1" : "ids are not negative");
    return static_cast<int>(v);
  };
  size_t dot = text.find('.');
  auto cluster = number(text.substr(0, dot), 1);
  if (!cluster) return Fail(cluster.error());
  JobSelector s;
  s.cluster = *cluster;
  if (dot != std::string_view::npos) {
    auto proc = number(text.substr(dot + 1), 0);
    if (!proc) return Fail(proc.error());
    s.proc = *proc;
  }
  return s;
}

Agent::Agent(AgentOptions options)
    : options_(std::move(options)),
      child_signals_(io_, SIGCHLD),
      stop_signals_(io_, SIGTERM, SIGINT),
      flush_timer_(io_),
      periodic_timer_(io_),
      adopt_timer_(io_),
      kill_timer_(io_),
      grid_timer_(io_),
      cred_timer_(io_) {}

Agent::~Agent() = default;

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

Status Agent::Start() {
  if (auto st = MakeHomePrivate(options_.home); !st) return st;
  if (auto st = CheckQueueFile(options_.queue_path()); !st) return st;
  if (auto st = MakeDirs(options_.spool_path(), 0700); !st) return st;
  auto store = store::JobQueueStore::Open(options_.queue_path());
  if (!store) return Fail(store.error());
  store_ = std::move(*store);
  queue_ =
      std::make_unique<JobQueue>(store_.get(), WallNow, static_cast<size_t>(options_.history_max));
  queue_->OnStatusChange([this](Job& j, bool leaving) {
    if (notifier_) notifier_->OnStatusChange(j, leaving);
    if (!leaving && cred_monitor_ && !j.ad.LookupOwn("x509UserProxyExpiration") &&
        j.ad.Lookup("x509userproxy"))
      CheckCredentialsSoon();
    if (j.universe == kUniverseGrid) {
      if (leaving) {
        grid_jobs_.erase(j.key);
        if (!in_grid_update_) grid_left_[j.key] = {ProxyOf(j), grid_gen_ + 1, WallNow()};
      } else {
        grid_jobs_.insert(j.key);
      }
      if (!in_grid_update_) j.grid_gen = ++grid_gen_;
      grid_check_ = true;
      return;
    }
    if (j.universe != kUniverseLocal) return;
    if (!leaving && j.status == kIdle) {
      runnable_.insert(j.key);
      Schedule();
    } else {
      runnable_.erase(j.key);
    }
  });
  queue_->OnFlushed([this] {
    if (notifier_) notifier_->OnFlushed();
    AnswerWaiters();
    AnswerGridWaiters();
    if (grid_check_) EnsureGridManagers();
  });
  grid_epoch_ =
      std::to_string(::getpid()) + "-" + std::to_string(static_cast<int64_t>(WallNow() * 1e6));
  runner_ = std::make_unique<LocalRunner>(options_.spool_path(), ProgramPath("kite-exec"));
  base_env_ = BaseEnvironment();
  if (auto st = queue_->Load(); !st) return st;
  StartMailAndCredentials();
  Recover();
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
  ArmTimer(periodic_timer_, options_.periodic_interval, &Agent::PeriodicPolicy);
  ArmTimer(adopt_timer_, 1.0, &Agent::PollAdopted);
  ArmTimer(kill_timer_, 1.0, &Agent::EscalateKills);
  Schedule();
  OnChildSignal();  // reap anything that ended before the handler was installed
  EnsureGridManagers();
  spdlog::info("agent: serving {} with {} jobs queued", options_.socket_path(),
               queue_->jobs().size());
  return {};
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
      ArmFlush();
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

void Agent::Stop() {
  // Running local jobs keep running under their wrappers; the next agent adopts them.
  if (auto st = queue_->Flush(); !st)
    spdlog::error("agent: final flush: {}", st.error().ToString());
  if (api_) api_->Close();
  if (rest_) {
    rest_->Close();
    ::unlink(options_.rest_address_path().c_str());
  }
  if (mailer_) mailer_->Stop();
  io_.stop();
}

void Agent::ArmTimer(boost::asio::steady_timer& t, double seconds, void (Agent::*fn)()) {
  t.expires_after(std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6)));
  t.async_wait([this, &t, seconds, fn](auto ec) {
    if (ec) return;
    (this->*fn)();
    ArmTimer(t, seconds, fn);
  });
}

void Agent::ArmFlush() {
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
    ArmFlush();
  }
}

void Agent::Schedule() {
  if (schedule_posted_ || !queue_) return;
  schedule_posted_ = true;
  boost::asio::post(io_, [this] {
    schedule_posted_ = false;
    StartIdleJobs();
  });
}

// Write ahead, then act: every job to start is marked Running and committed before its spawn.
void Agent::StartIdleJobs() {
  std::vector<JobKey> starting;
  int limit = options_.max_local_jobs;
  for (auto it = runnable_.begin(); it != runnable_.end();) {
    if (limit > 0 && running_local_ + static_cast<int>(starting.size()) >= limit) break;
    JobKey key = *it++;
    Job* j = queue_->Find(key);
    if (!j) continue;
    starting.push_back(key);
    queue_->MarkRunning(*j);  // removes it from runnable_
  }
  if (starting.empty()) return;
  if (auto st = queue_->Flush(); !st) {
    // Not durable: put them back as they were and try later.
    spdlog::error("agent: cannot record job starts: {}", st.error().ToString());
    for (auto key : starting) {
      if (Job* j = queue_->Find(key)) queue_->SetIdle(*j, "");
    }
    ArmFlush();
    return;
  }
  for (auto key : starting) {
    Job* j = queue_->Find(key);
    auto spec = BuildLaunchSpec(*j, base_env_);
    Result<pid_t> pid = spec ? runner_->Start(key, *spec) : Result<pid_t>(Fail(spec.error()));
    if (!pid) {
      queue_->Hold(*j, "Failed to start the job: " + pid.error().message(),
                   kHoldFailedToCreateProcess);
      continue;
    }
    j->pid = *pid;
    j->adopted = false;
    children_[*pid] = key;
    ++running_local_;
  }
  ArmFlush();
}

void Agent::OnChildSignal() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    auto it = children_.find(pid);
    if (it == children_.end()) {
      ReapGridManager(pid, status);
      continue;
    }
    JobKey key = it->second;
    children_.erase(it);
    --running_local_;
    if (Job* j = queue_->Find(key)) {
      j->pid = 0;
      HandleExit(*j, runner_->Outcome(key));
    }
  }
  child_signals_.async_wait([this](auto ec, int) {
    if (!ec) OnChildSignal();
  });
  Schedule();
}

void Agent::HandleExit(Job& job, const Result<ExecStatus>& outcome) {
  job.kill_sent = false;
  job.adopted = false;
  if (job.status == kRemoved) {
    if (outcome) queue_->MarkExited(job, *outcome);
    Finish(job);
  } else if (job.status == kHeld) {
    // Held while running: the job stays held; nothing more to record.
  } else if (!outcome) {
    queue_->SetIdle(job,
                    "The job's wrapper ended without recording how the job ended; the job "
                    "will run again.");
  } else if (outcome->kind == ExecStatus::Kind::kExecFailed ||
             outcome->kind == ExecStatus::Kind::kSetupFailed) {
    queue_->Hold(job, "Error from local universe: " + outcome->message, HoldCodeFor(*outcome),
                 outcome->code);
  } else {
    CompleteRun(job, *outcome);
  }
  ArmFlush();
}

// A run ended with an exit code or a signal: on_exit_hold / on_exit_remove decide what next.
void Agent::CompleteRun(Job& job, const ExecStatus& outcome) {
  queue_->MarkExited(job, outcome);
  auto d = EvaluateOnExit(job);
  switch (d.action) {
    case ExitDecision::Action::kHold:
      queue_->Hold(job, d.reason, kHoldJobPolicy, d.subcode);
      break;
    case ExitDecision::Action::kRequeue:
      queue_->SetIdle(job, "");
      break;
    case ExitDecision::Action::kComplete:
      queue_->MarkCompleted(job);
      Finish(job);
      break;
  }
}

void Agent::Finish(Job& job) {
  JobKey key = job.key;
  if (job.universe == kUniverseLocal) runner_->Cleanup(key);
  queue_->Retire(job);
}

// After a restart: every job the queue says is running is either still running (adopt it),
// ended while we were away (record its outcome), or never ran to an end (run it again).
void Agent::Recover() {
  std::vector<JobKey> keys;
  for (auto& [key, j] : queue_->jobs()) {
    if (j.universe == kUniverseLocal &&
        (j.status == kRunning || j.status == kRemoved || j.status == kHeld))
      keys.push_back(key);
  }
  for (auto key : keys) {
    Job* j = queue_->Find(key);
    bool alive = runner_->WrapperAlive(key);
    if (alive) {
      j->adopted = true;
      ++running_local_;
      if (j->status == kRunning) {
        queue_->AddEvent(*j, kEventGeneric,
                         "Agent restarted: the job is still running and is watched again.");
      } else {
        runner_->Signal(*j, SIGTERM);  // held or removed while the agent was down
        j->kill_sent = true;
        j->kill_deadline = queue_->Now() + options_.kill_grace;
      }
      continue;
    }
    if (j->status != kRunning) {
      if (j->status == kRemoved) Finish(*j);
      continue;
    }
    auto outcome = runner_->Outcome(key);
    if (outcome) {
      queue_->AddEvent(*j, kEventGeneric,
                       "Agent restarted: the job ended while the agent was down; its outcome "
                       "is recorded.");
      HandleExit(*j, outcome);
    } else {
      queue_->SetIdle(*j,
                      "Agent restarted: the job's wrapper is gone and recorded no outcome; "
                      "the job will run again.");
    }
  }
}

void Agent::PollAdopted() {
  std::vector<JobKey> ended;
  for (auto& [key, j] : queue_->jobs()) {
    if (j.adopted && !runner_->WrapperAlive(key)) ended.push_back(key);
  }
  for (auto key : ended) {
    Job* j = queue_->Find(key);
    --running_local_;
    HandleExit(*j, runner_->Outcome(key));
  }
  if (!ended.empty()) Schedule();
}

void Agent::PeriodicPolicy() {
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
        queue_->Release(*j, d.reason);
        break;
      case PolicyDecision::Action::kNone:
        break;
    }
  }
  if (!todo.empty()) ArmFlush();
}

void Agent::HoldBySystem(Job& job, const std::string& reason, int code, int subcode) {
  if (job.status == kRunning && job.universe == kUniverseLocal) {
    runner_->Signal(job, SIGTERM);
    job.kill_sent = true;
    job.kill_deadline = queue_->Now() + options_.kill_grace;
  }
  queue_->Hold(job, reason, code, subcode);
  ArmFlush();
}

void Agent::EscalateKills() {
  double now = queue_->Now();
  for (auto& [key, j] : queue_->jobs()) {
    if (j.kill_sent && now >= j.kill_deadline) {
      runner_->Signal(j, SIGKILL);
      j.kill_deadline = now + options_.kill_grace;
    }
  }
}

int Agent::Act(Action action, const std::vector<Job*>& jobs, const std::string& reason,
               std::vector<std::string>* errors) {
  int changed = 0;
  for (Job* j : jobs) {
    std::string id = JobIdString(j->key);
    bool running = j->pid > 0 || j->adopted;  // a live process, whatever the status says
    switch (action) {
      case Action::kForceRemove:
        if (j->universe == kUniverseGrid) {
          if (j->status != kRemoved) queue_->MarkRemoved(*j, reason);
          if (j->ad.EvaluateString("GridJobId")) {
            queue_->AddEvent(*j, kEventGeneric,
                             "Removed with --forcex: the site was not asked to confirm the "
                             "cancel; the job may still run there.");
          }
          Finish(*j);
          break;
        }
        [[fallthrough]];  // local jobs: as rm
      case Action::kRemove:
        if (j->status == kRemoved) {
          errors->push_back("Job " + id + " is already being removed");
          continue;
        }
        queue_->MarkRemoved(*j, reason);
        if (j->universe == kUniverseGrid) {
          // A job known at a site stays until its gridmanager has cancelled it there (and then
          // retires it); one that never got that far leaves now.
          if (!j->ad.EvaluateString("GridJobId")) Finish(*j);
        } else if (running) {
          runner_->Signal(*j, SIGTERM);
          j->kill_sent = true;
          j->kill_deadline = queue_->Now() + options_.kill_grace;
        } else {
          Finish(*j);
        }
        break;
      case Action::kHold:
        if (j->status == kHeld) {
          errors->push_back("Job " + id + " is already held");
          continue;
        }
        if (j->status == kRemoved || j->status == kCompleted) {
          errors->push_back("Job " + id + " is " + StatusName(j->status) + " and cannot be held");
          continue;
        }
        queue_->Hold(*j, reason, kHoldUserRequest);
        if (running) {
          runner_->Signal(*j, SIGTERM);
          j->kill_sent = true;
          j->kill_deadline = queue_->Now() + options_.kill_grace;
        }
        break;
      case Action::kRelease:
        if (j->status != kHeld) {
          errors->push_back("Job " + id + " is not held");
          continue;
        }
        if (j->kill_sent) {
          errors->push_back("Job " + id + " is still stopping; release it in a moment");
          continue;
        }
        queue_->Release(*j, reason);
        break;
    }
    ++changed;
  }
  return changed;
}

WaitCounts Agent::Count(const std::vector<JobSelector>& sel) {
  // A job that just left the queue is in history only once its retirement is committed.
  if (auto st = queue_->Flush(); !st) spdlog::warn("agent: flush: {}", st.error().ToString());
  WaitCounts c;
  auto tally = [&](const Job& j) {
    ++c.total;
    switch (j.status) {
      case kIdle:
        ++c.idle;
        break;
      case kRunning:
        ++c.running;
        break;
      case kHeld:
        ++c.held;
        break;
      default:
        ++c.done;
        break;
    }
  };
  for (auto& s : sel) {
    Cluster* cl = queue_->FindCluster(s.cluster);
    auto& jobs = queue_->jobs();
    if (s.proc >= 0) {
      auto it = jobs.find(JobKey{s.cluster, s.proc});
      if (it != jobs.end()) {
        tally(it->second);
        continue;
      }
      bool in_history = false;
      (void)store_->History(s.cluster, s.proc, 1, [&](const store::HistoryRecord&) {
        in_history = true;
        return false;
      });
      if (in_history) {
        ++c.total;
        ++c.done;
      } else {
        ++c.missing;
        c.missing_ids.push_back(std::to_string(s.cluster) + "." + std::to_string(s.proc));
      }
      continue;
    }
    if (cl) {
      for (auto it = jobs.lower_bound(JobKey{s.cluster, 0});
           it != jobs.end() && it->first.cluster == s.cluster; ++it)
        tally(it->second);
      c.total += cl->total - cl->present;
      c.done += cl->total - cl->present;
      continue;
    }
    int n = 0;
    (void)store_->History(s.cluster, -1, 0, [&](const store::HistoryRecord&) {
      ++n;
      return true;
    });
    if (n) {
      c.total += n;
      c.done += n;
    } else {
      ++c.missing;
      c.missing_ids.push_back(std::to_string(s.cluster));
    }
  }
  return c;
}

void Agent::Wait(std::vector<JobSelector> sel, double timeout,
                 std::function<void(WaitCounts)> reply) {
  auto w = std::make_shared<Waiter>();
  w->sel = std::move(sel);
  w->reply = std::move(reply);
  w->timer = std::make_shared<boost::asio::steady_timer>(io_);
  w->timer->expires_after(std::chrono::microseconds(static_cast<int64_t>(timeout * 1e6)));
  waiters_.push_back(w);
  w->timer->async_wait([this, w](auto ec) {
    if (ec) return;
    std::erase(waiters_, w);
    w->reply(Count(w->sel));
  });
}

void Agent::AnswerWaiters() {
  if (waiters_.empty()) return;
  auto ws = std::move(waiters_);
  waiters_.clear();
  for (auto& w : ws) {
    w->timer->cancel();
    w->reply(Count(w->sel));
  }
}

// --- grid jobs and their gridmanagers ---------------------------------------------------------

bool Agent::NeedsGridManager(const Job& j) const {
  switch (j.status) {
    case kIdle:
    case kRunning:
    case kRemoved:
      return true;
    case kHeld:
      return j.ad.EvaluateString("GridJobId").has_value();  // still to be cancelled at its site
    default:
      return false;
  }
}

std::string Agent::ProxyOf(const Job& j) const {
  return j.ad.EvaluateString("x509userproxy").value_or("");
}

Agent::GridPollResult Agent::CollectGrid(const std::string& proxy, uint64_t since) {
  GridPollResult r;
  r.epoch = grid_epoch_;
  r.generation = grid_gen_;
  if (since >= grid_gen_ && since != 0) return r;
  for (const JobKey& key : grid_jobs_) {
    Job* j = queue_->Find(key);
    if (!j || ProxyOf(*j) != proxy) continue;
    if (since == 0 ? NeedsGridManager(*j) : j->grid_gen > since) r.jobs.push_back(key);
  }
  double now = WallNow();
  for (auto it = grid_left_.begin(); it != grid_left_.end();) {
    if (now - it->second.when > kGridLeftKeep) {
      it = grid_left_.erase(it);
      continue;
    }
    if (since != 0 && it->second.proxy == proxy && it->second.gen > since)
      r.left.push_back(it->first);
    ++it;
  }
  return r;
}

void Agent::GridPoll(std::string proxy, uint64_t since, std::string epoch, double timeout,
                     std::function<void(GridPollResult)> reply) {
  // What a gridmanager acts on must be durable first (DESIGN.md rule 1).
  if (queue_->has_pending()) {
    if (auto st = queue_->Flush(); !st) spdlog::warn("agent: flush: {}", st.error().ToString());
  }
  bool fresh = epoch != grid_epoch_ || since > grid_gen_;
  if (fresh) since = 0;
  auto now = CollectGrid(proxy, since);
  if (fresh || !now.jobs.empty() || !now.left.empty() || timeout <= 0) return reply(std::move(now));
  auto w = std::make_shared<GridWaiter>();
  w->proxy = std::move(proxy);
  w->since = since;
  w->reply = std::move(reply);
  w->timer = std::make_shared<boost::asio::steady_timer>(io_);
  w->timer->expires_after(std::chrono::microseconds(static_cast<int64_t>(timeout * 1e6)));
  grid_waiters_.push_back(w);
  w->timer->async_wait([this, w](auto ec) {
    if (ec) return;
    std::erase(grid_waiters_, w);
    w->reply(CollectGrid(w->proxy, w->since));
  });
}

void Agent::AnswerGridWaiters() {
  if (grid_waiters_.empty()) return;
  std::vector<std::shared_ptr<GridWaiter>> keep;
  auto ws = std::move(grid_waiters_);
  grid_waiters_.clear();
  for (auto& w : ws) {
    if (w->since >= grid_gen_) {
      keep.push_back(w);
      continue;
    }
    auto r = CollectGrid(w->proxy, w->since);
    if (r.jobs.empty() && r.left.empty()) {
      keep.push_back(w);
      continue;
    }
    w->timer->cancel();
    w->reply(std::move(r));
  }
  for (auto& w : keep) grid_waiters_.push_back(w);
}

int Agent::ApplyGridUpdate(Job& job, const grid::GridUpdate& u) {
  JobKey key = job.key;
  in_grid_update_ = true;
  for (const auto& c : u.set) {
    queue_->SetAttr(job, grid::GridAttrName(c.attr), grid::AttrValueExpr(c.value));
  }
  if (u.event) queue_->AddEvent(job, u.event->code, u.event->text);
  int status = job.status;
  bool live = status == kIdle || status == kRunning;
  switch (u.action) {
    case grid::GridAction::kNone:
      break;
    case grid::GridAction::kRunning:
      if (status == kIdle) queue_->MarkRunning(job);
      break;
    case grid::GridAction::kExited:
      if (live && u.exit) {
        if (status == kIdle) queue_->MarkRunning(job);
        ExecStatus exit;
        exit.kind = u.exit->signaled ? ExecStatus::Kind::kSignaled : ExecStatus::Kind::kExited;
        exit.code = u.exit->code;
        exit.end = queue_->Now();
        exit.start = static_cast<double>(job.ad.EvaluateInt("JobCurrentStartDate").value_or(0));
        if (exit.start <= 0) exit.start = exit.end;
        CompleteRun(job, exit);
      }
      break;
    case grid::GridAction::kIdle:
      if (status == kRunning) {
        queue_->SetIdle(job, u.reason);
      } else if (status == kIdle && !u.reason.empty()) {
        queue_->AddEvent(job, kEventGeneric, u.reason);
      }
      break;
    case grid::GridAction::kHold:
      if (live) queue_->Hold(job, u.reason, u.hold_code, u.hold_subcode);
      break;
    case grid::GridAction::kRetire:
      if (status == kRemoved || status == kCompleted) Finish(job);
      break;
  }
  in_grid_update_ = false;
  grid_check_ = true;
  Job* after = queue_->Find(key);
  return after ? after->status : grid::kStatusLeftQueue;
}

void Agent::EnsureGridManagers() {
  grid_check_ = false;
  if (!options_.start_gridmanagers) return;
  std::set<std::string> needed;
  for (const JobKey& key : grid_jobs_) {
    Job* j = queue_->Find(key);
    if (j && NeedsGridManager(*j)) needed.insert(ProxyOf(*j));
  }
  double now = queue_->Now();
  double wake = 0;
  for (const auto& proxy : needed) {
    if (proxy.empty()) continue;
    GridManagerProc& g = gridmanagers_[proxy];
    if (g.pid > 0) continue;
    if (now < g.next_start) {
      wake = wake == 0 ? g.next_start : std::min(wake, g.next_start);
      continue;
    }
    SpawnOptions so;
    so.program = ProgramPath("kite-gridmanager");
    so.argv = {so.program,
               "--home",
               options_.home,
               "--proxy",
               proxy,
               "--log",
               options_.home + "/gridmanager.log",
               "--log-level",
               options_.log_level,
               "--probe-interval",
               std::to_string(options_.grid_probe_interval),
               "--max-resubmits",
               std::to_string(options_.grid_max_resubmits),
               "--max-jobs-per-resource",
               std::to_string(options_.grid_max_jobs_per_resource),
               "--max-requests-per-resource",
               std::to_string(options_.grid_max_requests_per_resource),
               "--listen-host",
               options_.grid_listen_host};
    so.env = CurrentEnvironment();
    so.stdout_path = so.stderr_path = options_.home + "/gridmanager.out";
    auto pid = Spawn(so);
    if (!pid) {
      spdlog::error("agent: cannot start kite-gridmanager: {}", pid.error().ToString());
      g.next_start = now + 10;
      wake = wake == 0 ? g.next_start : std::min(wake, g.next_start);
      continue;
    }
    g.pid = *pid;
    g.started = now;
    spdlog::info("agent: started kite-gridmanager {} for {}", g.pid, proxy);
  }
  if (wake > 0) {
    grid_timer_.expires_after(
        std::chrono::milliseconds(static_cast<int64_t>((wake - now) * 1000) + 10));
    grid_timer_.async_wait([this](auto ec) {
      if (!ec) EnsureGridManagers();
    });
  }
}

void Agent::ReapGridManager(pid_t pid, int status) {
  for (auto& [proxy, g] : gridmanagers_) {
    if (g.pid != pid) continue;
    g.pid = 0;
    double now = queue_->Now();
    bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    // One that keeps ending soon after it starts is restarted ever more slowly (up to a minute).
    g.backoff = now - g.started < 5 ? std::clamp(g.backoff * 2, 1.0, 60.0) : 0;
    g.next_start = now + g.backoff;
    if (clean) {
      spdlog::info("agent: kite-gridmanager {} for {} finished", pid, proxy);
    } else {
      spdlog::warn("agent: kite-gridmanager {} for {} ended ({}); restarting in {:.0f} s", pid,
                   proxy,
                   WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                       : "exit " + std::to_string(WEXITSTATUS(status)),
                   g.backoff);
    }
    boost::asio::post(io_, [this] { EnsureGridManagers(); });
    return;
  }
}

}  // namespace kite::agent
