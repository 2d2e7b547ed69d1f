// The job status table, row by row, and what it refuses.
#include "agent/job_transitions.h"

#include <gtest/gtest.h>

namespace kite::agent {
namespace {

constexpr int kStatuses[] = {kIdle, kRunning, kRemoved, kCompleted, kHeld, kSuspended};
constexpr JobEvent kEvents[] = {JobEvent::kStart,   JobEvent::kRequeue, JobEvent::kComplete,
                                JobEvent::kHold,    JobEvent::kRelease, JobEvent::kRemove,
                                JobEvent::kSuspend, JobEvent::kContinue};

TEST(JobTransitions, EveryStatusAndEvent) {
  struct Row {
    int from;
    JobEvent event;
    int to;  // 0: refused
  };
  const Row expected[] = {
      {kIdle, JobEvent::kStart, kRunning},
      {kIdle, JobEvent::kRequeue, 0},
      {kIdle, JobEvent::kComplete, 0},
      {kIdle, JobEvent::kHold, kHeld},
      {kIdle, JobEvent::kRelease, 0},
      {kIdle, JobEvent::kRemove, kRemoved},
      {kIdle, JobEvent::kSuspend, 0},
      {kIdle, JobEvent::kContinue, 0},
      {kRunning, JobEvent::kStart, 0},
      {kRunning, JobEvent::kRequeue, kIdle},
      {kRunning, JobEvent::kComplete, kCompleted},
      {kRunning, JobEvent::kHold, kHeld},
      {kRunning, JobEvent::kRelease, 0},
      {kRunning, JobEvent::kRemove, kRemoved},
      {kRunning, JobEvent::kSuspend, kSuspended},
      {kRunning, JobEvent::kContinue, 0},
      // A suspended job is a running one its slot stopped for now: it goes on, or its run ends
      // in any of the ways a running job's does.
      {kSuspended, JobEvent::kStart, 0},
      {kSuspended, JobEvent::kRequeue, kIdle},
      {kSuspended, JobEvent::kComplete, kCompleted},
      {kSuspended, JobEvent::kHold, kHeld},
      {kSuspended, JobEvent::kRelease, 0},
      {kSuspended, JobEvent::kRemove, kRemoved},
      {kSuspended, JobEvent::kSuspend, 0},
      {kSuspended, JobEvent::kContinue, kRunning},
      {kHeld, JobEvent::kStart, 0},
      {kHeld, JobEvent::kRequeue, 0},
      {kHeld, JobEvent::kComplete, 0},
      {kHeld, JobEvent::kHold, 0},
      {kHeld, JobEvent::kRelease, kIdle},
      {kHeld, JobEvent::kRemove, kRemoved},
      {kHeld, JobEvent::kSuspend, 0},
      {kHeld, JobEvent::kContinue, 0},
  };
  for (const Row& r : expected) {
    auto to = NextJobStatus(r.from, r.event);
    EXPECT_EQ(to.value_or(0), r.to) << StatusName(r.from) << " " << JobEventName(r.event);
  }
  // Removed and Completed are final: nothing moves them but retirement.
  for (int status : {kRemoved, kCompleted}) {
    for (JobEvent e : kEvents) EXPECT_FALSE(NextJobStatus(status, e)) << JobEventName(e);
  }
}

TEST(JobTransitions, RefusalsSayWhyAsCondorHoldDoes) {
  EXPECT_EQ(RefusalReason("3.1", kHeld, JobEvent::kHold), "Job 3.1 is already held");
  EXPECT_EQ(RefusalReason("3.1", kCompleted, JobEvent::kHold),
            "Job 3.1 is Completed and cannot be held");
  EXPECT_EQ(RefusalReason("3.1", kIdle, JobEvent::kRelease), "Job 3.1 is not held");
  EXPECT_EQ(RefusalReason("3.1", kRemoved, JobEvent::kRemove), "Job 3.1 is already being removed");
  for (int s : kStatuses) {
    for (JobEvent e : kEvents) {
      if (!NextJobStatus(s, e)) {
        EXPECT_FALSE(RefusalReason("1.0", s, e).empty());
      }
    }
  }
}

}  // namespace
}  // namespace kite::agent
