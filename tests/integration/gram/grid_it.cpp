// The grid path at a site, end to end through real processes: client -> kite-gatekeeper ->
// kite-jobmanager -> fork -> kite-exec. Two-phase commit, cancel, the commit timeout, job
// manager crashes, callbacks, delegation refresh and running under the mapped account.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <mutex>
#include <thread>

#include "common/exec_status.h"
#include "common/files.h"
#include "credentials/delegation.h"
#include "gram/callback_server.h"
#include "site.h"
#include "tests/fixtures/kite_env.h"

namespace kite::gram::testing {
namespace {

using kite::testing::ReadFileOr;
using kite::testing::WaitUntil;

int Lines(const std::string& path) {
  std::string s = ReadFileOr(path);
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

TEST(GramGrid, SubmitCommitAndStatusUntilDoneOverOneConnection) {
  Site site("gram-basic");
  auto c = site.MakeClient();
  auto account = c->Ping();
  ASSERT_TRUE(account) << account.error().ToString();
  EXPECT_EQ(*account, "root");
  std::string out = site.dir() + "/out.txt";
  auto job = Site::ShellJob("echo hello from $KITE_JOB_ID; exit 4");
  job.stdout_file.site = out;
  auto sub = c->Submit("submit-1", job);
  ASSERT_TRUE(sub) << sub.error().ToString();
  EXPECT_EQ(sub->state, JobState::kPendingCommit);
  EXPECT_EQ(sub->contact,
            "https://127.0.0.1:" + std::to_string(site.port()) + "/jobs/" + sub->job_id);
  // Nothing runs before the commit.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(c->Status(sub->contact)->state, JobState::kPendingCommit);
  EXPECT_FALSE(FileExists(out));
  ASSERT_TRUE(c->Commit("commit-1", sub->contact));
  auto end = Site::WaitFor(*c, sub->job_id, JobState::kDone);
  ASSERT_TRUE(end) << end.error().ToString();
  EXPECT_EQ(end->state, JobState::kDone);
  ASSERT_TRUE(end->exit);
  EXPECT_EQ(end->exit->code, 4);
  EXPECT_EQ(ReadFileOr(out), "hello from " + sub->job_id + "\n");
  ASSERT_TRUE(c->CommitEnd("end-1", sub->job_id));
  auto gone = c->Status(sub->job_id);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(c->connections_opened(), 1u);  // one TLS handshake for the whole conversation
}

TEST(GramGrid, AnUncommittedJobIsForgottenAfterTheTimeoutAndNeverRuns) {
  Site site("gram-timeout", {.commit_timeout = 1});
  auto c = site.MakeClient();
  std::string count = site.dir() + "/count";
  auto sub = c->Submit("s", Site::ShellJob("echo ran >> " + count));
  ASSERT_TRUE(sub);
  ASSERT_TRUE(WaitUntil([&] { return !c->Status(sub->job_id); }, 10));
  EXPECT_EQ(c->Status(sub->job_id).error().code(), ErrorCode::kNotFound);
  auto late = c->Commit("c", sub->job_id);
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code(), ErrorCode::kNotFound);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(FileExists(count));
}

TEST(GramGrid, CancelOfARunningJob) {
  Site site("gram-cancel");
  auto c = site.MakeClient();
  std::string marker = site.dir() + "/finished";
  auto sub = c->Submit("s", Site::ShellJob("sleep 30; touch " + marker));
  ASSERT_TRUE(sub);
  ASSERT_TRUE(c->Commit("c", sub->job_id));
  ASSERT_EQ(Site::WaitFor(*c, sub->job_id, JobState::kActive)->state, JobState::kActive);
  auto st = c->Cancel("x", sub->job_id);
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ(st->state, JobState::kFailed);
  EXPECT_EQ(st->failure, FailureCode::kCancelled);
  // The job is really gone: its wrapper records the signal and the marker never appears.
  std::string control = site.account_dir() + "/jobs/" + sub->job_id + "/.kite";
  ASSERT_TRUE(WaitUntil([&] { return ReadExecStatus(control).has_value(); }, 10));
  EXPECT_EQ(ReadExecStatus(control)->kind, ExecStatus::Kind::kSignaled);
  EXPECT_FALSE(FileExists(marker));
}

TEST(GramGrid, JobManagerKilledWhileJobsRunIsRestartedAndRunsNothingTwice) {
  Site site("gram-crash");
  auto c = site.MakeClient();
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    std::string count = site.dir() + "/count" + std::to_string(i);
    auto sub = c->Submit(
        "s" + std::to_string(i),
        Site::ShellJob("echo ran >> " + count + "; sleep 1.5; exit " + std::to_string(i)));
    ASSERT_TRUE(sub);
    ASSERT_TRUE(c->Commit("c" + std::to_string(i), sub->job_id));
    ids.push_back(sub->job_id);
  }
  // One more, submitted but not yet committed when the job manager dies.
  auto late = c->Submit("s-late", Site::ShellJob("echo ran >> " + site.dir() + "/count-late"));
  ASSERT_TRUE(late);
  for (const auto& id : ids)
    ASSERT_EQ(Site::WaitFor(*c, id, JobState::kActive)->state, JobState::kActive);
  pid_t before = site.JobManagerPid();
  site.KillJobManager();
  // The next request restarts it (the client may see the lost connection once and resend).
  Result<JobStatus> st = c->Status(ids[0]);
  if (!st) st = c->Status(ids[0]);
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_NE(site.JobManagerPid(), before);
  ASSERT_TRUE(c->Commit("c-late", late->job_id));
  for (size_t i = 0; i < ids.size(); ++i) {
    auto end = Site::WaitFor(*c, ids[i], JobState::kDone);
    ASSERT_TRUE(end);
    EXPECT_EQ(end->state, JobState::kDone);
    EXPECT_EQ(end->exit->code, static_cast<int>(i));
    EXPECT_EQ(Lines(site.dir() + "/count" + std::to_string(i)), 1) << "job " << i;
  }
  EXPECT_EQ(Site::WaitFor(*c, late->job_id, JobState::kDone)->state, JobState::kDone);
  EXPECT_EQ(Lines(site.dir() + "/count-late"), 1);
}

TEST(GramGrid, CallbacksCarryStateChangesToTheClient) {
  Site site("gram-callback");
  auto c = site.MakeClient();
  std::mutex mu;
  std::vector<JobStatus> seen;
  CallbackServerOptions co;
  co.credential = site.proxy();
  co.verifier = site.verifier();
  co.accepted_identity = site.user_dn();
  co.handler = [&](const std::string&, const JobStatus& s) {
    std::lock_guard lock(mu);
    seen.push_back(s);
  };
  auto server = CallbackServer::Start(co);
  ASSERT_TRUE(server) << server.error().ToString();
  auto d = c->Delegate("deleg-1");
  ASSERT_TRUE(d) << d.error().ToString();
  auto job = Site::ShellJob("exit 0");
  job.delegation_id = d->id;
  job.callback_url = (*server)->Url("/callbacks/job-1");
  auto sub = c->Submit("s", job);
  ASSERT_TRUE(sub) << sub.error().ToString();
  ASSERT_TRUE(c->Commit("c", sub->job_id));
  ASSERT_TRUE(WaitUntil(
      [&] {
        std::lock_guard lock(mu);
        return !seen.empty() && seen.back().state == JobState::kDone;
      },
      10));
  std::lock_guard lock(mu);
  EXPECT_EQ(seen.back().job_id, sub->job_id);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i].seq, seen[i - 1].seq);
}

TEST(GramGrid, RedelegationRefreshesInPlaceUnderTheSameId) {
  Site site("gram-deleg");
  auto c = site.MakeClient();
  auto first = c->Delegate("d1", "", std::chrono::hours(1));
  ASSERT_TRUE(first) << first.error().ToString();
  std::string path = site.account_dir() + "/creds/" + first->id + ".pem";
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string before = ReadFileOr(path);
  auto again = c->Delegate("d2", first->id, std::chrono::hours(2));
  ASSERT_TRUE(again) << again.error().ToString();
  EXPECT_EQ(again->id, first->id);
  EXPECT_GT(again->not_after, first->not_after);
  std::string refreshed = ReadFileOr(path);
  EXPECT_NE(refreshed, before);
  // A repeat of the first delegation's request ids returns what it returned, changing nothing.
  auto repeat = c->Delegate("d1", "", std::chrono::hours(1));
  ASSERT_TRUE(repeat) << repeat.error().ToString();
  EXPECT_EQ(repeat->id, first->id);
  EXPECT_EQ(ReadFileOr(path), refreshed);
}

// As GRAM does: a job with a delegation finds its delegated proxy in X509_USER_PROXY (a glide-in
// dials its agent with it) and the site's CAs in X509_CERT_DIR, unless it sets them itself.
TEST(GramGrid, AForkJobSeesItsDelegatedProxyInX509UserProxy) {
  Site site("gram-x509");
  auto c = site.MakeClient();
  auto d = c->Delegate("d1");
  ASSERT_TRUE(d) << d.error().ToString();
  std::string proxy = site.account_dir() + "/creds/" + d->id + ".pem";
  auto run = [&](const std::string& name, JobDescription job) -> std::string {
    job.stdout_file.site = site.dir() + "/" + name + ".out";
    auto sub = c->Submit("s-" + name, job);
    EXPECT_TRUE(sub) << sub.error().ToString();
    if (!sub) return "";
    EXPECT_TRUE(c->Commit("c-" + name, sub->job_id));
    auto end = Site::WaitFor(*c, sub->job_id, JobState::kDone);
    EXPECT_TRUE(end && end->state == JobState::kDone) << (end ? end->failure_message : "");
    return sub->job_id;
  };
  auto with = Site::ShellJob(
      "echo \"${X509_USER_PROXY-unset}\"; cat \"$X509_USER_PROXY\" > proxy.copy; "
      "echo \"${X509_CERT_DIR-unset}\"");
  with.delegation_id = d->id;
  std::string id = run("with", with);
  // The site's trusted CAs come along: a glide-in verifies its agent with them.
  EXPECT_EQ(ReadFileOr(site.dir() + "/with.out"), proxy + "\n" + site.ca().trusted_dir() + "\n");
  std::string copy = ReadFileOr(site.account_dir() + "/jobs/" + id + "/proxy.copy");
  EXPECT_FALSE(copy.empty());
  EXPECT_EQ(copy, ReadFileOr(proxy));  // the delegated proxy itself, readable by the job
  auto own = Site::ShellJob("echo \"${X509_USER_PROXY-unset}\"");
  own.delegation_id = d->id;
  own.environment = {{"X509_USER_PROXY", "/home/jane/my.pem"}};
  run("own", own);
  EXPECT_EQ(ReadFileOr(site.dir() + "/own.out"), "/home/jane/my.pem\n");
  run("none", Site::ShellJob("echo \"${X509_USER_PROXY-unset}\""));
  EXPECT_EQ(ReadFileOr(site.dir() + "/none.out"), "unset\n");
}

TEST(GramGrid, AsRootTheJobManagerAndJobsRunUnderTheMappedAccount) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch accounts";
  Site site("gram-nobody", {.account = "nobody"});
  auto c = site.MakeClient();
  auto sub = c->Submit("s", Site::ShellJob("id -u > ids; id -g >> ids"));
  ASSERT_TRUE(sub) << sub.error().ToString() << ReadFileOr(site.dir() + "/gatekeeper.log");
  ASSERT_TRUE(c->Commit("c", sub->job_id));
  auto end = Site::WaitFor(*c, sub->job_id, JobState::kDone);
  ASSERT_TRUE(end);
  ASSERT_EQ(end->state, JobState::kDone) << end->failure_message;
  std::string ids = ReadFileOr(site.account_dir() + "/jobs/" + sub->job_id + "/ids");
  EXPECT_EQ(ids, "65534\n65534\n");
  struct stat st {};
  ASSERT_EQ(::stat((site.account_dir() + "/jobs.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
}

}  // namespace
}  // namespace kite::gram::testing
