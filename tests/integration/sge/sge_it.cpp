// The grid path into a real Grid Engine, end to end through real processes: client ->
// kite-gatekeeper -> kite-jobmanager --batch sge -> qsub/qstat/qacct/qdel -> sge_qmaster +
// sge_execd -> kite-exec. Each test starts its own single-node cell (tests/fixtures/sge/
// start-sge.sh); one that cannot start fails the test with the reason. Wrappers named qsub, qstat,
// qacct and qdel, first in the gatekeeper's PATH, count every call the job manager makes before
// running the real one.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include "common/files.h"
#include "common/strings.h"
#include "tests/fixtures/kite_env.h"
#include "tests/fixtures/sge/sge_cell.h"
#include "tests/integration/gram/site.h"

namespace kite::gram::testing {
namespace {

using kite::testing::ReadFileOr;
using kite::testing::SgeCell;
using kite::testing::WaitUntil;

int Lines(const std::string& path) {
  std::string s = ReadFileOr(path);
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

class SgeGrid : public ::testing::Test {
 protected:
  void StartAll(const std::string& tag, int slots = 8, std::vector<std::string> extra_env = {}) {
    dir_ = kite::testing::MakeTempDir("sge-" + tag);
    cell_ = std::make_unique<SgeCell>(dir_ + "/cell", slots);
    ASSERT_TRUE(cell_->ok()) << cell_->error();
    std::string bin = dir_ + "/bin";
    ASSERT_TRUE(MakeDirs(bin + "/calls", 0755));
    for (const char* tool : {"qsub", "qstat", "qacct", "qdel"}) {
      kite::testing::WriteFile(bin + "/" + tool,
                               "#!/bin/sh\necho \"$*\" >> " + bin + "/calls/" + tool +
                                   "\nexec /usr/bin/" + tool + " \"$@\"\n",
                               0755);
    }
    std::vector<std::string> env = cell_->env();
    env.push_back("PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin");
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    site_ = std::make_unique<Site>(
        "sge-" + tag, SiteOptions{.batch = "sge", .batch_poll_interval = 1, .env = env});
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
    cell_.reset();  // after the site: the job manager must not see Grid Engine vanish first
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

  // The Grid Engine job number of Kite job `id` (by the name the adapter gives it).
  std::string SgeId(const std::string& id) const { return cell_->JobNumber("kite-" + id); }

  std::string JobFile(const std::string& id, const std::string& name) const {
    return site_->account_dir() + "/jobs/" + id + "/" + name;
  }

  std::string dir_;
  std::unique_ptr<SgeCell> cell_;
  std::unique_ptr<Site> site_;
  std::unique_ptr<Client> client_;
};

TEST_F(SgeGrid, AJobRunsInGridEngineAndReportsItsExitCodeAndOutput) {
  ASSERT_NO_FATAL_FAILURE(StartAll("ok"));
  std::string out = dir_ + "/out.txt";
  auto job = Site::ShellJob("echo \"sge job $JOB_ID kite job $KITE_JOB_ID\"; exit 0");
  job.stdout_file.site = out;
  std::string id = Run("1", job);
  auto end = Site::WaitFor(*client_, id, JobState::kDone, 60);
  ASSERT_TRUE(end) << end.error().ToString();
  ASSERT_EQ(end->state, JobState::kDone) << end->failure_message;
  ASSERT_TRUE(end->exit);
  EXPECT_FALSE(end->exit->signaled);
  EXPECT_EQ(end->exit->code, 0);
  // Gone from qstat: found in the accounting file once Grid Engine has written it (1 s here).
  std::string sid;
  ASSERT_TRUE(WaitUntil([&] { return !(sid = SgeId(id)).empty(); }, 10));
  EXPECT_EQ(ReadFileOr(out), "sge job " + sid + " kite job " + id + "\n");
  EXPECT_EQ(ReadFileOr(JobFile(id, ".kite/sge.id")), sid + "\n");
  EXPECT_EQ(Calls("qsub"), 1);
  EXPECT_EQ(Calls("qacct"), 0) << "kite-exec's record is enough for a job that ended by itself";
}

TEST_F(SgeGrid, ANonZeroExitIsReportedExactly) {
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

TEST_F(SgeGrid, ResourceRequestsReachGridEngineAndImpossibleOnesAreRefused) {
  ASSERT_NO_FATAL_FAILURE(StartAll("resources"));
  auto job = Site::ShellJob("sleep 60");
  job.resources = {
      .cpus = 2, .memory_mb = 300, .walltime_s = 150, .queue = "other.q", .project = "physics"};
  std::string id = Run("1", job);
  ASSERT_EQ(Site::WaitFor(*client_, id, JobState::kActive, 60)->state, JobState::kActive);
  std::string sid = SgeId(id);
  auto r = cell_->Run({"qstat", "-j", sid});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want : {"h_vmem=150M", "h_rt=150", "parallel environment:  smp range: 2",
                           "project:                    physics", "other.q"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << " in " << r.out;
  }
  // Kite says active from "t" (being handed to execd) on.
  EXPECT_TRUE(WaitUntil([&] { return cell_->JobState(sid) == "r"; }, 10)) << cell_->JobState(sid);
  // What Grid Engine refuses at submission fails for good (another try cannot work), with its
  // words: an unknown queue, a request no queue can satisfy.
  auto bad = Site::ShellJob("true");
  bad.resources.queue = "nosuch.q";
  std::string bid = Run("2", bad);
  auto st = Site::WaitFor(*client_, bid, JobState::kFailed, 30);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->state, JobState::kFailed);
  EXPECT_EQ(st->failure, FailureCode::kBadRequest);
  EXPECT_NE(st->failure_message.find("nosuch.q"), std::string::npos) << st->failure_message;
  auto big = Site::ShellJob("true");
  big.resources.cpus = 64;
  std::string gid = Run("3", big);
  auto gst = Site::WaitFor(*client_, gid, JobState::kFailed, 30);
  ASSERT_TRUE(gst);
  EXPECT_EQ(gst->state, JobState::kFailed);
  EXPECT_EQ(gst->failure, FailureCode::kBadRequest);
  EXPECT_NE(gst->failure_message.find("no suitable queues"), std::string::npos)
      << gst->failure_message;
  ASSERT_TRUE(client_->Cancel("x", id));
}

TEST_F(SgeGrid, SeveralCpusNeedTheParallelEnvironmentTheSiteNames) {
  ASSERT_NO_FATAL_FAILURE(StartAll("pe", 8, {"KITE_SGE_PE=nosuchpe"}));
  auto job = Site::ShellJob("true");
  job.resources.cpus = 2;
  std::string id = Run("1", job);
  auto st = Site::WaitFor(*client_, id, JobState::kFailed, 30);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->state, JobState::kFailed);
  EXPECT_EQ(st->failure, FailureCode::kBadRequest);
  EXPECT_NE(st->failure_message.find("nosuchpe"), std::string::npos) << st->failure_message;
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
  EXPECT_TRUE(cell_->Jobs().empty());
  EXPECT_FALSE(FileExists(marker));
}

TEST_F(SgeGrid, CancelWhilePendingRemovesTheGridEngineJobBeforeItRuns) {
  ASSERT_NO_FATAL_FAILURE(StartAll("cancel-pending"));
  ASSERT_TRUE(cell_->DisableQueues());
  std::string marker = dir_ + "/ran";
  std::string id = Run("1", Site::ShellJob("touch " + marker));
  ASSERT_TRUE(WaitUntil([&] { return !SgeId(id).empty(); }, 30));
  std::string sid = SgeId(id);
  EXPECT_EQ(cell_->JobState(sid), "qw");
  EXPECT_EQ(client_->Status(id)->state, JobState::kPending);
  auto st = client_->Cancel("x", id);
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ(st->state, JobState::kFailed);
  EXPECT_EQ(st->failure, FailureCode::kCancelled);
  EXPECT_TRUE(WaitUntil([&] { return cell_->Jobs().empty(); }, 30)) << cell_->JobState(sid);
  ASSERT_TRUE(cell_->EnableQueues());
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_FALSE(FileExists(marker));
  EXPECT_EQ(Calls("qdel"), 1);
}

TEST_F(SgeGrid, CancelWhileRunningKillsTheJobAndTheGridEngineJobIsGone) {
  ASSERT_NO_FATAL_FAILURE(StartAll("cancel-running"));
  std::string marker = dir_ + "/finished";
  std::string pidfile = dir_ + "/sleep.pid";
  std::string id =
      Run("1", Site::ShellJob("sleep 60 & echo $! > " + pidfile + "; wait; touch " + marker));
  ASSERT_EQ(Site::WaitFor(*client_, id, JobState::kActive, 60)->state, JobState::kActive);
  std::string sid = SgeId(id);
  ASSERT_TRUE(WaitUntil([&] { return FileExists(pidfile); }, 20));
  ASSERT_TRUE(WaitUntil([&] { return cell_->JobState(sid) == "r"; }, 10)) << cell_->JobState(sid);
  std::string payload = std::string(Trim(ReadFileOr(pidfile)));
  auto st = client_->Cancel("x", id);
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ(st->state, JobState::kFailed);
  EXPECT_EQ(st->failure, FailureCode::kCancelled);
  EXPECT_TRUE(WaitUntil([&] { return cell_->Jobs().empty(); }, 30)) << cell_->JobState(sid);
  // The payload's process is gone (killed with the job), and it never reached its end.
  EXPECT_TRUE(WaitUntil(
      [&] {
        std::string stat = ReadFileOr("/proc/" + payload + "/stat");
        return stat.empty() || stat.find(") Z") != std::string::npos;
      },
      20))
      << "sleep " << payload << " outlived qdel";
  EXPECT_FALSE(FileExists(marker));
}

TEST_F(SgeGrid, AJobManagerKilledWhileJobsPendAndRunRecoversThemAllAndSubmitsNothingTwice) {
  ASSERT_NO_FATAL_FAILURE(StartAll("restart"));
  std::vector<std::string> ids;
  auto job = [&](int i) {
    std::string count = dir_ + "/count" + std::to_string(i);
    return Site::ShellJob("echo ran >> " + count + "; sleep 3; exit " + std::to_string(i));
  };
  for (int i = 0; i < 2; ++i) ids.push_back(Run(std::to_string(i), job(i)));
  for (const auto& id : ids) {
    ASSERT_EQ(Site::WaitFor(*client_, id, JobState::kActive, 60)->state, JobState::kActive);
  }
  ASSERT_TRUE(cell_->DisableQueues());  // the next two wait in Grid Engine's queue
  for (int i = 2; i < 4; ++i) ids.push_back(Run(std::to_string(i), job(i)));
  ASSERT_TRUE(WaitUntil([&] { return Calls("qsub") == 4; }, 30)) << Calls("qsub");
  ASSERT_TRUE(WaitUntil([&] { return !SgeId(ids[3]).empty(); }, 30));
  EXPECT_EQ(cell_->JobState(SgeId(ids[2])), "qw");
  pid_t before = site_->JobManagerPid();
  site_->KillJobManager();
  ASSERT_TRUE(cell_->EnableQueues());
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
  EXPECT_EQ(Calls("qsub"), 4);
  EXPECT_TRUE(WaitUntil([&] { return cell_->AccountedJobs().size() == 4; }, 10))
      << cell_->AccountedJobs().size();
}

TEST_F(SgeGrid, AJobManagerDeadRightAfterQsubFindsTheJobByNameInsteadOfSubmittingAgain) {
  ASSERT_NO_FATAL_FAILURE(StartAll("crash-qsub"));
  site_->Arm("sge-crash-after-qsub");
  std::string count = dir_ + "/count";
  std::string id = Run("1", Site::ShellJob("echo ran >> " + count + "; sleep 2; exit 5"));
  ASSERT_TRUE(WaitUntil([&] { return site_->Fired("sge-crash-after-qsub"); }, 30));
  ASSERT_TRUE(WaitUntil([&] { return site_->JobManagerPid() == 0; }, 10));
  EXPECT_FALSE(FileExists(JobFile(id, ".kite/sge.id")));  // no record of the job number anywhere
  Result<JobStatus> st = client_->Status(id);
  if (!st) st = client_->Status(id);
  ASSERT_TRUE(st) << st.error().ToString();
  auto end = Site::WaitFor(*client_, id, JobState::kDone, 60);
  ASSERT_TRUE(end) << end.error().ToString();
  ASSERT_EQ(end->state, JobState::kDone) << end->failure_message;
  EXPECT_EQ(end->exit->code, 5);
  EXPECT_EQ(Lines(count), 1);
  EXPECT_EQ(Calls("qsub"), 1);
  std::string sid;
  ASSERT_TRUE(WaitUntil([&] { return !(sid = SgeId(id)).empty(); }, 10));
  EXPECT_EQ(ReadFileOr(JobFile(id, ".kite/sge.id")), sid + "\n");
}

TEST_F(SgeGrid, AGridEngineJobDeletedBehindKitesBackIsReportedLostAndRetryable) {
  ASSERT_NO_FATAL_FAILURE(StartAll("vanish"));
  std::string id = Run("1", Site::ShellJob("sleep 60"));
  ASSERT_EQ(Site::WaitFor(*client_, id, JobState::kActive, 60)->state, JobState::kActive);
  auto r = cell_->Run({"qdel", SgeId(id)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto end = Site::WaitFor(*client_, id, JobState::kFailed, 30);
  ASSERT_TRUE(end) << end.error().ToString();
  ASSERT_EQ(end->state, JobState::kFailed);
  EXPECT_EQ(end->failure, FailureCode::kBatchLost);
  EXPECT_TRUE(IsRetryable(end->failure));
  EXPECT_NE(end->failure_message.find("killed by signal 9"), std::string::npos)
      << end->failure_message;
  EXPECT_GE(Calls("qacct"), 1);
}

TEST_F(SgeGrid, WhileQmasterIsDownJobsWaitAndNothingIsLost) {
  ASSERT_NO_FATAL_FAILURE(StartAll("qmaster-down"));
  ASSERT_TRUE(cell_->DisableQueues());
  std::string count = dir_ + "/count";
  std::string id = Run("1", Site::ShellJob("echo ran >> " + count + "; exit 4"));
  ASSERT_TRUE(WaitUntil([&] { return !SgeId(id).empty(); }, 30));
  std::string pid = std::string(Trim(ReadFileOr(dir_ + "/cell/qmaster/qmaster.pid")));
  ASSERT_FALSE(pid.empty());
  ASSERT_EQ(::kill(std::stoi(pid), SIGKILL), 0);  // a crash; restarts from its spool
  ASSERT_TRUE(WaitUntil([&] { return cell_->Run({"qstat"}).exit_code != 0; }, 20));
  // qstat -xml now answers an empty list with exit 0: the job must not be taken for gone.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  auto st = client_->Status(id);
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ(st->state, JobState::kPending) << st->failure_message;
  auto r = kite::testing::RunCommand(
      {"/bin/sh", "-c", "exec /usr/lib/gridengine/sge_qmaster </dev/null >/dev/null 2>&1"},
      cell_->env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitUntil([&] { return cell_->EnableQueues(); }, 20));
  auto end = Site::WaitFor(*client_, id, JobState::kDone, 60);
  ASSERT_TRUE(end) << end.error().ToString();
  ASSERT_EQ(end->state, JobState::kDone) << end->failure_message;
  EXPECT_EQ(end->exit->code, 4);
  EXPECT_EQ(Lines(count), 1);
  EXPECT_EQ(Calls("qsub"), 1);
}

TEST_F(SgeGrid, PollingCostStaysFlatWithManyJobs) {
  constexpr int kJobs = 100;
  ASSERT_NO_FATAL_FAILURE(StartAll("many", 32));
  ASSERT_TRUE(cell_->DisableQueues());  // all of them wait while the calls are counted
  std::vector<std::string> ids;
  for (int i = 0; i < kJobs; ++i) {
    ids.push_back(Run(std::to_string(i), Site::ShellJob("exit " + std::to_string(i % 7))));
    ASSERT_FALSE(ids.back().empty());
  }
  ASSERT_TRUE(WaitUntil([&] { return Calls("qsub") == kJobs; }, 120)) << Calls("qsub");
  ASSERT_EQ(cell_->Jobs().size(), static_cast<size_t>(kJobs));
  // One qstat per poll interval (1 s) for all the jobs, not one per job.
  int before = Calls("qstat");
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(5));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int calls = Calls("qstat") - before;
  EXPECT_GE(calls, 3) << "the job manager stopped polling";
  EXPECT_LE(calls, static_cast<int>(secs) + 2) << calls << " qstat calls in " << secs << " s";
  // And all of them run to their exact ends once the queues take jobs, with no qacct at all
  // (kite-exec's records say how they ended).
  ASSERT_TRUE(cell_->EnableQueues());
  before = Calls("qstat");
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < kJobs; ++i) {
    auto end = Site::WaitFor(*client_, ids[i], JobState::kDone, 120);
    ASSERT_TRUE(end) << end.error().ToString();
    ASSERT_EQ(end->state, JobState::kDone) << "job " << i << ": " << end->failure_message;
    EXPECT_EQ(end->exit->code, i % 7);
  }
  secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  calls = Calls("qstat") - before;
  std::fprintf(stderr, "%d jobs ran in %.1f s with %d qstat calls\n", kJobs, secs, calls);
  EXPECT_LE(calls, static_cast<int>(secs) + 2) << calls << " qstat calls in " << secs << " s";
  EXPECT_EQ(Calls("qsub"), kJobs);
  EXPECT_EQ(Calls("qacct"), 0);
  EXPECT_EQ(Calls("qdel"), 0);
}

}  // namespace
}  // namespace kite::gram::testing
