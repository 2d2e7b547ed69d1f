// The grid path into a real Slurm, end to end through real processes: client -> kite-gatekeeper
// -> kite-jobmanager --batch slurm -> sbatch/squeue/scancel -> slurmctld + slurmd -> kite-exec.
// Each test starts its own single-node cluster (tests/fixtures/slurm/start-slurm.sh); one that
// cannot start fails the test with the reason. Wrappers named sbatch, squeue and scancel, first
// in the gatekeeper's PATH, count every call the job manager makes before running the real one.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include "common/exec_status.h"
#include "common/files.h"
#include "common/strings.h"
#include "tests/fixtures/kite_env.h"
#include "tests/fixtures/slurm/slurm_cluster.h"
#include "tests/integration/gram/site.h"

namespace kite::gram::testing {
namespace {

using kite::testing::ReadFileOr;
using kite::testing::SlurmCluster;
using kite::testing::WaitUntil;

int Lines(const std::string& path) {
  std::string s = ReadFileOr(path);
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

// How a `sh -c 'sleep 300 && ...'` job ends when Slurm stops it with SIGTERM: Slurm signals the
// job's processes one at a time, so the shell either dies of its own SIGTERM or, when its sleep
// died first, exits with the sleep's status (128 + 15) before the signal reaches it.
bool DiedOfSigterm(const ExitInfo& e) {
  return e.signaled ? e.code == SIGTERM : e.code == 128 + SIGTERM;
}

class SlurmGrid : public ::testing::Test {
 protected:
  // `cpus`: the node's CPU count (more: more trivial jobs at once on this small machine).
  void StartAll(const std::string& tag, int cpus = 8) {
    dir_ = kite::testing::MakeTempDir("slurm-" + tag);
    cluster_ = std::make_unique<SlurmCluster>(dir_ + "/cluster", cpus);
    ASSERT_TRUE(cluster_->ok()) << cluster_->error();
    std::string bin = dir_ + "/bin";
    ASSERT_TRUE(MakeDirs(bin + "/calls", 0755));
    for (const char* tool : {"sbatch", "squeue", "scancel"}) {
      kite::testing::WriteFile(bin + "/" + tool,
                               "#!/bin/sh\necho \"$*\" >> " + bin + "/calls/" + tool +
                                   "\nexec /usr/bin/" + tool + " \"$@\"\n",
                               0755);
    }
    site_ = std::make_unique<Site>(
        "slurm-" + tag, SiteOptions{.batch = "slurm",
                                    .batch_poll_interval = 1,
                                    .env = {cluster_->conf_env(),
                                            "PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin"}});
    client_ = site_->MakeClient();
    ASSERT_TRUE(client_);
  }

  void TearDown() override {
    std::string jm_log = site_ ? site_->account_dir() + "/jobmanager.log" : "";
    if (HasFailure() && !jm_log.empty()) {
      std::string log = ReadFileOr(jm_log);
      std::fprintf(stderr, "--- job manager log (tail):\n%s\n",
                   log.substr(log.size() > 4000 ? log.size() - 4000 : 0).c_str());
    }
    client_.reset();
    site_.reset();
    cluster_.reset();  // after the site: the job manager must not see Slurm vanish first
    if (!dir_.empty() && !HasFailure()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    } else if (!dir_.empty()) {
      std::fprintf(stderr, "kept %s for inspection\n", dir_.c_str());
    }
  }

  int Calls(const std::string& tool) const { return Lines(dir_ + "/bin/calls/" + tool); }

  // Submits and commits; returns the job id.
  std::string Run(const std::string& tag, const JobDescription& job) {
    auto sub = client_->Submit("s-" + tag, job);
    EXPECT_TRUE(sub) << sub.error().ToString();
    if (!sub) return "";
    auto c = client_->Commit("c-" + tag, sub->job_id);
    EXPECT_TRUE(c) << c.error().ToString();
    return sub->job_id;
  }

  // The Slurm id of Kite job `id` (by the name the adapter gives it); "" when Slurm has none.
  std::string SlurmId(const std::string& id) const {
    auto r =
        cluster_->Run({"squeue", "--noheader", "--states=all", "--name=kite-" + id, "--format=%i"});
    std::string s(Trim(r.out));
    return s;
  }

  std::string JobFile(const std::string& id, const std::string& name) const {
    return site_->account_dir() + "/jobs/" + id + "/" + name;
  }

  void Drain() const {
    auto r = cluster_->Run(
        {"scontrol", "update", "NodeName=localhost", "State=DRAIN", "Reason=kite-test"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  void Resume() const {
    auto r = cluster_->Run({"scontrol", "update", "NodeName=localhost", "State=RESUME"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  std::string dir_;
  std::unique_ptr<SlurmCluster> cluster_;
  std::unique_ptr<Site> site_;
  std::unique_ptr<Client> client_;
};

TEST_F(SlurmGrid, AJobRunsInSlurmAndReportsItsExitCodeAndOutput) {
  ASSERT_NO_FATAL_FAILURE(StartAll("ok"));
  std::string out = dir_ + "/out.txt";
  auto job = Site::ShellJob("echo \"slurm job $SLURM_JOB_ID kite job $KITE_JOB_ID\"; exit 0");
  job.stdout_file.site = out;
  std::string id = Run("1", job);
  auto end = Site::WaitFor(*client_, id, JobState::kDone, 60);
  ASSERT_TRUE(end) << end.error().ToString();
  ASSERT_EQ(end->state, JobState::kDone) << end->failure_message;
  ASSERT_TRUE(end->exit);
  EXPECT_FALSE(end->exit->signaled);
  EXPECT_EQ(end->exit->code, 0);
  std::string sid = SlurmId(id);
  ASSERT_FALSE(sid.empty());
  EXPECT_EQ(ReadFileOr(out), "slurm job " + sid + " kite job " + id + "\n");
  EXPECT_EQ(cluster_->JobState(sid), "COMPLETED");
  EXPECT_EQ(Calls("sbatch"), 1);
}

TEST_F(SlurmGrid, ANonZeroExitIsReportedExactly) {
  ASSERT_NO_FATAL_FAILURE(StartAll("exit"));
  std::string id = Run("1", Site::ShellJob("echo oops >&2; exit 3"));
  auto end = Site::WaitFor(*client_, id, JobState::kDone, 60);
  ASSERT_TRUE(end) << end.error().ToString();
  ASSERT_EQ(end->state, JobState::kDone) << end->failure_message;
  ASSERT_TRUE(end->exit);
  EXPECT_FALSE(end->exit->signaled);
  EXPECT_EQ(end->exit->code, 3);
  EXPECT_EQ(ReadFileOr(JobFile(id, ".kite/stderr")), "oops\n");
}

TEST_F(SlurmGrid, ResourceRequestsReachSlurm) {
  ASSERT_NO_FATAL_FAILURE(StartAll("resources"));
  auto job = Site::ShellJob("sleep 30");
  job.resources = {.cpus = 2, .memory_mb = 100, .walltime_s = 150, .queue = "other"};
  std::string id = Run("1", job);
  ASSERT_EQ(Site::WaitFor(*client_, id, JobState::kActive, 60)->state, JobState::kActive);
  auto r = cluster_->Run({"scontrol", "--oneliner", "show", "job", SlurmId(id)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want : {"NumCPUs=2 ", "MinMemoryNode=100M ", "TimeLimit=00:03:00 ",
                           "Partition=other ", "Requeue=0 ", "JobName=kite-"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << " in " << r.out;
  }
  // An unknown partition is refused by Slurm at submission: failed for good (another try cannot
  // work), with sbatch's words.
  auto bad = Site::ShellJob("true");
  bad.resources.queue = "nosuchpartition";
  std::string bid = Run("2", bad);
  auto st = Site::WaitFor(*client_, bid, JobState::kFailed, 30);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->state, JobState::kFailed);
  EXPECT_EQ(st->failure, FailureCode::kBadRequest);
  EXPECT_NE(st->failure_message.find("partition"), std::string::npos) << st->failure_message;
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
  EXPECT_EQ(cluster_->JobState(SlurmId(id)), "TIMEOUT");
  EXPECT_FALSE(FileExists(marker));
}

TEST_F(SlurmGrid, CancelWhilePendingRemovesTheSlurmJobBeforeItRuns) {
  ASSERT_NO_FATAL_FAILURE(StartAll("cancel-pending"));
  ASSERT_NO_FATAL_FAILURE(Drain());
  std::string marker = dir_ + "/ran";
  std::string id = Run("1", Site::ShellJob("touch " + marker));
  ASSERT_TRUE(WaitUntil([&] { return !SlurmId(id).empty(); }, 30));
  std::string sid = SlurmId(id);
  EXPECT_EQ(cluster_->JobState(sid), "PENDING");
  EXPECT_EQ(client_->Status(id)->state, JobState::kPending);
  auto st = client_->Cancel("x", id);
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ(st->state, JobState::kFailed);
  EXPECT_EQ(st->failure, FailureCode::kCancelled);
  EXPECT_TRUE(WaitUntil([&] { return cluster_->JobState(sid) == "CANCELLED"; }, 30))
      << cluster_->JobState(sid);
  EXPECT_TRUE(cluster_->Jobs("PENDING,RUNNING,COMPLETING").empty());
  ASSERT_NO_FATAL_FAILURE(Resume());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_FALSE(FileExists(marker));
}

TEST_F(SlurmGrid, CancelWhileRunningStopsTheJobAndTheSlurmJobIsGone) {
  ASSERT_NO_FATAL_FAILURE(StartAll("cancel-running"));
  std::string marker = dir_ + "/finished";
  std::string id = Run("1", Site::ShellJob("sleep 300 && touch " + marker));
  ASSERT_EQ(Site::WaitFor(*client_, id, JobState::kActive, 60)->state, JobState::kActive);
  std::string sid = SlurmId(id);
  ASSERT_EQ(cluster_->JobState(sid), "RUNNING");
  auto st = client_->Cancel("x", id);
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ(st->state, JobState::kFailed);
  EXPECT_EQ(st->failure, FailureCode::kCancelled);
  EXPECT_TRUE(WaitUntil([&] { return cluster_->JobState(sid) == "CANCELLED"; }, 30))
      << cluster_->JobState(sid);
  EXPECT_TRUE(cluster_->Jobs("PENDING,RUNNING,COMPLETING").empty());
  // The payload died of the signal (kite-exec recorded it) and never reached its end.
  std::string control = JobFile(id, ".kite");
  ASSERT_TRUE(WaitUntil([&] { return ReadExecStatus(control).has_value(); }, 20))
      << ReadFileOr(control + "/lock");
  auto recorded = ReadExecStatus(control);
  EXPECT_TRUE((recorded->kind == ExecStatus::Kind::kSignaled && recorded->code == 15) ||
              (recorded->kind == ExecStatus::Kind::kExited && recorded->code == 143))
      << FormatExecStatus(*recorded);
  EXPECT_FALSE(FileExists(marker));
}

TEST_F(SlurmGrid, AJobManagerKilledWhileJobsPendAndRunRecoversThemAllAndSubmitsNothingTwice) {
  ASSERT_NO_FATAL_FAILURE(StartAll("restart"));
  std::vector<std::string> ids;
  auto job = [&](int i) {
    std::string count = dir_ + "/count" + std::to_string(i);
    return Site::ShellJob("echo ran >> " + count + "; sleep 4; exit " + std::to_string(i));
  };
  for (int i = 0; i < 2; ++i) ids.push_back(Run(std::to_string(i), job(i)));
  for (const auto& id : ids) {
    ASSERT_EQ(Site::WaitFor(*client_, id, JobState::kActive, 60)->state, JobState::kActive);
  }
  ASSERT_NO_FATAL_FAILURE(Drain());  // the next two wait in Slurm's queue
  for (int i = 2; i < 4; ++i) ids.push_back(Run(std::to_string(i), job(i)));
  ASSERT_TRUE(WaitUntil([&] { return Calls("sbatch") == 4; }, 30)) << Calls("sbatch");
  ASSERT_TRUE(WaitUntil([&] { return !SlurmId(ids[3]).empty(); }, 30));
  EXPECT_EQ(cluster_->JobState(SlurmId(ids[2])), "PENDING");
  pid_t before = site_->JobManagerPid();
  site_->KillJobManager();
  ASSERT_NO_FATAL_FAILURE(Resume());
  // The next request restarts it (the client may see the lost connection once and resend).
  Result<JobStatus> st = client_->Status(ids[0]);
  if (!st) st = client_->Status(ids[0]);
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_NE(site_->JobManagerPid(), before);
  for (size_t i = 0; i < ids.size(); ++i) {
    auto end = Site::WaitFor(*client_, ids[i], JobState::kDone, 60);
    ASSERT_TRUE(end) << end.error().ToString();
    ASSERT_EQ(end->state, JobState::kDone) << "job " << i << ": " << end->failure_message;
    EXPECT_EQ(end->exit->code, static_cast<int>(i));
    EXPECT_EQ(Lines(dir_ + "/count" + std::to_string(i)), 1) << "job " << i;
  }
  EXPECT_EQ(Calls("sbatch"), 4);
  EXPECT_EQ(cluster_->Jobs("all").size(), 4u);
}

TEST_F(SlurmGrid, AJobManagerDeadRightAfterSbatchFindsTheJobByNameInsteadOfSubmittingAgain) {
  ASSERT_NO_FATAL_FAILURE(StartAll("crash-sbatch"));
  site_->Arm("slurm-crash-after-sbatch");
  std::string count = dir_ + "/count";
  std::string id = Run("1", Site::ShellJob("echo ran >> " + count + "; sleep 2; exit 5"));
  ASSERT_TRUE(WaitUntil([&] { return site_->Fired("slurm-crash-after-sbatch"); }, 30));
  ASSERT_TRUE(WaitUntil([&] { return site_->JobManagerPid() == 0; }, 10));
  EXPECT_FALSE(FileExists(JobFile(id, ".kite/slurm.id")));  // no record of Slurm's id anywhere
  Result<JobStatus> st = client_->Status(id);
  if (!st) st = client_->Status(id);
  ASSERT_TRUE(st) << st.error().ToString();
  auto end = Site::WaitFor(*client_, id, JobState::kDone, 60);
  ASSERT_TRUE(end) << end.error().ToString();
  ASSERT_EQ(end->state, JobState::kDone) << end->failure_message;
  EXPECT_EQ(end->exit->code, 5);
  EXPECT_EQ(Lines(count), 1);
  EXPECT_EQ(Calls("sbatch"), 1);
  EXPECT_EQ(cluster_->Jobs("all").size(), 1u);
}

TEST_F(SlurmGrid, ASlurmJobCancelledBehindKitesBackIsReportedLostAndRetryable) {
  ASSERT_NO_FATAL_FAILURE(StartAll("vanish"));
  std::string id = Run("1", Site::ShellJob("sleep 300"));
  ASSERT_EQ(Site::WaitFor(*client_, id, JobState::kActive, 60)->state, JobState::kActive);
  auto r = cluster_->Run({"scancel", SlurmId(id)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto end = Site::WaitFor(*client_, id, JobState::kFailed, 30);
  ASSERT_TRUE(end) << end.error().ToString();
  ASSERT_EQ(end->state, JobState::kFailed);
  EXPECT_EQ(end->failure, FailureCode::kBatchLost);
  EXPECT_TRUE(IsRetryable(end->failure));
  EXPECT_NE(end->failure_message.find("CANCELLED"), std::string::npos) << end->failure_message;
}

TEST_F(SlurmGrid, WhileTheControllerIsDownJobsWaitAndNothingFailsOrRunsTwice) {
  ASSERT_NO_FATAL_FAILURE(StartAll("ctld-down"));
  std::string count0 = dir_ + "/count0", count1 = dir_ + "/count1";
  std::string id0 = Run("0", Site::ShellJob("echo ran >> " + count0 + "; sleep 3; exit 2"));
  ASSERT_EQ(Site::WaitFor(*client_, id0, JobState::kActive, 60)->state, JobState::kActive);
  ASSERT_TRUE(cluster_->StopController());
  // Submitted while Slurm cannot be asked: it waits, as does the one running (whose end Slurm
  // cannot confirm yet).
  std::string id1 = Run("1", Site::ShellJob("echo ran >> " + count1 + "; exit 7"));
  std::this_thread::sleep_for(std::chrono::seconds(12));
  auto s0 = client_->Status(id0);
  auto s1 = client_->Status(id1);
  ASSERT_TRUE(s0) << s0.error().ToString();
  ASSERT_TRUE(s1) << s1.error().ToString();
  EXPECT_EQ(s0->state, JobState::kActive) << s0->failure_message;
  EXPECT_EQ(s1->state, JobState::kPending) << s1->failure_message;
  ASSERT_TRUE(cluster_->StartController());
  auto e0 = Site::WaitFor(*client_, id0, JobState::kDone, 90);
  auto e1 = Site::WaitFor(*client_, id1, JobState::kDone, 90);
  ASSERT_TRUE(e0 && e1);
  ASSERT_EQ(e0->state, JobState::kDone) << e0->failure_message;
  ASSERT_EQ(e1->state, JobState::kDone) << e1->failure_message;
  EXPECT_EQ(e0->exit->code, 2);
  EXPECT_EQ(e1->exit->code, 7);
  EXPECT_EQ(Lines(count0), 1);
  EXPECT_EQ(Lines(count1), 1);
  EXPECT_EQ(cluster_->Jobs("all").size(), 2u);
}

TEST_F(SlurmGrid, PollingCostStaysFlatWithManyJobs) {
  constexpr int kJobs = 1000;
  constexpr int kSample = 20;  // every 50th job runs to its end; the others are cancelled
  ASSERT_NO_FATAL_FAILURE(StartAll("many", 16));
  ASSERT_NO_FATAL_FAILURE(Drain());  // all of them wait in Slurm while the calls are counted
  std::vector<std::string> ids;
  for (int i = 0; i < kJobs; ++i) {
    ids.push_back(Run(std::to_string(i), Site::ShellJob("exit " + std::to_string(i % 7))));
    ASSERT_FALSE(ids.back().empty());
  }
  ASSERT_TRUE(WaitUntil([&] { return Calls("sbatch") == kJobs; }, 300)) << Calls("sbatch");
  ASSERT_TRUE(WaitUntil([&] { return cluster_->Jobs("PENDING").size() == kJobs; }, 30))
      << cluster_->Jobs("PENDING").size();
  // One squeue per poll interval (1 s) for all 1,000 jobs, not one per job.
  int before = Calls("squeue");
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(5));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int calls = Calls("squeue") - before;
  EXPECT_GE(calls, 3) << "the job manager stopped polling";
  EXPECT_LE(calls, static_cast<int>(secs) + 2) << calls << " squeue calls in " << secs << " s";
  // Cancelling all but the sample: one scancel per poll for every cancel that came in since the
  // last, not one per job.
  before = Calls("squeue");
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < kJobs; ++i) {
    if (i % (kJobs / kSample) == 0) continue;
    auto st = client_->Cancel("x" + std::to_string(i), ids[i]);
    ASSERT_TRUE(st) << st.error().ToString();
    EXPECT_EQ(st->failure, FailureCode::kCancelled);
  }
  ASSERT_TRUE(WaitUntil([&] { return cluster_->Jobs("PENDING").size() == kSample; }, 60))
      << cluster_->Jobs("PENDING").size();
  secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LE(Calls("scancel"), static_cast<int>(secs) + 2) << Calls("scancel") << " in " << secs;
  EXPECT_LE(Calls("squeue") - before, static_cast<int>(secs) + 2);
  // And the sample runs to its exact ends once the node takes jobs.
  ASSERT_NO_FATAL_FAILURE(Resume());
  before = Calls("squeue");
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < kJobs; i += kJobs / kSample) {
    auto end = Site::WaitFor(*client_, ids[i], JobState::kDone, 120);
    ASSERT_TRUE(end) << end.error().ToString();
    ASSERT_EQ(end->state, JobState::kDone) << "job " << i << ": " << end->failure_message;
    EXPECT_EQ(end->exit->code, i % 7);
  }
  secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  calls = Calls("squeue") - before;
  EXPECT_LE(calls, static_cast<int>(secs) + 2) << calls << " squeue calls in " << secs << " s";
  EXPECT_EQ(Calls("sbatch"), kJobs);
  EXPECT_EQ(cluster_->Jobs("COMPLETED").size(), static_cast<size_t>(kSample));
  EXPECT_EQ(cluster_->Jobs("CANCELLED").size(), static_cast<size_t>(kJobs - kSample));
}

}  // namespace
}  // namespace kite::gram::testing
