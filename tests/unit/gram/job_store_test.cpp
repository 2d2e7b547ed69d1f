// The job manager's tables: jobs survive a reopen, request ids find their stored replies.
#include "gram/job_store.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace kite::gram {
namespace {

JobRecord SampleJob() {
  JobRecord j;
  j.id = "0123456789abcdef";
  j.owner = "/O=Grid/CN=Jane";
  j.state = JobState::kActive;
  j.seq = 4;
  j.desc.executable.site = "/bin/echo";
  j.desc.arguments = {"hi"};
  j.batch_id = "/x#12";
  j.exit = ExitInfo{false, 3};
  j.stdout_offset = 99;
  j.commit_deadline = 5;
  j.signal_run = 1764000000123;
  return j;
}

TEST(JobStore, JobsSurviveAReopen) {
  testing::TempDir dir;
  {
    auto s = JobStore::Open(dir / "jobs.db");
    ASSERT_TRUE(s) << s.error().ToString();
    ASSERT_TRUE((*s)->PutJob(SampleJob()));
  }
  auto s = JobStore::Open(dir / "jobs.db");
  ASSERT_TRUE(s);
  auto jobs = (*s)->LoadJobs();
  ASSERT_TRUE(jobs);
  ASSERT_EQ(jobs->size(), 1u);
  const auto& j = jobs->front();
  EXPECT_EQ(j.state, JobState::kActive);
  EXPECT_EQ(j.desc, SampleJob().desc);
  EXPECT_EQ(j.batch_id, "/x#12");
  EXPECT_EQ(j.exit, (ExitInfo{false, 3}));
  EXPECT_EQ(j.stdout_offset, 99);
  EXPECT_EQ(j.signal_run, 1764000000123);
}

// A table written before signals carried their run (schema 1) opens with every job's run 0, so
// the first signal of any run applies.
TEST(JobStore, ATableFromBeforeSignalRunsOpensWithRunZero) {
  testing::TempDir dir;
  {
    auto db = store::Db::Open(dir / "jobs.db");
    ASSERT_TRUE(db) << db.error().ToString();
    ASSERT_TRUE((*db)->Exec(
        "CREATE TABLE jobs (id TEXT PRIMARY KEY, owner TEXT NOT NULL, state INTEGER NOT NULL,"
        "  seq INTEGER NOT NULL, description TEXT NOT NULL, gass_url TEXT NOT NULL,"
        "  delegation_id TEXT NOT NULL, batch_id TEXT NOT NULL, failure INTEGER NOT NULL,"
        "  failure_message TEXT NOT NULL, exit_signaled INTEGER, exit_code INTEGER,"
        "  stdout_offset INTEGER NOT NULL, stderr_offset INTEGER NOT NULL, created REAL NOT NULL,"
        "  commit_deadline REAL NOT NULL, cancel_requested INTEGER NOT NULL) WITHOUT ROWID;"
        "CREATE TABLE requests (owner TEXT NOT NULL, request_id TEXT NOT NULL, op TEXT NOT NULL,"
        "  target TEXT NOT NULL, status INTEGER NOT NULL, body TEXT NOT NULL,"
        "  created REAL NOT NULL, PRIMARY KEY (owner, request_id)) WITHOUT ROWID;"
        "CREATE INDEX requests_target ON requests (target);"
        "CREATE TABLE delegations (id TEXT PRIMARY KEY, owner TEXT NOT NULL,"
        "  not_after REAL NOT NULL) WITHOUT ROWID;"
        "INSERT INTO jobs VALUES ('j1', 'o', 2, 1, '{\"executable\":{\"site\":\"/bin/true\"}}',"
        "  '', '', '', 0, '', NULL, NULL, 0, 0, 0, 0, 0);"
        "PRAGMA user_version = 1;"));
  }
  auto s = JobStore::Open(dir / "jobs.db");
  ASSERT_TRUE(s) << s.error().ToString();
  auto jobs = (*s)->LoadJobs();
  ASSERT_TRUE(jobs) << jobs.error().ToString();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ(jobs->front().signal_run, 0);
}

TEST(JobStore, ARequestIdFindsItsReplyPerOwner) {
  testing::TempDir dir;
  auto s = JobStore::Open(dir / "jobs.db");
  ASSERT_TRUE(s);
  StoredReply r{"submit", "0123456789abcdef", 201, "{\"x\":1}"};
  ASSERT_TRUE((*s)->PutRequest("/CN=a", "req-1", r, 100));
  auto found = (*s)->FindRequest("/CN=a", "req-1");
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->body, "{\"x\":1}");
  EXPECT_EQ((*found)->status, 201u);
  auto other = (*s)->FindRequest("/CN=b", "req-1");  // another client's ids are its own
  ASSERT_TRUE(other);
  EXPECT_FALSE(*other);
}

TEST(JobStore, ForgettingAJobDropsItsRequestIdsAndPruneKeepsLiveOnes) {
  testing::TempDir dir;
  auto s = JobStore::Open(dir / "jobs.db");
  ASSERT_TRUE(s);
  auto& st = **s;
  JobRecord j = SampleJob();
  ASSERT_TRUE(st.PutJob(j));
  ASSERT_TRUE(st.PutRequest("/CN=a", "submit-1", {"submit", j.id, 201, "{}"}, 1));
  ASSERT_TRUE(st.PutRequest("/CN=a", "other", {"delegate", "d", 200, "{}"}, 1));
  ASSERT_TRUE(st.PruneRequests(10));  // "other" names no job: pruned; submit-1's job lives
  EXPECT_TRUE(*st.FindRequest("/CN=a", "submit-1"));
  EXPECT_FALSE(*st.FindRequest("/CN=a", "other"));
  ASSERT_TRUE(st.DeleteJob(j.id));
  EXPECT_FALSE(*st.FindRequest("/CN=a", "submit-1"));
  EXPECT_TRUE(st.LoadJobs()->empty());
}

}  // namespace
}  // namespace kite::gram
