// The job state machine's table: the paths a job takes, and what each state refuses.
#include "gram/job_machine.h"

#include <gtest/gtest.h>

#include <set>

namespace kite::gram {
namespace {

using S = JobState;
using E = JobEvent;

TEST(JobMachine, TheHappyPathEndsDone) {
  S s = S::kPendingCommit;
  for (E e : {E::kCommit, E::kStagedIn, E::kStarted, E::kEnded, E::kStagedOut}) {
    auto t = NextState(s, e);
    ASSERT_TRUE(t) << JobStateName(s) << " + " << JobEventName(e);
    EXPECT_FALSE(t->forget);
    s = t->to;
  }
  EXPECT_EQ(s, S::kDone);
  auto end = NextState(s, E::kCommitEnd);
  ASSERT_TRUE(end);
  EXPECT_TRUE(end->forget);
}

TEST(JobMachine, AnUncommittedJobIsForgottenAndNeverStarts) {
  auto t = NextState(S::kPendingCommit, E::kCommitTimeout);
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->forget);
  EXPECT_FALSE(NextState(S::kPendingCommit, E::kStarted));
  EXPECT_FALSE(NextState(S::kPendingCommit, E::kStagedIn));
}

TEST(JobMachine, CancelFailsEveryLiveStateAndIsHarmlessAfterTheEnd) {
  for (S s : {S::kPendingCommit, S::kStageIn, S::kPending, S::kActive, S::kStageOut}) {
    auto t = NextState(s, E::kCancel);
    ASSERT_TRUE(t) << JobStateName(s);
    EXPECT_EQ(t->to, S::kFailed);
  }
  EXPECT_EQ(NextState(S::kDone, E::kCancel)->to, S::kDone);
  EXPECT_EQ(NextState(S::kFailed, E::kCancel)->to, S::kFailed);
}

TEST(JobMachine, CommitEndOnlyAfterTheEnd) {
  for (S s : {S::kPendingCommit, S::kStageIn, S::kPending, S::kActive, S::kStageOut}) {
    EXPECT_FALSE(NextState(s, E::kCommitEnd)) << JobStateName(s);
  }
}

TEST(JobMachine, ARepeatedCommitChangesNothing) {
  for (S s : {S::kStageIn, S::kPending, S::kActive, S::kStageOut, S::kDone, S::kFailed}) {
    auto t = NextState(s, E::kCommit);
    ASSERT_TRUE(t) << JobStateName(s);
    EXPECT_EQ(t->to, s);
  }
}

TEST(JobMachine, TerminalStatesAreLeftOnlyByCommitEnd) {
  for (const auto& r : TransitionTable()) {
    if (IsTerminal(r.from) && !r.result.forget) {
      EXPECT_EQ(r.result.to, r.from);
    }
  }
}

TEST(JobMachine, TableHasNoDuplicateRules) {
  std::set<std::pair<int, int>> seen;
  for (const auto& r : TransitionTable()) {
    EXPECT_TRUE(seen.insert({static_cast<int>(r.from), static_cast<int>(r.event)}).second);
  }
}

}  // namespace
}  // namespace kite::gram
