// How a job run under kite-exec ended, as recorded in its job directory.
//
// kite-exec (the small wrapper every local and fork job runs under) holds an exclusive lock on
// DIR/lock while it lives and, when the job ends, writes DIR/status atomically. Whoever started it
// — or a restarted daemon that did not — learns the outcome from these two files alone, with no
// reliance on being the wrapper's parent.
#pragma once

#include <signal.h>

#include <string>

#include "common/error.h"

namespace kite {

struct ExecStatus {
  enum class Kind { kExited, kSignaled, kExecFailed, kSetupFailed };
  Kind kind = Kind::kExited;
  int code = 0;         // exit code, signal number, or errno
  bool core = false;    // a core file was dumped
  double utime = 0;     // CPU seconds, user
  double stime = 0;     // CPU seconds, system
  double start = 0;     // wall clock, seconds since the epoch, when the job was started
  double end = 0;       // and when it ended
  std::string message;  // for kExecFailed / kSetupFailed: what failed, for a HoldReason
};

std::string FormatExecStatus(const ExecStatus& s);
Result<ExecStatus> ParseExecStatus(const std::string& text);

// Reads DIR/status. kNotFound when the job has not ended (or never recorded an end).
Result<ExecStatus> ReadExecStatus(const std::string& dir);

// True while a kite-exec process holds DIR/lock, i.e. the job's wrapper is still alive.
bool ExecWrapperAlive(const std::string& dir);

// The wrapper's pid as its starter recorded it in DIR/lock (a DIR/pid file of an older Kite is
// read too); 0 when none was recorded. The pid may be reused once the wrapper is gone: signal it
// only while ExecWrapperAlive.
pid_t ExecWrapperPid(const std::string& dir);

// The signals Kite stops jobs with (TERM, INT, HUP, QUIT). Whoever spawns kite-exec starts it with
// these blocked, so one sent to the job's process group while the wrapper is still starting is
// held for the job rather than lost or fatal to the wrapper.
void ExecStopSignals(sigset_t* set);

}  // namespace kite
