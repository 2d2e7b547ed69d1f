// Runs local-universe jobs on this machine, each under kite-exec in its own session.
//
// Each job gets a spool directory, spool/<cluster>.<proc>/, holding kite-exec's lock and status
// files (common/exec_status.h) and the wrapper's pid. The lock is taken by the agent BEFORE the
// wrapper is spawned and handed to it as fd 3, so there is no moment when a started job's lock is
// free: a restarted agent that finds the lock free and no status knows the job never ran to an
// end and may run it again.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
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

// The slow half of running a local job — its spool directory, the spawn, the cleanup — is file
// system work (a few metadata operations each, milliseconds on a busy disk), so it runs on the
// runner's own threads and the agent's event loop stays free to answer its clients.
class LocalRunner {
 public:
  // `io`: where StartAsync's callbacks run (the agent's thread).
  LocalRunner(boost::asio::io_context& io, std::string spool_dir, std::string exec_path);
  ~LocalRunner();  // waits for the work already handed to its threads

  std::string JobDir(JobKey key) const;
  // Starts the job's wrapper; returns its pid (= its process group id).
  Result<pid_t> Start(JobKey key, const LaunchSpec& spec);
  // Start on the runner's threads; `done` runs on `io` with the result. The wrapper may have
  // ended (and been reaped) before `done` runs.
  void StartAsync(JobKey key, LaunchSpec spec, std::function<void(Result<pid_t>)> done);
  // Cleanup on the runner's threads.
  void CleanupAsync(JobKey key);
  // Sends `sig` to the job's whole process group. For an adopted job the pid is read from its
  // spool directory.
  void Signal(const Job& job, int sig) const;
  // The job's process group (its wrapper's pid), also for an adopted job; 0 when it has none.
  pid_t Group(const Job& job) const;
  // The wrapper's recorded outcome, or kNotFound.
  Result<ExecStatus> Outcome(JobKey key) const { return ReadExecStatus(JobDir(key)); }
  bool WrapperAlive(JobKey key) const { return ExecWrapperAlive(JobDir(key)); }
  // Removes the job's spool directory (when it leaves the queue).
  void Cleanup(JobKey key) const;

 private:
  boost::asio::io_context& io_;
  std::string spool_;
  std::string exec_path_;
  boost::asio::thread_pool workers_{2};
};

}  // namespace kite::agent
