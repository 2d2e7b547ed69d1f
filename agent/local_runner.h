// Runs local-universe jobs on this machine, each under kite-exec in its own session.
//
// A running job has a slot: a directory spool/slots/N/ holding kite-exec's lock and status files
// (common/exec_status.h). The lock file names the run it belongs to ("owner C.P S", S the job's
// NumJobStarts, committed before the spawn) and the wrapper's pid. The lock is taken by the agent
// BEFORE the wrapper is spawned and handed to it as fd 3, so there is no moment when a started
// job's lock is free: a restarted agent that finds the lock free and no status knows the run
// never reached an end and may run it again.
//
// Slots are reused: once a run's end is read and the queue has committed what it says, its slot
// takes the next job, so starting a job creates no directory and no file (creating and deleting
// a few inodes per job was half of the agent's time in a burst of short jobs). A job's slot is
// released only after that commit (ReleaseAfterCommit, Committed): a crash in between finds the
// run's status where the queue expects it. Jobs of an older Kite, started in spool/C.P/, are still
// found there.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/job.h"
#include "common/error.h"
#include "common/exec_status.h"

namespace kite::agent {

// What to run, worked out from the job ad.
struct LaunchSpec {
  std::string program;
  std::vector<std::string> args;  // without argv[0]
  std::vector<std::string> env;   // NAME=value
  std::string iwd, in, out, err;
};

// Reads Cmd, Arguments (or Args), Environment (or Env), Iwd, In, Out, Err from the job ad.
// `base_env` is the environment every job starts from.
Result<LaunchSpec> BuildLaunchSpec(const Job& job, const std::vector<std::string>& base_env);

// The slow half of running a local job — the spawn, the slot's files — runs on the runner's own
// threads, so the agent's event loop stays free to answer its clients. Everything else is called
// on the agent's thread.
class LocalRunner {
 public:
  // `io`: where StartAsync's callbacks run (the agent's thread).
  LocalRunner(boost::asio::io_context& io, std::string spool_dir, std::string exec_path);
  ~LocalRunner();  // waits for the work already handed to its threads

  // After a restart, before anything else: which slot holds which run. `start_of(key)` is the
  // NumJobStarts of a job whose run the queue expects to find (running, or held or removed while
  // running), nullopt for any other; a slot that names another run is free unless a wrapper still
  // holds it.
  void Recover(const std::function<std::optional<int64_t>(JobKey)>& start_of);

  // Takes a slot for run `start` of `key` and starts the job's wrapper there on the runner's
  // threads; `done` runs on `io` with its pid (= its process group id). The wrapper may have
  // ended (and been reaped) before `done` runs.
  void StartAsync(JobKey key, int64_t start, LaunchSpec spec,
                  std::function<void(Result<pid_t>)> done);
  // Sends `sig` to the job's whole process group. For an adopted job the pid is read from its
  // slot.
  void Signal(const Job& job, int sig) const;
  // The job's process group (its wrapper's pid), also for an adopted job; 0 when it has none.
  pid_t Group(const Job& job) const;
  // The wrapper's recorded outcome, or kNotFound.
  Result<ExecStatus> Outcome(JobKey key) const { return ReadExecStatus(DirOf(key)); }
  bool WrapperAlive(JobKey key) const { return ExecWrapperAlive(DirOf(key)); }

  // The job's run is over and its end has been read (or it never started): its slot is free
  // once the queue's next commit holds what the end changed.
  void ReleaseAfterCommit(JobKey key);
  // The queue committed: slots released before it are free again.
  void Committed();

  // Where the job's run is (its slot, or an older Kite's spool/C.P). For tests and messages.
  std::string DirOf(JobKey key) const;
  size_t slots() const { return static_cast<size_t>(slot_count_); }

 private:
  std::string SlotDir(int slot) const;
  int TakeSlot();
  void RemoveAsync(std::vector<std::string> dirs);  // on the runner's threads

  boost::asio::io_context& io_;
  std::string spool_;
  std::string exec_path_;
  std::map<JobKey, int> slot_of_;  // runs with a slot
  std::vector<int> free_;          // slots no run holds
  std::vector<int> releasing_;     // slots of runs that are over: free at the next commit
  std::set<JobKey> old_layout_;    // runs an older Kite started in spool/C.P/
  std::vector<JobKey> old_dirs_;   // such runs that are over: their directories go likewise
  int slot_count_ = 0;             // slots/0 .. slots/slot_count_-1 exist or are being made
  std::vector<bool> made_;         // per slot: its directory exists (or is made by its first run)
  boost::asio::thread_pool workers_{2};
};

}  // namespace kite::agent
