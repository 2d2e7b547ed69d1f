// The local universe: which idle local jobs start, their wrappers, how their runs end, and what a
// restarted agent finds of them.
//
// Write ahead, then act (docs/architecture.md, "Write ahead, then act"): a job is marked Running
// and committed before its wrapper is spawned. The spawn and the spool directory's file work run
// on the LocalRunner's threads; everything else runs on the agent's thread, in slices of at most
// kSlice jobs, so that a burst of short jobs never keeps the agent's clients waiting for long.
// Used only on the agent's thread.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/local_runner.h"
#include "agent/queue.h"

namespace kite::agent {

class LocalJobs {
 public:
  // Jobs started, or wrapper ends handled, per turn of the event loop.
  static constexpr size_t kSlice = 16;
  // A run shorter than this that its exit policy runs again waits before its next start.
  static constexpr double kShortRun = 10;
  static constexpr double kMaxRestartDelay = 60;

  struct Hooks {
    std::function<void()> commit_soon;  // changes are pending: commit them within commit_delay
    std::function<void(Job&)> retire;   // a job is Completed or Removed: it leaves the queue
  };

  // From AgentOptions (their defaults are config.toml's, there).
  struct Options {
    std::string spool;      // the agent's spool folder (each job's files under it)
    int max_jobs = 0;       // [agent] max_local_jobs: running at once; 0: no limit
    double kill_grace = 0;  // [agent] kill_grace: seconds from SIGTERM to SIGKILL
  };
  LocalJobs(boost::asio::io_context& io, JobQueue& queue, Options options, Hooks hooks);
  ~LocalJobs();

  // The queue's status hook, for local-universe jobs: idle ones become runnable.
  void OnStatus(Job& job, bool leaving);
  // Starts what may start, on a later turn of the event loop.
  void Schedule();
  // After a restart: every job the queue says is running is still running (watched again), ended
  // while the agent was away (its outcome recorded) or never ran to an end (it runs again).
  void Recover();
  // A child of the agent ended. Returns false when it is not (yet) known as a job's wrapper: a
  // wrapper reaped before its start was reported is matched when the report comes.
  bool Reaped(pid_t pid, int wait_status);
  // Whether the job has a process: running, starting, or stopping.
  bool HasProcess(const Job& job) const { return job.pid > 0 || job.adopted || job.starting; }
  // Stops the job's process: SIGTERM now, SIGKILL every kill_grace seconds until it is gone.
  void StartKill(Job& job);
  // The job left the queue: what it still holds of the spool goes after the next commit.
  void Forget(JobKey key) { runner_.ReleaseAfterCommit(key); }
  // The queue committed: slots of runs that ended before it take jobs again.
  void OnFlushed() { runner_.Committed(); }

  // Reads what each running job's processes use and records it in the job's ad.
  void SampleUsage();

  int running() const { return running_; }
  // For each of `keys` that is an idle local job: how many idle local jobs come before it.
  std::map<JobKey, size_t> IdleBefore(const std::set<JobKey>& keys) const;
  size_t runnable() const { return runnable_.size(); }

 private:
  void StartSlice();
  void OnStarted(JobKey key, Result<pid_t> pid);
  void ReapSlice();
  void HandleExit(Job& job, const Result<ExecStatus>& outcome);
  void DelayRestart(Job& job, const ExecStatus& outcome);
  void WakeAt(double when);
  void PollAdopted();
  void EscalateKills();
  void Every(boost::asio::steady_timer& t, double seconds, void (LocalJobs::*fn)());

  boost::asio::io_context& io_;
  JobQueue& queue_;
  const Options options_;
  Hooks hooks_;
  LocalRunner runner_;
  std::vector<std::string> base_env_;
  std::set<JobKey> runnable_;                                // idle local jobs, in submit order
  std::unordered_map<pid_t, JobKey> children_;               // wrapper pid -> job
  std::deque<std::pair<JobKey, Result<ExecStatus>>> ended_;  // wrappers reaped, not yet handled
  std::map<pid_t, int> early_;  // reaped before their start was reported: pid -> wait status
  int running_ = 0;             // wrappers alive or starting
  bool start_posted_ = false, reap_posted_ = false;
  boost::asio::steady_timer adopt_timer_, kill_timer_, restart_timer_;
  double wake_at_ = 0;  // unix time restart_timer_ fires; 0: not armed
};

}  // namespace kite::agent
