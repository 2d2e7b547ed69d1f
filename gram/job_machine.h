// The site's job state machine as data: events, the {state, event} -> state table and the pure
// transition function. The job manager stores each transition before it runs the action the new
// state enables (docs/protocol.md draws the machine; keep both in step).
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "gram/protocol.h"

namespace kite::gram {

enum class JobEvent {
  kCommit,         // the client committed the job
  kCommitTimeout,  // no commit before the deadline: the site forgets the job
  kStagedIn,       // every input is in the job directory
  kStarted,        // the batch system runs the job
  kEnded,          // the job ended (exit code or signal known)
  kStagedOut,      // all output acknowledged by GASS
  kFailed,         // an action failed for good (the failure code says why)
  kCancel,         // the client cancelled the job
  kCommitEnd,      // the client stored the final state: the site forgets the job
};
std::string_view JobEventName(JobEvent event);

// Where an event leads: a new state, or forgetting the job (its row and directory are removed).
struct Transition {
  JobState to = JobState::kPendingCommit;
  bool forget = false;
};

struct TransitionRule {
  JobState from;
  JobEvent event;
  Transition result;
};

// The whole table, for documentation and tests.
std::span<const TransitionRule> TransitionTable();

// The transition for `event` in `state`, or nullopt when the event does not apply there (the
// caller answers kConflict for client events and ignores stale internal ones).
std::optional<Transition> NextState(JobState state, JobEvent event);

}  // namespace kite::gram
