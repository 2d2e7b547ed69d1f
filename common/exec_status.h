// How a job run under kite-exec ended, as recorded in its job directory.
//
// kite-exec (the small wrapper every job runs under) holds an exclusive lock on DIR/lock while it
// lives and, when the job ends, appends how it ended to that same file and syncs it. Whoever
// started it — or a restarted daemon that did not — learns the outcome from that one file alone,
// with no reliance on being the wrapper's parent. DIR/lock holds, line by line:
//
//   owner OWNER        written by the starter before the spawn (common/exec_launch.h); optional
//   pid N              appended by kite-exec once it holds the lock, before the job starts
//   status             how the job ended (FormatExecStatus), appended by kite-exec at its end
//   kind exited ...
//   end status         the record counts only when complete: a crash mid-write leaves none
//
// A starter that runs another job in the same directory writes the owner line over the file and
// cuts it there, so an outcome can never be read as a later run's. (Kite before the slots wrote
// the outcome to DIR/status and the pid to DIR/pid; both are still read.)
#pragma once

#include <signal.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace kite {

struct ExecStatus {
  enum class Kind { kExited, kSignaled, kExecFailed, kSetupFailed };
  Kind kind = Kind::kExited;
  int code = 0;            // exit code, signal number, or errno
  bool core = false;       // a core file was dumped
  double utime = 0;        // CPU seconds, user
  double stime = 0;        // CPU seconds, system
  double start = 0;        // wall clock, seconds since the epoch, when the job was started
  double end = 0;          // and when it ended
  int64_t max_rss_kb = 0;  // the largest resident set of the job's processes (KiB)
  std::string message;     // for kExecFailed / kSetupFailed: what failed, for a HoldReason
};

std::string FormatExecStatus(const ExecStatus& s);
Result<ExecStatus> ParseExecStatus(const std::string& text);

// The record kite-exec appends to DIR/lock: "status\n" FormatExecStatus "end status\n".
std::string FormatExecStatusRecord(const ExecStatus& s);

// Reads how the job ended from DIR/lock (or an older DIR/status). kNotFound when the job has not
// ended (or never recorded an end).
Result<ExecStatus> ReadExecStatus(const std::string& dir);

// True while a kite-exec process holds DIR/lock, i.e. the job's wrapper is still alive.
bool ExecWrapperAlive(const std::string& dir);

// What a starter recorded in DIR/lock (common/exec_launch.h): the owner it named and the
// wrapper's pid (0 when none was recorded; a DIR/pid file of an older Kite is read too). The pid
// may be reused once the wrapper is gone: signal it only while ExecWrapperAlive.
struct ExecLockRecord {
  std::string owner;
  pid_t pid = 0;
  std::optional<std::string> status;  // the complete status record's lines, when there is one
};
ExecLockRecord ReadExecLock(const std::string& dir);
// The lock file's text as ReadExecLock reads it (without the older DIR/pid). Pure.
ExecLockRecord ParseExecLock(std::string_view text);
inline pid_t ExecWrapperPid(const std::string& dir) {
  return ReadExecLock(dir).pid;
}

// The signals Kite stops jobs with (TERM, INT, HUP, QUIT). Whoever spawns kite-exec starts it with
// these blocked, so one sent to the job's process group while the wrapper is still starting is
// held for the job rather than lost or fatal to the wrapper.
void ExecStopSignals(sigset_t* set);

}  // namespace kite
