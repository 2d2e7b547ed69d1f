// The job status table.
#include "agent/job_transitions.h"

namespace kite::agent {
namespace {

struct Row {
  int from;
  JobEvent event;
  int to;
};

constexpr Row kRows[] = {
    {kIdle, JobEvent::kStart, kRunning},
    {kRunning, JobEvent::kRequeue, kIdle},
    {kRunning, JobEvent::kComplete, kCompleted},
    {kIdle, JobEvent::kHold, kHeld},
    {kRunning, JobEvent::kHold, kHeld},
    {kHeld, JobEvent::kRelease, kIdle},
    {kIdle, JobEvent::kRemove, kRemoved},
    {kRunning, JobEvent::kRemove, kRemoved},
    {kHeld, JobEvent::kRemove, kRemoved},
    {kRunning, JobEvent::kSuspend, kSuspended},
    {kSuspended, JobEvent::kContinue, kRunning},
    {kSuspended, JobEvent::kRequeue, kIdle},
    {kSuspended, JobEvent::kComplete, kCompleted},
    {kSuspended, JobEvent::kHold, kHeld},
    {kSuspended, JobEvent::kRemove, kRemoved},
};

}  // namespace

std::string_view JobEventName(JobEvent e) {
  switch (e) {
    case JobEvent::kStart:
      return "start";
    case JobEvent::kRequeue:
      return "requeue";
    case JobEvent::kComplete:
      return "complete";
    case JobEvent::kHold:
      return "hold";
    case JobEvent::kRelease:
      return "release";
    case JobEvent::kRemove:
      return "remove";
    case JobEvent::kSuspend:
      return "suspend";
    case JobEvent::kContinue:
      return "continue";
  }
  return "?";
}

std::optional<int> NextJobStatus(int status, JobEvent event) {
  for (const Row& r : kRows) {
    if (r.from == status && r.event == event) return r.to;
  }
  return std::nullopt;
}

std::string RefusalReason(const std::string& id, int status, JobEvent event) {
  std::string job = "Job " + id;
  switch (event) {
    case JobEvent::kHold:
      if (status == kHeld) return job + " is already held";
      return job + " is " + StatusName(status) + " and cannot be held";
    case JobEvent::kRelease:
      return job + " is not held";
    case JobEvent::kRemove:
      if (status == kRemoved) return job + " is already being removed";
      return job + " is " + StatusName(status) + " and cannot be removed";
    default:
      return job + " is " + StatusName(status) + ": cannot " + std::string(JobEventName(event));
  }
}

}  // namespace kite::agent
