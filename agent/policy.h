// Job policy expressions (HTCondor's periodic_* and on_exit_*), evaluated as pure functions.
#pragma once

#include <string>

#include "agent/job.h"
#include "common/exec_status.h"

namespace kite::agent {

class JobQueue;

struct PolicyDecision {
  enum class Action { kNone, kHold, kRelease, kRemove };
  Action action = Action::kNone;
  std::string reason;
  int code = 0;
  int subcode = 0;
};

// PeriodicRemove (any state but Removed), then PeriodicHold (Idle or Running), then
// PeriodicRelease (Held). UNDEFINED or ERROR counts as false, as in HTCondor.
PolicyDecision EvaluatePeriodic(const Job& job);

struct ExitDecision {
  enum class Action { kComplete, kRequeue, kHold };
  Action action = Action::kComplete;
  std::string reason;
  int subcode = 0;
};

// After a job's exit attributes are set: OnExitHold (hold), then OnExitRemove (default true:
// complete; false: run it again).
ExitDecision EvaluateOnExit(const Job& job);

// A run ended with an exit code or a signal: records it (JobQueue::MarkExited) and lets
// on_exit_hold / on_exit_remove decide: hold, run again, or complete. Returns true when the job
// is now Completed, for the caller to retire it.
bool EndRun(JobQueue& queue, Job& job, const ExecStatus& outcome);

// True when any job of the cluster could be affected by a periodic expression.
bool HasPeriodicPolicy(const Job& job);

}  // namespace kite::agent
