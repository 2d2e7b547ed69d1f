// What only Slurm does, end to end (the tests every system shares are in batch_grid_it.cpp):
// resource requests become sbatch options Slurm shows in `scontrol show job`, and Slurm stops a
// job past its time limit with SIGTERM.
#include <gtest/gtest.h>

#include <csignal>

#include "common/files.h"
#include "tests/integration/batch/batch_grid.h"

namespace kite::gram::testing {
namespace {

using kite::testing::ReadFileOr;

// How a `sh -c 'sleep 300 && ...'` job ends when Slurm stops it with SIGTERM: Slurm signals the
// job's processes one at a time, so the shell either dies of its own SIGTERM or, when its sleep
// died first, exits with the sleep's status (128 + 15) before the signal reaches it.
bool DiedOfSigterm(const ExitInfo& e) {
  return e.signaled ? e.code == SIGTERM : e.code == 128 + SIGTERM;
}

class SlurmGrid : public BatchGridTest {
 protected:
  void StartAll(const std::string& tag) { BatchGridTest::StartAll("slurm", tag); }
};

TEST_F(SlurmGrid, ResourceRequestsReachSlurm) {
  ASSERT_NO_FATAL_FAILURE(StartAll("resources"));
  auto job = Site::ShellJob("sleep 30");
  job.resources = {.cpus = 2, .memory_mb = 100, .walltime_s = 150, .queue = "other"};
  std::string id = Run("1", job);
  ASSERT_EQ(Site::WaitFor(*client_, id, JobState::kActive, 60)->state, JobState::kActive);
  auto r = cluster().Run({"scontrol", "--oneliner", "show", "job", BatchId(id)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want : {"NumCPUs=2 ", "MinMemoryNode=100M ", "TimeLimit=00:03:00 ",
                           "Partition=other ", "Requeue=0 ", "JobName=kite-"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << " in " << r.out;
  }
  // An unknown partition is refused by Slurm at submission: failed for good (another try cannot
  // work), with sbatch's words.
  auto bad = Site::ShellJob("true");
  bad.resources.queue = "nosuchpartition";
  ASSERT_NO_FATAL_FAILURE(ExpectRefused("2", bad, "partition"));
  ASSERT_TRUE(client_->Cancel("x", id));
}

TEST_F(SlurmGrid, AJobPastItsWalltimeIsStoppedBySlurmAndReportedAsSuch) {
  ASSERT_NO_FATAL_FAILURE(StartAll("walltime"));
  std::string marker = dir_ + "/finished";
  auto job = Site::ShellJob("sleep 300 && touch " + marker);
  job.resources.walltime_s = 30;  // Slurm: 1 minute, enforced within its 30 s check period
  std::string id = Run("1", job);
  auto end = Site::WaitFor(*client_, id, JobState::kFailed, 150);
  ASSERT_TRUE(end) << end.error().ToString();
  ASSERT_EQ(end->state, JobState::kFailed);
  EXPECT_EQ(end->failure, FailureCode::kBatchLimitExceeded);
  EXPECT_FALSE(IsRetryable(end->failure));
  EXPECT_NE(end->failure_message.find("TIMEOUT"), std::string::npos) << end->failure_message;
  ASSERT_TRUE(end->exit);  // kite-exec saw the job die of Slurm's SIGTERM
  EXPECT_TRUE(DiedOfSigterm(*end->exit)) << end->exit->signaled << " " << end->exit->code;
  EXPECT_EQ(cluster().JobState(BatchId(id)), "TIMEOUT");
  EXPECT_FALSE(FileExists(marker));
}

}  // namespace
}  // namespace kite::gram::testing
