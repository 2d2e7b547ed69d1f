// The local universe's scheduling, wrappers, ends and restart recovery.
#include "agent/local_jobs.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <unordered_set>

#include "agent/policy.h"
#include "agent/usage.h"
#include "agent/userlog.h"
#include "common/paths.h"
#include "common/spawn.h"

namespace kite::agent {
namespace {

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

// Wrappers reaped before their start was reported, kept for matching; more than this many means
// they are not wrappers (another child of the agent) and the oldest are dropped.
constexpr size_t kMaxEarly = 4096;

}  // namespace

LocalJobs::LocalJobs(boost::asio::io_context& io, JobQueue& queue, Options options, Hooks hooks)
    : io_(io),
      queue_(queue),
      options_(std::move(options)),
      hooks_(std::move(hooks)),
      runner_(io, options_.spool, ProgramPath("kite-exec")),
      base_env_(BaseEnvironment()),
      adopt_timer_(io),
      kill_timer_(io),
      restart_timer_(io) {
  Every(adopt_timer_, 1.0, &LocalJobs::PollAdopted);
  Every(kill_timer_, 1.0, &LocalJobs::EscalateKills);
}

LocalJobs::~LocalJobs() = default;

void LocalJobs::Every(boost::asio::steady_timer& t, double seconds, void (LocalJobs::*fn)()) {
  t.expires_after(std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6)));
  t.async_wait([this, &t, seconds, fn](auto ec) {
    if (ec) return;
    (this->*fn)();
    Every(t, seconds, fn);
  });
}

void LocalJobs::OnStatus(Job& job, bool leaving) {
  if (!leaving && job.status == kIdle) {
    runnable_.insert(job.key);
    Schedule();
  } else {
    runnable_.erase(job.key);
  }
}

void LocalJobs::Schedule() {
  if (start_posted_) return;
  start_posted_ = true;
  boost::asio::post(io_, [this] {
    start_posted_ = false;
    StartSlice();
  });
}

// Write ahead, then act: every job of the slice is marked Running and committed before its
// wrapper is spawned.
void LocalJobs::StartSlice() {
  std::vector<JobKey> starting;
  int limit = options_.max_jobs;
  double now = queue_.Now(), wake = 0;
  for (auto it = runnable_.begin(); it != runnable_.end() && starting.size() < kSlice;) {
    if (limit > 0 && running_ + static_cast<int>(starting.size()) >= limit) break;
    JobKey key = *it++;
    Job* j = queue_.Find(key);
    if (j && j->not_before > now) {  // waiting out its restart delay
      wake = wake == 0 ? j->not_before : std::min(wake, j->not_before);
      continue;
    }
    if (!j || !queue_.MarkRunning(*j)) continue;  // MarkRunning takes it out of runnable_
    starting.push_back(key);
  }
  if (wake > 0) WakeAt(wake);
  if (starting.empty()) return;
  if (auto st = queue_.Flush(); !st) {
    // Not durable: put them back as they were and try later.
    spdlog::error("agent: cannot record job starts: {}", st.error().ToString());
    for (auto key : starting) {
      if (Job* j = queue_.Find(key)) (void)queue_.SetIdle(*j, "");
    }
    hooks_.commit_soon();
    return;
  }
  for (auto key : starting) {
    Job* j = queue_.Find(key);
    auto spec = BuildLaunchSpec(*j, base_env_);
    if (!spec) {
      (void)queue_.Hold(*j, "Failed to start the job: " + spec.error().message(),
                        kHoldFailedToCreateProcess);
      continue;
    }
    j->starting = true;
    ++running_;
    runner_.StartAsync(key, j->ad.EvaluateInt("NumJobStarts").value_or(0), std::move(*spec),
                       [this, key](Result<pid_t> pid) { OnStarted(key, std::move(pid)); });
  }
  hooks_.commit_soon();
  if (!runnable_.empty()) Schedule();  // the next slice, after what else is waiting
}

void LocalJobs::OnStarted(JobKey key, Result<pid_t> pid) {
  Job* j = queue_.Find(key);
  if (!pid) {
    --running_;
    runner_.ReleaseAfterCommit(key);
    if (j) {
      j->starting = false;
      (void)queue_.Hold(*j, "Failed to start the job: " + pid.error().message(),
                        kHoldFailedToCreateProcess);
      hooks_.commit_soon();
    }
    Schedule();
    return;
  }
  children_[*pid] = key;
  if (j) {
    j->starting = false;
    j->pid = *pid;
    j->adopted = false;
    // Held or removed while its wrapper was being spawned: stop it now.
    if (j->status != kRunning) StartKill(*j);
  }
  if (auto e = early_.find(*pid); e != early_.end()) {
    int status = e->second;
    early_.erase(e);
    Reaped(*pid, status);
  }
}

bool LocalJobs::Reaped(pid_t pid, int wait_status) {
  auto it = children_.find(pid);
  if (it == children_.end()) {
    if (early_.size() >= kMaxEarly) early_.erase(early_.begin());
    early_[pid] = wait_status;
    return false;
  }
  JobKey key = it->second;
  children_.erase(it);
  --running_;
  ended_.emplace_back(key, runner_.Outcome(key));
  if (!reap_posted_) {
    reap_posted_ = true;
    boost::asio::post(io_, [this] { ReapSlice(); });
  }
  return true;
}

void LocalJobs::ReapSlice() {
  reap_posted_ = false;
  for (size_t n = 0; n < kSlice && !ended_.empty(); ++n) {
    auto [key, outcome] = std::move(ended_.front());
    ended_.pop_front();
    if (Job* j = queue_.Find(key)) {
      j->pid = 0;
      HandleExit(*j, outcome);
    }
  }
  if (!ended_.empty()) {
    reap_posted_ = true;
    boost::asio::post(io_, [this] { ReapSlice(); });
  }
  Schedule();
}

void LocalJobs::HandleExit(Job& job, const Result<ExecStatus>& outcome) {
  runner_.ReleaseAfterCommit(job.key);  // its end is read; free once what it changes is stored
  job.kill_sent = false;
  job.adopted = false;
  if (job.status == kRemoved) {
    if (outcome) queue_.MarkExited(job, *outcome);
    hooks_.retire(job);
  } else if (job.status == kHeld) {
    // Held while running: the job stays held; nothing more to record.
  } else if (!outcome) {
    (void)queue_.SetIdle(job,
                         "The job's wrapper ended without recording how the job ended; the job "
                         "will run again.");
  } else if (outcome->kind == ExecStatus::Kind::kExecFailed ||
             outcome->kind == ExecStatus::Kind::kSetupFailed) {
    (void)queue_.Hold(job, "Error from local universe: " + outcome->message, HoldCodeFor(*outcome),
                      outcome->code);
  } else if (EndRun(queue_, job, *outcome)) {
    hooks_.retire(job);
  } else if (job.status == kIdle) {
    DelayRestart(job, *outcome);
  }
  hooks_.commit_soon();
}

// A job its exit policy runs again: a program that fails at once must not be restarted hundreds
// of times a second. Short runs back off (1 s, doubling to kMaxRestartDelay); a run of at least
// kShortRun resets it. The user log says how long the job waits.
void LocalJobs::DelayRestart(Job& job, const ExecStatus& outcome) {
  double ran = outcome.end > outcome.start ? outcome.end - outcome.start : 0;
  job.restart_delay =
      ran >= kShortRun ? 0 : std::clamp(job.restart_delay * 2, 1.0, kMaxRestartDelay);
  if (job.restart_delay <= 0) return;
  job.not_before = queue_.Now() + job.restart_delay;
  queue_.AddEvent(job, kEventGeneric,
                  "The job exited after " + std::to_string(static_cast<int>(ran)) +
                      " s and its exit policy runs it again; it waits " +
                      std::to_string(static_cast<int>(job.restart_delay)) + " s first.");
  WakeAt(job.not_before);
}

// Schedules a start slice at unix time `when`, unless one comes sooner already.
void LocalJobs::WakeAt(double when) {
  if (wake_at_ > 0 && wake_at_ <= when) return;
  wake_at_ = when;
  double in = std::max(0.0, when - queue_.Now());
  restart_timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(in * 1000) + 5));
  restart_timer_.async_wait([this](auto ec) {
    if (ec) return;
    wake_at_ = 0;
    Schedule();
  });
}

void LocalJobs::Recover() {
  std::vector<JobKey> keys;
  for (auto& [key, j] : queue_.jobs()) {
    if (j.universe == kUniverseLocal &&
        (j.status == kRunning || j.status == kRemoved || j.status == kHeld))
      keys.push_back(key);
  }
  runner_.Recover([&](JobKey key) -> std::optional<int64_t> {
    const Job* j = queue_.Find(key);
    if (!j || !std::binary_search(keys.begin(), keys.end(), key)) return std::nullopt;
    return j->ad.EvaluateInt("NumJobStarts").value_or(0);
  });
  for (auto key : keys) {
    Job* j = queue_.Find(key);
    if (runner_.WrapperAlive(key)) {
      j->adopted = true;
      ++running_;
      if (j->status == kRunning) {
        queue_.AddEvent(*j, kEventGeneric,
                        "Agent restarted: the job is still running and is watched again.");
      } else {
        StartKill(*j);  // held or removed while the agent was down
      }
      continue;
    }
    if (j->status != kRunning) {
      runner_.ReleaseAfterCommit(key);
      if (j->status == kRemoved) hooks_.retire(*j);
      continue;
    }
    auto outcome = runner_.Outcome(key);
    if (outcome) {
      queue_.AddEvent(*j, kEventGeneric,
                      "Agent restarted: the job ended while the agent was down; its outcome "
                      "is recorded.");
      HandleExit(*j, outcome);
    } else {
      runner_.ReleaseAfterCommit(key);
      (void)queue_.SetIdle(*j,
                           "Agent restarted: the job's wrapper is gone and recorded no outcome; "
                           "the job will run again.");
    }
  }
}

std::map<JobKey, size_t> LocalJobs::IdleBefore(const std::set<JobKey>& keys) const {
  std::map<JobKey, size_t> out;
  size_t n = 0;
  for (JobKey k : runnable_) {
    if (keys.count(k)) out[k] = n;
    if (out.size() == keys.size()) break;
    ++n;
  }
  return out;
}

void LocalJobs::SampleUsage() {
  std::unordered_map<pid_t, JobKey> jobs;
  std::unordered_set<pid_t> groups;
  for (auto& [key, j] : queue_.jobs()) {
    if (j.universe != kUniverseLocal || j.status != kRunning) continue;
    pid_t group = j.pid > 0 ? j.pid : j.adopted ? runner_.Group(j) : 0;
    if (group <= 0) continue;
    jobs.emplace(group, key);
    groups.insert(group);
  }
  bool changed = false;
  for (auto& [group, usage] : UsageOfGroups(groups)) {
    if (Job* j = queue_.Find(jobs[group])) changed |= queue_.RecordUsage(*j, usage);
  }
  if (changed) hooks_.commit_soon();
}

void LocalJobs::PollAdopted() {
  std::vector<JobKey> ended;
  for (auto& [key, j] : queue_.jobs()) {
    if (j.adopted && !runner_.WrapperAlive(key)) ended.push_back(key);
  }
  for (auto key : ended) {
    Job* j = queue_.Find(key);
    --running_;
    HandleExit(*j, runner_.Outcome(key));
  }
  if (!ended.empty()) Schedule();
}

void LocalJobs::StartKill(Job& job) {
  if (job.starting) return;  // OnStarted stops it once its pid is known
  runner_.Signal(job, SIGTERM);
  job.kill_sent = true;
  job.kill_deadline = queue_.Now() + options_.kill_grace;
}

void LocalJobs::EscalateKills() {
  double now = queue_.Now();
  for (auto& [key, j] : queue_.jobs()) {
    if (j.kill_sent && now >= j.kill_deadline) {
      runner_.Signal(j, SIGKILL);
      j.kill_deadline = now + options_.kill_grace;
    }
  }
}

}  // namespace kite::agent
