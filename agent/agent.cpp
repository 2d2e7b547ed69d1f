// kite-agent's event loop: scheduling local jobs, reaping them, policies, restart recovery.
#include "agent/agent.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "agent/api_server.h"
#include "agent/policy.h"
#include "agent/userlog.h"
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
  JobSelector s;
  std::string t(text);
  char* end = nullptr;
  long c = std::strtol(t.c_str(), &end, 10);
  if (end == t.c_str() || c <= 0) return Fail(ErrorCode::kInvalidInput, "bad job id '" + t + "'");
  s.cluster = static_cast<int>(c);
  if (*end == '.') {
    const char* p = end + 1;
    long pr = std::strtol(p, &end, 10);
    if (end == p || pr < 0) return Fail(ErrorCode::kInvalidInput, "bad job id '" + t + "'");
    s.proc = static_cast<int>(pr);
  }
  if (*end != '\0') return Fail(ErrorCode::kInvalidInput, "bad job id '" + t + "'");
  return s;
}

Agent::Agent(AgentOptions options)
    : options_(std::move(options)),
      child_signals_(io_, SIGCHLD),
      stop_signals_(io_, SIGTERM, SIGINT),
      flush_timer_(io_),
      periodic_timer_(io_),
      adopt_timer_(io_),
      kill_timer_(io_) {}

Agent::~Agent() = default;

Status Agent::Start() {
  if (auto st = MakeDirs(options_.home, 0700); !st) return st;
  if (auto st = MakeDirs(options_.spool_path(), 0700); !st) return st;
  auto store = store::JobQueueStore::Open(options_.queue_path());
  if (!store) return Fail(store.error());
  store_ = std::move(*store);
  queue_ =
      std::make_unique<JobQueue>(store_.get(), WallNow, static_cast<size_t>(options_.history_max));
  queue_->OnStatusChange([this](Job& j, bool leaving) {
    if (j.universe != kUniverseLocal) return;
    if (!leaving && j.status == kIdle) {
      runnable_.insert(j.key);
      Schedule();
    } else {
      runnable_.erase(j.key);
    }
  });
  queue_->OnFlushed([this] { AnswerWaiters(); });
  runner_ = std::make_unique<LocalRunner>(options_.spool_path(), ProgramPath("kite-exec"));
  base_env_ = BaseEnvironment();
  if (auto st = queue_->Load(); !st) return st;
  Recover();
  if (auto st = queue_->Flush(); !st) return st;

  api_ = std::make_unique<ApiServer>(*this);
  if (auto st = api_->Listen(options_.socket_path()); !st) return st;

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
  spdlog::info("agent: serving {} with {} jobs queued", options_.socket_path(),
               queue_->jobs().size());
  return {};
}

void Agent::Run() {
  io_.run();
}

void Agent::Stop() {
  // Running local jobs keep running under their wrappers; the next agent adopts them.
  if (auto st = queue_->Flush(); !st)
    spdlog::error("agent: final flush: {}", st.error().ToString());
  if (api_) api_->Close();
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
    if (it == children_.end()) continue;
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
    queue_->MarkExited(job, *outcome);
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
  ArmFlush();
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
        if (j->status == kRunning) {
          runner_->Signal(*j, SIGTERM);
          j->kill_sent = true;
          j->kill_deadline = queue_->Now() + options_.kill_grace;
        }
        queue_->Hold(*j, d.reason, d.code, d.subcode);
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
      case Action::kRemove:
        if (j->status == kRemoved) {
          errors->push_back("Job " + id + " is already being removed");
          continue;
        }
        queue_->MarkRemoved(*j, reason);
        if (running) {
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

}  // namespace kite::agent
