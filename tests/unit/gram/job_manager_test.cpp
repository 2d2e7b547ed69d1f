// The job manager engine driven in-process through Handle(): idempotency by request id, two-phase
// commit, the commit timeout, ownership, restart, and outcomes of real fork jobs.
#include "gram/job_manager.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "common/exec_status.h"
#include "common/files.h"
#include "credentials/ca.h"
#include "test_util.h"

namespace kite::gram {
namespace {

constexpr char kJane[] = "/O=Grid/OU=Kite/CN=Jane";

class JobManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto ca = credentials::TestCa::Init(dir_ / "ca", {.key = {credentials::KeyAlgorithm::kEcP256}});
    ASSERT_TRUE(ca) << ca.error().ToString();
    ca_dir_ = ca->trusted_dir();
    Open();
  }

  void Open(int commit_timeout = 600) {
    jm_.reset();
    JobManagerOptions o;
    o.state_dir = dir_ / "state";
    o.ca_dir = ca_dir_;
    o.exec_path = testing::ExecPath();
    o.account = "jane";
    o.commit_timeout = std::chrono::seconds(commit_timeout);
    o.poll_interval = std::chrono::milliseconds(10);
    auto jm = JobManager::Open(io_, o);
    ASSERT_TRUE(jm) << jm.error().ToString();
    jm_ = std::move(*jm);
    jm_->Start();
  }

  Response Call(const std::string& method, const std::string& target, const std::string& body,
                const std::string& who = kJane) {
    return jm_->HandleNow({method, target, who, "https://site:1", body});
  }

  // `status`: 201 for a job made now, 200 for the one an earlier send of the id made.
  std::string Submit(const std::string& request_id, const std::string& script,
                     unsigned status = 201) {
    SubmitRequest r;
    r.request_id = request_id;
    r.job.executable.site = "/bin/sh";
    r.job.arguments = {"-c", script};
    auto res = Call("POST", "/jobs", ToJson(r));
    EXPECT_EQ(res.status, status) << res.body;
    auto s = ParseJobStatus(res.body);
    EXPECT_TRUE(s) << res.body;
    return s ? s->job_id : "";
  }

  Result<JobStatus> Status(const std::string& id, const std::string& who = kJane) {
    auto res = Call("GET", "/jobs/" + id, "", who);
    if (res.status != 200) return Fail(ErrorCodeForHttp(res.status), res.body);
    return ParseJobStatus(res.body);
  }

  // Runs the event loop until the job reaches `state` or 10 s pass.
  bool RunUntil(const std::string& id, JobState state) {
    for (int i = 0; i < 1000; ++i) {
      io_.run_for(std::chrono::milliseconds(10));
      auto s = Status(id);
      if (s && s->state == state) return true;
    }
    return false;
  }

  testing::TempDir dir_;
  std::string ca_dir_;
  boost::asio::io_context io_;
  std::unique_ptr<JobManager> jm_;
};

TEST_F(JobManagerTest, ARepeatedSubmitReturnsTheSameJobAndCreatesNothing) {
  std::string a = Submit("req-1", "true");
  std::string b = Submit("req-1", "true", 200);  // 200: the client learns it was made before
  EXPECT_EQ(a, b);
  EXPECT_EQ(jm_->job_count(), 1u);
  EXPECT_EQ(Status(a)->state, JobState::kPendingCommit);
}

TEST_F(JobManagerTest, ARequestIdReusedForAnotherOperationIsRefused) {
  std::string a = Submit("req-1", "true");
  auto res = Call("POST", "/jobs/" + a + "/commit", R"({"request_id":"req-1"})");
  EXPECT_EQ(res.status, 409u) << res.body;
}

TEST_F(JobManagerTest, CommittedJobRunsOnceAndEndsDoneWithItsExitCode) {
  std::string count = dir_ / "count";
  std::string id = Submit("s", "echo ran >> " + count + "; exit 3");
  EXPECT_EQ(Call("POST", "/jobs/" + id + "/commit", R"({"request_id":"c"})").status, 200u);
  EXPECT_EQ(Call("POST", "/jobs/" + id + "/commit", R"({"request_id":"c"})").status, 200u);
  ASSERT_TRUE(RunUntil(id, JobState::kDone));
  auto s = Status(id);
  ASSERT_TRUE(s->exit);
  EXPECT_EQ(s->exit->code, 3);
  EXPECT_EQ(ReadFile(count).value_or(""), "ran\n");
  EXPECT_EQ(Call("POST", "/jobs/" + id + "/commit-end", R"({"request_id":"e"})").status, 200u);
  EXPECT_EQ(Status(id).error().code(), ErrorCode::kNotFound);
  // A repeat of the commit-end is answered from the table, not refused.
  EXPECT_EQ(Call("POST", "/jobs/" + id + "/commit-end", R"({"request_id":"e"})").status, 200u);
}

TEST_F(JobManagerTest, AnUncommittedJobIsForgottenAfterTheTimeoutAndNeverRuns) {
  Open(1);
  std::string count = dir_ / "count";
  std::string id = Submit("s", "echo ran >> " + count);
  for (int i = 0; i < 200 && Status(id); ++i) io_.run_for(std::chrono::milliseconds(10));
  EXPECT_EQ(Status(id).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(Call("POST", "/jobs/" + id + "/commit", R"({"request_id":"c"})").status, 404u);
  io_.run_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(FileExists(count));
}

TEST_F(JobManagerTest, AnotherIdentitySeesNoneOfJanesJobs) {
  std::string id = Submit("s", "true");
  EXPECT_EQ(Status(id, "/O=Grid/CN=Mallory").error().code(), ErrorCode::kNotFound);
  auto res = Call("POST", "/jobs/" + id + "/cancel", R"({"request_id":"x"})", "/O=Grid/CN=Mallory");
  EXPECT_EQ(res.status, 404u);
  EXPECT_EQ(Call("GET", "/ping", "", "").status, 403u);  // no identity at all
}

TEST_F(JobManagerTest, JobsSurviveARestartAndRunAfterIt) {
  std::string id = Submit("s", "exit 0");
  Open();  // a new engine on the same state directory
  EXPECT_EQ(Status(id)->state, JobState::kPendingCommit);
  EXPECT_EQ(Submit("s", "exit 0", 200), id);  // request ids survive too
  Call("POST", "/jobs/" + id + "/commit", R"({"request_id":"c"})");
  EXPECT_TRUE(RunUntil(id, JobState::kDone));
}

TEST_F(JobManagerTest, AMissingExecutableFailsForGood) {
  SubmitRequest r;
  r.request_id = "s";
  r.job.executable.site = "/no/such/program";
  auto res = Call("POST", "/jobs", ToJson(r));
  std::string id = ParseJobStatus(res.body)->job_id;
  Call("POST", "/jobs/" + id + "/commit", R"({"request_id":"c"})");
  ASSERT_TRUE(RunUntil(id, JobState::kFailed));
  auto s = Status(id);
  EXPECT_EQ(s->failure, FailureCode::kBadExecutable);
  EXPECT_FALSE(IsRetryable(s->failure));
  EXPECT_NE(s->failure_message.find("/no/such/program"), std::string::npos);
}

TEST_F(JobManagerTest, CancelStopsARunningJob) {
  std::string id = Submit("s", "sleep 30");
  Call("POST", "/jobs/" + id + "/commit", R"({"request_id":"c"})");
  ASSERT_TRUE(RunUntil(id, JobState::kActive));
  auto res = Call("POST", "/jobs/" + id + "/cancel", R"({"request_id":"x"})");
  EXPECT_EQ(res.status, 200u);
  auto s = Status(id);
  EXPECT_EQ(s->state, JobState::kFailed);
  EXPECT_EQ(s->failure, FailureCode::kCancelled);
  // The job's wrapper records the SIGTERM it died of.
  std::string ctl = dir_ / ("state/jobs/" + id + "/.kite");
  for (int i = 0; i < 500 && !ReadExecStatus(ctl); ++i) {
    io_.run_for(std::chrono::milliseconds(10));
  }
  auto recorded = ReadExecStatus(ctl);
  ASSERT_TRUE(recorded) << ReadFile(ctl + "/lock").value_or("");
  EXPECT_EQ(recorded->kind, ExecStatus::Kind::kSignaled);
}

// Signals move a job to its client's newest servers; one from an earlier run that the site
// handles late (its sender died with it in flight) leaves the job where the newer run put it,
// also after a restart of the job manager.
TEST_F(JobManagerTest, ALateSignalFromAnEarlierRunDoesNotMoveTheJobBack) {
  std::string id = Submit("s", "sleep 30");
  Call("POST", "/jobs/" + id + "/commit", R"({"request_id":"c"})");
  ASSERT_TRUE(RunUntil(id, JobState::kActive));
  std::string url_file = dir_ / ("state/jobs/" + id + "/.kite/gass_url");
  auto signal = [&](const std::string& rid, int64_t run, const std::string& url) {
    SignalRequest r{.request_id = rid, .gass_url = url, .run = run};
    return Call("POST", "/jobs/" + id + "/signal", ToJson(r)).status;
  };
  EXPECT_EQ(signal("sig-3", 3000, "https://new:3/jobs/1"), 200u);
  EXPECT_EQ(signal("sig-2", 2000, "https://old:2/jobs/1"), 200u);
  EXPECT_EQ(ReadFile(url_file).value_or(""), "https://new:3/jobs/1\n");
  Open();
  EXPECT_EQ(signal("sig-2b", 2500, "https://old:2/jobs/1"), 200u);
  EXPECT_EQ(ReadFile(url_file).value_or(""), "https://new:3/jobs/1\n");
  EXPECT_EQ(signal("sig-4", 4000, "https://newer:4/jobs/1"), 200u);
  EXPECT_EQ(ReadFile(url_file).value_or(""), "https://newer:4/jobs/1\n");
  Call("POST", "/jobs/" + id + "/cancel", R"({"request_id":"x"})");
}

TEST_F(JobManagerTest, MalformedRequestsChangeNothing) {
  EXPECT_EQ(Call("POST", "/jobs", "{nope").status, 400u);
  EXPECT_EQ(Call("POST", "/jobs", R"({"request_id":"r","job":{}})").status, 400u);
  EXPECT_EQ(Call("DELETE", "/jobs", "").status, 404u);
  EXPECT_EQ(jm_->job_count(), 0u);
}

}  // namespace
}  // namespace kite::gram
