#include "agent/policy.h"

#include <gtest/gtest.h>

namespace kite::agent {
namespace {

Job MakeJob(int status, std::initializer_list<std::pair<const char*, const char*>> attrs) {
  Job j;
  j.status = status;
  j.ad.Assign("JobStatus", static_cast<int64_t>(status));
  for (auto& [k, v] : attrs) EXPECT_TRUE(j.ad.InsertText(k, v)) << k << " = " << v;
  return j;
}

using A = PolicyDecision::Action;

TEST(Policy, PeriodicTable) {
  struct Case {
    int status;
    std::initializer_list<std::pair<const char*, const char*>> attrs;
    A want;
  } cases[] = {
      {kIdle, {}, A::kNone},
      {kIdle, {{"PeriodicHold", "true"}}, A::kHold},
      {kRunning, {{"PeriodicHold", "JobStatus == 2"}}, A::kHold},
      {kHeld, {{"PeriodicHold", "true"}}, A::kNone},  // already held
      {kHeld, {{"PeriodicRelease", "true"}}, A::kRelease},
      {kIdle, {{"PeriodicRelease", "true"}}, A::kNone},
      {kHeld, {{"PeriodicRemove", "true"}, {"PeriodicRelease", "true"}}, A::kRemove},
      {kIdle, {{"PeriodicHold", "undefined"}}, A::kNone},    // UNDEFINED is false
      {kIdle, {{"PeriodicHold", "Nope > 3"}}, A::kNone},     // missing attribute
      {kIdle, {{"PeriodicHold", "\"yes\" + 1"}}, A::kNone},  // ERROR is false
      {kIdle, {{"PeriodicHold", "1"}}, A::kHold},            // non-zero number is true
      {kRemoved, {{"PeriodicRemove", "true"}}, A::kNone},
  };
  for (auto& c : cases) {
    auto j = MakeJob(c.status, c.attrs);
    EXPECT_EQ(EvaluatePeriodic(j).action, c.want) << "status " << c.status;
  }
}

TEST(Policy, ReasonsQuoteTheExpressionOrTheUsersReason) {
  auto j = MakeJob(kIdle, {{"PeriodicHold", "NumJobStarts > 2"}, {"NumJobStarts", "3"}});
  auto d = EvaluatePeriodic(j);
  EXPECT_EQ(d.reason,
            "The job attribute PeriodicHold expression 'NumJobStarts > 2' evaluated to TRUE");
  EXPECT_EQ(d.code, kHoldJobPolicy);
  j = MakeJob(kIdle, {{"PeriodicHold", "true"},
                      {"PeriodicHoldReason", "\"too many starts\""},
                      {"PeriodicHoldSubCode", "42"}});
  d = EvaluatePeriodic(j);
  EXPECT_EQ(d.reason, "too many starts");
  EXPECT_EQ(d.subcode, 42);
}

TEST(Policy, OnExit) {
  using E = ExitDecision::Action;
  EXPECT_EQ(EvaluateOnExit(MakeJob(kRunning, {{"ExitCode", "1"}})).action, E::kComplete);
  EXPECT_EQ(
      EvaluateOnExit(MakeJob(kRunning, {{"ExitCode", "1"}, {"OnExitRemove", "ExitCode == 0"}}))
          .action,
      E::kRequeue);
  EXPECT_EQ(EvaluateOnExit(MakeJob(kRunning, {{"OnExitRemove", "undefined"}})).action,
            E::kComplete);
  EXPECT_EQ(EvaluateOnExit(MakeJob(kRunning, {{"ExitCode", "2"},
                                              {"OnExitHold", "ExitCode != 0"},
                                              {"OnExitRemove", "false"}}))
                .action,
            E::kHold);
}

}  // namespace
}  // namespace kite::agent
