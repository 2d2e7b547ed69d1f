// The grid path into a real batch system, end to end through real processes: client ->
// kite-gatekeeper -> kite-jobmanager --batch NAME -> the system's tools -> its daemons ->
// kite-exec. These tests are the same for every system and run against each (BatchGrid.TEST/slurm,
// BatchGrid.TEST/sge); what differs between systems is said by the cluster's BatchTraits. Each
// test starts its own single-node system; one that cannot start fails the test with the reason.
// The tests of what only one system has are in slurm_grid_it.cpp and sge_grid_it.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <map>
#include <ostream>
#include <sstream>
#include <thread>

#include "classad/io.h"
#include "common/exec_status.h"
#include "common/files.h"
#include "tests/integration/batch/batch_grid.h"

namespace kite::gram::testing {
namespace {

using kite::testing::JobSet;
using kite::testing::ReadFileOr;
using kite::testing::ToolCalls;
using kite::testing::WaitUntil;

// A batch system the tests run against, and the load the polling test puts on it.
struct BatchSystem {
  std::string name;          // "slurm", "sge": kite-gatekeeper's --batch, the tests' suffix
  int many_jobs = 0;         // how many jobs the polling test submits
  int many_slots = 0;        // the node's slots (CPUs) in that test
  double many_submit_s = 0;  // how long their submission may take
  // Every Nth of them runs to its end; the others are cancelled while they wait (1: none).
  int many_run_every = 1;
};

// gtest prints parameters in its messages: the name says which system.
void PrintTo(const BatchSystem& s, std::ostream* os) {
  *os << s.name;
}

class BatchGrid : public BatchGridTest, public ::testing::WithParamInterface<BatchSystem> {
 protected:
  void StartAll(const std::string& tag, int slots = 8) {
    BatchGridTest::StartAll(GetParam().name, tag, slots);
  }

  // Cancels Kite job `id` (the batch system's `sid`): Kite answers cancelled at once, and the
  // system soon shows it cancelled, with nothing left waiting or running.
  void CancelAndWaitUntilGone(const std::string& id, const std::string& sid) {
    auto st = client_->Cancel("x", id);
    ASSERT_TRUE(st) << st.error().ToString();
    EXPECT_EQ(st->state, JobState::kFailed);
    EXPECT_EQ(st->failure, FailureCode::kCancelled);
    EXPECT_TRUE(WaitUntil([&] { return cluster().JobState(sid) == traits().cancelled_state; }, 30))
        << cluster().JobState(sid);
    EXPECT_TRUE(cluster().Jobs(JobSet::kLive).empty());
  }
};

// A span of a test in which a job manager's tool calls are counted. Report() shows every call in
// the span with its time, so a count over its bound says whether the calls bunched up or a kind
// of call appeared that should not have.
class CallWindow {
 public:
  explicit CallWindow(const ToolCalls& tools)
      : tools_(tools), wall_start_(ToolCalls::Now()), start_(std::chrono::steady_clock::now()) {
    for (const auto& tool : tools_.tools()) before_[tool] = tools_.Count(tool);
  }

  // Ends the span: its length is fixed, calls are counted up to when they are asked for.
  void Close() {
    seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  double seconds() const { return seconds_; }
  int Calls(const std::string& tool) const {
    auto it = before_.find(tool);
    return tools_.Count(tool) - (it == before_.end() ? 0 : it->second);
  }
  // At most one call per poll interval (1 s), and one at either edge of the span.
  int Bound() const { return static_cast<int>(seconds_) + 2; }
  std::string Report() const {
    std::ostringstream out;
    out << "in " << seconds_ << " s (bound " << Bound() << "), every call since the span began:\n"
        << tools_.Timeline(wall_start_);
    return out.str();
  }

 private:
  const ToolCalls& tools_;
  double wall_start_;
  std::chrono::steady_clock::time_point start_;
  double seconds_ = 0;
  std::map<std::string, int> before_;
};

TEST_P(BatchGrid, AJobRunsInTheBatchSystemAndReportsItsExitCodeAndOutput) {
  ASSERT_NO_FATAL_FAILURE(StartAll("ok"));
  const auto& t = traits();
  std::string out = dir_ + "/out.txt";
  auto job = Site::ShellJob("echo \"" + t.name + " job $" + t.job_id_variable +
                            " kite job $KITE_JOB_ID\"; exit 0");
  job.stdout_file.site = out;
  std::string id = Run("1", job);
  auto end = Site::WaitFor(*client_, id, JobState::kDone, 60);
  ASSERT_TRUE(end) << end.error().ToString();
  ASSERT_EQ(end->state, JobState::kDone) << end->failure_message;
  ASSERT_TRUE(end->exit);
  EXPECT_FALSE(end->exit->signaled);
  EXPECT_EQ(end->exit->code, 0);
  std::string sid;
  ASSERT_TRUE(WaitUntil([&] { return !(sid = BatchId(id)).empty(); }, t.record_lag_s));
  EXPECT_EQ(ReadFileOr(out), t.name + " job " + sid + " kite job " + id + "\n");
  EXPECT_EQ(ReadFileOr(JobFile(id, ".kite/" + t.name + ".id")), sid + "\n");
  EXPECT_EQ(cluster().JobState(sid), t.finished_state);
  EXPECT_EQ(Calls(t.submit_tool), 1);
  EXPECT_EQ(Calls(t.lookup_tool), 0)
      << "kite-exec's record is enough for a job that ended by itself";
}

TEST_P(BatchGrid, ANonZeroExitIsReportedExactly) {
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

TEST_P(BatchGrid, CancelWhilePendingRemovesTheBatchJobBeforeItRuns) {
  ASSERT_NO_FATAL_FAILURE(StartAll("cancel-pending"));
  const auto& t = traits();
  ASSERT_NO_FATAL_FAILURE(HoldQueues());
  std::string marker = dir_ + "/ran";
  std::string id = Run("1", Site::ShellJob("touch " + marker));
  ASSERT_TRUE(WaitUntil([&] { return !BatchId(id).empty(); }, 30));
  std::string sid = BatchId(id);
  EXPECT_EQ(cluster().JobState(sid), t.pending_state);
  EXPECT_EQ(client_->Status(id)->state, JobState::kPending);
  ASSERT_NO_FATAL_FAILURE(CancelAndWaitUntilGone(id, sid));
  ASSERT_NO_FATAL_FAILURE(ReleaseQueues());
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_FALSE(FileExists(marker));
  EXPECT_EQ(Calls(t.cancel_tool), 1);
}

TEST_P(BatchGrid, CancelWhileRunningStopsTheJobAndTheBatchJobIsGone) {
  ASSERT_NO_FATAL_FAILURE(StartAll("cancel-running"));
  const auto& t = traits();
  std::string marker = dir_ + "/finished";
  std::string pids = dir_ + "/pids";
  // `&&`: Slurm signals the job's processes one at a time, and a shell whose sleep died first
  // must not reach the marker before its own signal does.
  std::string id =
      Run("1", Site::ShellJob("sleep 300 & echo $$ $! > " + pids + "; wait && touch " + marker));
  ASSERT_EQ(Site::WaitFor(*client_, id, JobState::kActive, 60)->state, JobState::kActive);
  std::string sid = BatchId(id);
  ASSERT_TRUE(
      WaitUntil([&] { return cluster().JobState(sid) == t.running_state; }, t.running_lag_s))
      << cluster().JobState(sid);
  std::string shell, sleep;
  ASSERT_TRUE(WaitUntil(
      [&] { return static_cast<bool>(std::istringstream(ReadFileOr(pids)) >> shell >> sleep); },
      20));
  ASSERT_NO_FATAL_FAILURE(CancelAndWaitUntilGone(id, sid));
  // The job's processes are gone, and it never reached its end.
  EXPECT_TRUE(WaitUntil([&] { return ProcessGone(shell); }, 20))
      << "sh " << shell << " outlived it";
  EXPECT_TRUE(WaitUntil([&] { return ProcessGone(sleep); }, 20)) << "sleep " << sleep;
  if (!t.cancel_kills_wrapper) {
    // kite-exec outlived the job and recorded the signal it died of.
    std::string control = JobFile(id, ".kite");
    ASSERT_TRUE(WaitUntil([&] { return ReadExecStatus(control).has_value(); }, 20))
        << ReadFileOr(control + "/lock");
    auto recorded = ReadExecStatus(control);
    EXPECT_TRUE((recorded->kind == ExecStatus::Kind::kSignaled && recorded->code == SIGTERM) ||
                (recorded->kind == ExecStatus::Kind::kExited && recorded->code == 128 + SIGTERM))
        << FormatExecStatus(*recorded);
  }
  EXPECT_FALSE(FileExists(marker));
}

TEST_P(BatchGrid, AJobManagerKilledWhileJobsPendAndRunRecoversThemAllAndSubmitsNothingTwice) {
  ASSERT_NO_FATAL_FAILURE(StartAll("restart"));
  const auto& t = traits();
  std::vector<std::string> ids;
  auto job = [&](int i) {
    std::string count = dir_ + "/count" + std::to_string(i);
    return Site::ShellJob("echo ran >> " + count + "; sleep 4; exit " + std::to_string(i));
  };
  for (int i = 0; i < 2; ++i) ids.push_back(Run(std::to_string(i), job(i)));
  for (const auto& id : ids) {
    ASSERT_EQ(Site::WaitFor(*client_, id, JobState::kActive, 60)->state, JobState::kActive);
  }
  ASSERT_NO_FATAL_FAILURE(HoldQueues());  // the next two wait in the queue
  for (int i = 2; i < 4; ++i) ids.push_back(Run(std::to_string(i), job(i)));
  ASSERT_TRUE(WaitUntil([&] { return Calls(t.submit_tool) == 4; }, 30)) << Calls(t.submit_tool);
  ASSERT_TRUE(WaitUntil([&] { return !BatchId(ids[3]).empty(); }, 30));
  EXPECT_EQ(cluster().JobState(BatchId(ids[2])), t.pending_state);
  pid_t before = site_->JobManagerPid();
  site_->KillJobManager();
  ASSERT_NO_FATAL_FAILURE(ReleaseQueues());
  Result<JobStatus> st = StatusAfterRestart(ids[0]);
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_NE(site_->JobManagerPid(), before);
  for (size_t i = 0; i < ids.size(); ++i) {
    auto end = Site::WaitFor(*client_, ids[i], JobState::kDone, 60);
    ASSERT_TRUE(end) << end.error().ToString();
    ASSERT_EQ(end->state, JobState::kDone) << "job " << i << ": " << end->failure_message;
    EXPECT_EQ(end->exit->code, static_cast<int>(i));
    EXPECT_EQ(Lines(dir_ + "/count" + std::to_string(i)), 1) << "job " << i;
  }
  EXPECT_EQ(Calls(t.submit_tool), 4);
  EXPECT_TRUE(WaitUntil([&] { return cluster().Jobs(JobSet::kAll).size() == 4; }, t.record_lag_s))
      << cluster().Jobs(JobSet::kAll).size();
}

TEST_P(BatchGrid, AJobManagerDeadRightAfterSubmittingFindsTheJobByNameInsteadOfSubmittingAgain) {
  ASSERT_NO_FATAL_FAILURE(StartAll("crash-submit"));
  const auto& t = traits();
  std::string point = t.name + "-crash-after-" + t.submit_tool;  // gram/fault.h
  site_->Arm(point);
  std::string count = dir_ + "/count";
  std::string id = Run("1", Site::ShellJob("echo ran >> " + count + "; sleep 2; exit 5"));
  ASSERT_TRUE(WaitUntil([&] { return site_->Fired(point); }, 30));
  ASSERT_TRUE(WaitUntil([&] { return site_->JobManagerPid() == 0; }, 10));
  std::string id_file = JobFile(id, ".kite/" + t.name + ".id");
  EXPECT_FALSE(FileExists(id_file));  // no record of the batch system's id anywhere
  Result<JobStatus> st = StatusAfterRestart(id);
  ASSERT_TRUE(st) << st.error().ToString();
  auto end = Site::WaitFor(*client_, id, JobState::kDone, 60);
  ASSERT_TRUE(end) << end.error().ToString();
  ASSERT_EQ(end->state, JobState::kDone) << end->failure_message;
  EXPECT_EQ(end->exit->code, 5);
  EXPECT_EQ(Lines(count), 1);
  EXPECT_EQ(Calls(t.submit_tool), 1);
  EXPECT_TRUE(WaitUntil([&] { return cluster().Jobs(JobSet::kAll).size() == 1; }, t.record_lag_s))
      << cluster().Jobs(JobSet::kAll).size();
  std::string sid;
  ASSERT_TRUE(WaitUntil([&] { return !(sid = BatchId(id)).empty(); }, t.record_lag_s));
  EXPECT_EQ(ReadFileOr(id_file), sid + "\n");
}

TEST_P(BatchGrid, ABatchJobRemovedBehindKitesBackIsReportedLostAndRetryable) {
  ASSERT_NO_FATAL_FAILURE(StartAll("vanish"));
  const auto& t = traits();
  std::string id = Run("1", Site::ShellJob("sleep 300"));
  ASSERT_EQ(Site::WaitFor(*client_, id, JobState::kActive, 60)->state, JobState::kActive);
  auto r = cluster().Run({t.cancel_tool, BatchId(id)});  // the real tool: not counted
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto end = Site::WaitFor(*client_, id, JobState::kFailed, 30);
  ASSERT_TRUE(end) << end.error().ToString();
  ASSERT_EQ(end->state, JobState::kFailed);
  EXPECT_EQ(end->failure, FailureCode::kBatchLost);
  EXPECT_TRUE(IsRetryable(end->failure));
  EXPECT_NE(end->failure_message.find(t.lost_words), std::string::npos) << end->failure_message;
  if (t.cancel_kills_wrapper) {
    EXPECT_GE(Calls(t.lookup_tool), 1) << "kite-exec left no record: the system's must say how";
  }
}

TEST_P(BatchGrid, WhileTheControllerIsDownJobsWaitAndNothingIsLostOrRunsTwice) {
  ASSERT_NO_FATAL_FAILURE(StartAll("controller-down"));
  const auto& t = traits();
  auto job = [&](int i, const std::string& then) {
    return Site::ShellJob("echo ran >> " + dir_ + "/count" + std::to_string(i) + "; " + then);
  };
  // One job running, one waiting in the queue, one submitted while the controller is down.
  std::vector<std::string> ids = {Run("0", job(0, "sleep 3; exit 2"))};
  ASSERT_EQ(Site::WaitFor(*client_, ids[0], JobState::kActive, 60)->state, JobState::kActive);
  ASSERT_NO_FATAL_FAILURE(HoldQueues());
  ids.push_back(Run("1", job(1, "exit 4")));
  ASSERT_TRUE(WaitUntil([&] { return !BatchId(ids[1]).empty(); }, 30));
  ASSERT_TRUE(cluster().StopController());
  ids.push_back(Run("2", job(2, "exit 7")));
  // Nothing is decided while the system cannot be asked (Slurm's tools give up after ~9 s; Grid
  // Engine's qstat -xml answers an empty job list then): the running job stays active (its end
  // cannot be confirmed), the others pending.
  std::this_thread::sleep_for(std::chrono::seconds(12));
  const JobState waiting[] = {JobState::kActive, JobState::kPending, JobState::kPending};
  for (size_t i = 0; i < ids.size(); ++i) {
    auto s = client_->Status(ids[i]);
    ASSERT_TRUE(s) << s.error().ToString();
    EXPECT_EQ(s->state, waiting[i]) << "job " << i << ": " << s->failure_message;
  }
  ASSERT_TRUE(cluster().StartController());
  ASSERT_TRUE(WaitUntil([&] { return cluster().ReleaseQueues().exit_code == 0; }, 20));
  const int codes[] = {2, 4, 7};
  for (size_t i = 0; i < ids.size(); ++i) {
    auto end = Site::WaitFor(*client_, ids[i], JobState::kDone, 90);
    ASSERT_TRUE(end) << end.error().ToString();
    ASSERT_EQ(end->state, JobState::kDone) << "job " << i << ": " << end->failure_message;
    EXPECT_EQ(end->exit->code, codes[i]) << "job " << i;
    EXPECT_EQ(Lines(dir_ + "/count" + std::to_string(i)), 1) << "job " << i;
  }
  // Submitted once each; the one submitted while the controller was down may have been tried
  // (and refused) before.
  EXPECT_EQ(tools().Count(t.submit_tool, "kite-" + ids[0]), 1);
  EXPECT_EQ(tools().Count(t.submit_tool, "kite-" + ids[1]), 1);
  EXPECT_GE(tools().Count(t.submit_tool, "kite-" + ids[2]), 1);
  EXPECT_TRUE(WaitUntil([&] { return cluster().Jobs(JobSet::kAll).size() == 3; }, t.record_lag_s))
      << cluster().Jobs(JobSet::kAll).size();
}

TEST_P(BatchGrid, PollingCostStaysFlatWithManyJobs) {
  const BatchSystem& s = GetParam();
  const int jobs = s.many_jobs;
  ASSERT_NO_FATAL_FAILURE(StartAll("many", s.many_slots));
  const auto& t = traits();
  ASSERT_NO_FATAL_FAILURE(HoldQueues());  // all of them wait while the calls are counted
  std::vector<std::string> ids;
  for (int i = 0; i < jobs; ++i) {
    ids.push_back(Run(std::to_string(i), Site::ShellJob("exit " + std::to_string(i % 7))));
    ASSERT_FALSE(ids.back().empty());
  }
  ASSERT_TRUE(WaitUntil([&] { return Calls(t.submit_tool) == jobs; }, s.many_submit_s))
      << Calls(t.submit_tool);
  // A call is logged before the tool runs: the last job may still be on its way in.
  ASSERT_TRUE(WaitUntil(
      [&] { return cluster().Jobs(JobSet::kPending).size() == static_cast<size_t>(jobs); }, 30))
      << cluster().Jobs(JobSet::kPending).size();

  // One status call per poll interval (1 s) for all the jobs, not one per job.
  CallWindow waiting(tools());
  std::this_thread::sleep_for(std::chrono::seconds(5));
  waiting.Close();
  EXPECT_GE(waiting.Calls(t.status_tool), 3)
      << "the job manager stopped polling; " << waiting.Report();
  EXPECT_LE(waiting.Calls(t.status_tool), waiting.Bound())
      << waiting.Calls(t.status_tool) << " " << t.status_tool << " calls " << waiting.Report();

  // Cancelling all but every many_run_every-th: one cancel call per poll for every cancel that
  // came in since the last, not one per job.
  CallWindow cancelling(tools());
  int cancelled = 0;
  for (int i = 0; i < jobs; ++i) {
    if (i % s.many_run_every == 0) continue;
    auto st = client_->Cancel("x" + std::to_string(i), ids[i]);
    ASSERT_TRUE(st) << st.error().ToString();
    EXPECT_EQ(st->failure, FailureCode::kCancelled);
    ++cancelled;
  }
  const int ran = jobs - cancelled;
  ASSERT_TRUE(WaitUntil(
      [&] { return cluster().Jobs(JobSet::kPending).size() == static_cast<size_t>(ran); }, 60))
      << cluster().Jobs(JobSet::kPending).size();
  cancelling.Close();
  EXPECT_LE(cancelling.Calls(t.cancel_tool), cancelled == 0 ? 0 : cancelling.Bound())
      << cancelling.Calls(t.cancel_tool) << " " << t.cancel_tool << " calls "
      << cancelling.Report();
  EXPECT_LE(cancelling.Calls(t.status_tool), cancelling.Bound())
      << cancelling.Calls(t.status_tool) << " " << t.status_tool << " calls "
      << cancelling.Report();

  // And the rest run to their exact ends once the queues take jobs, without a look-up (kite-exec's
  // records say how they ended).
  ASSERT_NO_FATAL_FAILURE(ReleaseQueues());
  CallWindow running(tools());
  for (int i = 0; i < jobs; i += s.many_run_every) {
    auto end = Site::WaitFor(*client_, ids[i], JobState::kDone, 120);
    ASSERT_TRUE(end) << end.error().ToString();
    ASSERT_EQ(end->state, JobState::kDone) << "job " << i << ": " << end->failure_message;
    EXPECT_EQ(end->exit->code, i % 7);
  }
  running.Close();
  std::fprintf(stderr, "%d jobs ran in %.1f s with %d %s calls\n", ran, running.seconds(),
               running.Calls(t.status_tool), t.status_tool.c_str());
  EXPECT_LE(running.Calls(t.status_tool), running.Bound())
      << running.Calls(t.status_tool) << " " << t.status_tool << " calls " << running.Report();
  EXPECT_EQ(Calls(t.submit_tool), jobs);
  EXPECT_EQ(Calls(t.lookup_tool), 0);
  if (cancelled == 0) {
    EXPECT_EQ(Calls(t.cancel_tool), 0) << "nothing was cancelled";
  }
  EXPECT_TRUE(WaitUntil(
      [&] { return cluster().Jobs(JobSet::kCompleted).size() == static_cast<size_t>(ran); },
      t.record_lag_s))
      << cluster().Jobs(JobSet::kCompleted).size();
  // A system that lists cancelled jobs lists every one (Grid Engine lists none).
  EXPECT_EQ(cluster().Jobs(JobSet::kCancelled).size(),
            static_cast<size_t>(t.cancelled_state.empty() ? 0 : cancelled));
}

// The gatekeeper's `info` (docs/protocol.md, "Site information"): the batch system's own
// account of its CPUs and queue, as the broker reads it. A drained node (Slurm) or a disabled
// queue (Grid Engine) offers no free CPU, and a job waiting there is counted.
TEST_P(BatchGrid, TheSiteAdSaysWhatTheSystemOffersAndHowBusyItIs) {
  ASSERT_NO_FATAL_FAILURE(StartAll("info"));
  auto ad = [&]() -> classad::ClassAd {
    auto text = client_->Info();
    EXPECT_TRUE(text) << text.error().ToString();
    if (!text) return {};
    auto parsed = classad::ParseNewAd(*text);
    EXPECT_TRUE(parsed) << *text;
    return parsed ? *parsed : classad::ClassAd();
  };
  classad::ClassAd idle = ad();
  EXPECT_EQ(idle.EvaluateString("BatchSystem"), GetParam().name);
  // Slurm: the node's 8 CPUs. Grid Engine: the slots of its queues (all.q and other.q, 8 each
  // on the one host here: it would run 16 jobs at once).
  EXPECT_EQ(idle.EvaluateInt("TotalCpus"), GetParam().name == "sge" ? 16 : 8);
  EXPECT_EQ(idle.EvaluateInt("FreeCpus"), idle.EvaluateInt("TotalCpus"));
  EXPECT_EQ(idle.EvaluateInt("PendingJobs"), 0);
  EXPECT_GT(idle.EvaluateInt("Memory").value_or(0), 0);
  EXPECT_GT(idle.EvaluateInt("MaxWallTime").value_or(0), 0);
  EXPECT_NE(idle.Lookup("Queues"), nullptr);
  HoldQueues();
  std::string id = Run("1", Site::ShellJob("exit 0"));
  // The job manager asks the system at most every 5 s.
  classad::ClassAd busy;
  EXPECT_TRUE(WaitUntil(
      [&] {
        busy = ad();
        return busy.EvaluateInt("PendingJobs").value_or(0) >= 1 &&
               busy.EvaluateInt("FreeCpus").value_or(-1) == 0;
      },
      30))
      << classad::ToOldText(busy);
  ReleaseQueues();
  auto end = Site::WaitFor(*client_, id, JobState::kDone, 60);
  ASSERT_TRUE(end) << end.error().ToString();
}

// Slurm takes a thousand jobs in a few minutes; Grid Engine's qsub is slower, so a hundred.
std::string SystemName(const ::testing::TestParamInfo<BatchSystem>& param) {
  return param.param.name;
}

INSTANTIATE_TEST_SUITE_P(, BatchGrid,
                         ::testing::Values(BatchSystem{.name = "slurm",
                                                       .many_jobs = 1000,
                                                       .many_slots = 16,
                                                       .many_submit_s = 300,
                                                       .many_run_every = 50},
                                           BatchSystem{.name = "sge",
                                                       .many_jobs = 100,
                                                       .many_slots = 32,
                                                       .many_submit_s = 120,
                                                       .many_run_every = 1}),
                         SystemName);

}  // namespace
}  // namespace kite::gram::testing
