// What only Grid Engine does, end to end (the tests every system shares are in
// batch_grid_it.cpp): resource requests become qsub options `qstat -j` shows, and those no queue
// can satisfy are refused; several CPUs need a parallel environment the site names; Grid Engine
// kills a job past its h_rt with SIGKILL.
#include <gtest/gtest.h>

#include <csignal>

#include "common/files.h"
#include "tests/integration/batch/batch_grid.h"

namespace kite::gram::testing {
namespace {

using kite::testing::JobSet;
using kite::testing::WaitUntil;

class SgeGrid : public BatchGridTest {
 protected:
  void StartAll(const std::string& tag, const std::vector<std::string>& extra_env = {}) {
    BatchGridTest::StartAll("sge", tag, 8, extra_env);
  }
};

TEST_F(SgeGrid, ResourceRequestsReachGridEngineAndImpossibleOnesAreRefused) {
  ASSERT_NO_FATAL_FAILURE(StartAll("resources"));
  auto job = Site::ShellJob("sleep 60");
  job.resources = {
      .cpus = 2, .memory_mb = 300, .walltime_s = 150, .queue = "other.q", .project = "physics"};
  std::string id = Run("1", job);
  ASSERT_EQ(Site::WaitFor(*client_, id, JobState::kActive, 60)->state, JobState::kActive);
  std::string sid = BatchId(id);
  auto r = cluster().Run({"qstat", "-j", sid});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want : {"h_vmem=150M", "h_rt=150", "parallel environment:  smp range: 2",
                           "project:                    physics", "other.q"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << " in " << r.out;
  }
  // Kite says active from "t" (being handed to execd) on.
  EXPECT_TRUE(WaitUntil([&] { return cluster().JobState(sid) == "r"; }, 10))
      << cluster().JobState(sid);
  // What Grid Engine refuses at submission fails for good (another try cannot work), with its
  // words: an unknown queue, a request no queue can satisfy.
  auto bad = Site::ShellJob("true");
  bad.resources.queue = "nosuch.q";
  ASSERT_NO_FATAL_FAILURE(ExpectRefused("2", bad, "nosuch.q"));
  auto big = Site::ShellJob("true");
  big.resources.cpus = 64;
  ASSERT_NO_FATAL_FAILURE(ExpectRefused("3", big, "no suitable queues"));
  ASSERT_TRUE(client_->Cancel("x", id));
}

TEST_F(SgeGrid, SeveralCpusNeedTheParallelEnvironmentTheSiteNames) {
  ASSERT_NO_FATAL_FAILURE(StartAll("pe", {"KITE_SGE_PE=nosuchpe"}));
  auto job = Site::ShellJob("true");
  job.resources.cpus = 2;
  ASSERT_NO_FATAL_FAILURE(ExpectRefused("1", job, "nosuchpe"));
}

TEST_F(SgeGrid, AJobPastItsWalltimeIsKilledByGridEngineAndReportedAsSuch) {
  ASSERT_NO_FATAL_FAILURE(StartAll("walltime"));
  std::string marker = dir_ + "/finished";
  auto job = Site::ShellJob("sleep 60; touch " + marker);
  job.resources.walltime_s = 3;
  std::string id = Run("1", job);
  auto end = Site::WaitFor(*client_, id, JobState::kFailed, 60);
  ASSERT_TRUE(end) << end.error().ToString();
  ASSERT_EQ(end->state, JobState::kFailed) << end->failure_message;
  EXPECT_EQ(end->failure, FailureCode::kBatchLimitExceeded);
  EXPECT_FALSE(IsRetryable(end->failure));
  EXPECT_NE(end->failure_message.find("walltime"), std::string::npos) << end->failure_message;
  EXPECT_NE(end->failure_message.find("h_rt"), std::string::npos) << end->failure_message;
  ASSERT_TRUE(end->exit);  // Grid Engine kills the whole job, kite-exec too, with SIGKILL
  EXPECT_TRUE(end->exit->signaled);
  EXPECT_EQ(end->exit->code, SIGKILL);
  EXPECT_TRUE(cluster().Jobs(JobSet::kLive).empty());
  EXPECT_FALSE(FileExists(marker));
}

}  // namespace
}  // namespace kite::gram::testing
