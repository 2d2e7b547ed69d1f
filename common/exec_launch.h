// Starting a job under kite-exec: the one launch sequence shared by Kite's starters (the agent's
// local universe and the fork batch adapter).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/error.h"

namespace kite {

struct ExecLaunch {
  std::string exec_path;  // the kite-exec program
  std::string dir;        // the job's control directory (exists): lock, status
  std::string cwd;        // the job's working directory
  std::string in = "/dev/null";
  std::string out, err;  // empty: kite-exec's own (/dev/null)
  std::string program;   // absolute path
  std::vector<std::string> args;
  std::vector<std::string> env;  // the job's whole environment
};

// Takes DIR/lock, then spawns kite-exec holding it as fd 3, in a new session, with the stop
// signals blocked (common/exec_status.h) and no other descriptor of the caller. The lock is never
// free between the decision to start and the wrapper's life, so "lock free and no status" always
// means "never ran to an end". Fails with kConflict when a live wrapper already holds the lock.
// Once the wrapper is spawned its pid is written into DIR/lock (emptied first), where
// ExecWrapperPid finds it: no file of its own, so a job's start creates one file, not two.
Result<pid_t> LaunchUnderExec(const ExecLaunch& l);

}  // namespace kite
