// The job state machine's table and transition function.
#include "gram/job_machine.h"

#include <array>

namespace kite::gram {
namespace {

using S = JobState;
using E = JobEvent;

constexpr Transition To(JobState s) {
  return {s, false};
}
constexpr Transition kForget{JobState::kDone, true};

// Every event not listed for a state is refused in that state. A commit after the first, or a
// cancel of a finished job, changes nothing (listed so that such a repeat is not an error).
constexpr std::array<TransitionRule, 27> kTable = {{
    {S::kPendingCommit, E::kCommit, To(S::kStageIn)},
    {S::kPendingCommit, E::kCommitTimeout, kForget},
    {S::kPendingCommit, E::kCancel, To(S::kFailed)},
    {S::kPendingCommit, E::kFailed, To(S::kFailed)},
    {S::kStageIn, E::kStagedIn, To(S::kPending)},
    {S::kStageIn, E::kCommit, To(S::kStageIn)},
    {S::kStageIn, E::kFailed, To(S::kFailed)},
    {S::kStageIn, E::kCancel, To(S::kFailed)},
    {S::kPending, E::kStarted, To(S::kActive)},
    {S::kPending, E::kCommit, To(S::kPending)},
    {S::kPending, E::kEnded, To(S::kStageOut)},
    {S::kPending, E::kFailed, To(S::kFailed)},
    {S::kPending, E::kCancel, To(S::kFailed)},
    {S::kActive, E::kEnded, To(S::kStageOut)},
    {S::kActive, E::kCommit, To(S::kActive)},
    {S::kActive, E::kFailed, To(S::kFailed)},
    {S::kActive, E::kCancel, To(S::kFailed)},
    {S::kStageOut, E::kStagedOut, To(S::kDone)},
    {S::kStageOut, E::kCommit, To(S::kStageOut)},
    {S::kStageOut, E::kFailed, To(S::kFailed)},
    {S::kStageOut, E::kCancel, To(S::kFailed)},
    {S::kDone, E::kCommitEnd, kForget},
    {S::kDone, E::kCancel, To(S::kDone)},
    {S::kDone, E::kCommit, To(S::kDone)},
    {S::kFailed, E::kCommitEnd, kForget},
    {S::kFailed, E::kCancel, To(S::kFailed)},
    {S::kFailed, E::kCommit, To(S::kFailed)},
}};

}  // namespace

std::string_view JobEventName(JobEvent event) {
  switch (event) {
    case E::kCommit:
      return "commit";
    case E::kCommitTimeout:
      return "commit-timeout";
    case E::kStagedIn:
      return "staged-in";
    case E::kStarted:
      return "started";
    case E::kEnded:
      return "ended";
    case E::kStagedOut:
      return "staged-out";
    case E::kFailed:
      return "failed";
    case E::kCancel:
      return "cancel";
    case E::kCommitEnd:
      return "commit-end";
  }
  return "unknown";
}

std::span<const TransitionRule> TransitionTable() {
  return kTable;
}

std::optional<Transition> NextState(JobState state, JobEvent event) {
  for (const auto& r : kTable) {
    if (r.from == state && r.event == event) return r.result;
  }
  return std::nullopt;
}

}  // namespace kite::gram
