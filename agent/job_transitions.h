// How a job's status may change, as a table: the one place that says which of HTCondor's
// JobStatus moves the agent makes, for jobs of every universe.
//
//   Idle ──start──► Running ──complete──► Completed ──(retire)──► history
//    ▲ ▲              │ │
//    │ └──requeue─────┘ └──hold──┐
//    │                            ▼
//    └───────release──────────── Held
//   Idle, Running, Held ──remove──► Removed ──(retire)──► history
//   Running ◄──suspend / continue──► Suspended (pool jobs; as Running for requeue, complete,
//                                              hold and remove)
//
// JobQueue::Transition applies a row and is the only code that sets JobStatus after a submit.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "agent/job.h"

namespace kite::agent {

enum class JobEvent {
  kStart,     // a run begins (a local wrapper spawned, a grid job active at its site)
  kRequeue,   // a run ended without an end for the job: it will run again
  kComplete,  // the job is done (its exit policy says so)
  kHold,      // held: by the user, a policy, the system
  kRelease,   // released from hold
  kRemove,    // removed
  kSuspend,   // its startd's owner policy suspended the run (pool jobs)
  kContinue,  // and let it go on
};

std::string_view JobEventName(JobEvent e);

// The status a job in `status` moves to on `event`, or nullopt when the event does not apply.
std::optional<int> NextJobStatus(int status, JobEvent event);

// Why `event` does not apply to job `id` in `status`, as condor_hold and friends say it
// ("Job 3.1 is already held"). Only for events NextJobStatus refuses.
std::string RefusalReason(const std::string& id, int status, JobEvent event);

}  // namespace kite::agent
