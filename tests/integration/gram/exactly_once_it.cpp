// Exactly-once execution when connections drop around the two-phase commit: the client resends
// with the same request id and every job runs exactly once (counted with a side-effect file).
#include <gtest/gtest.h>

#include <thread>

#include "common/files.h"
#include "site.h"
#include "tests/fixtures/kite_env.h"

namespace kite::gram::testing {
namespace {

using kite::testing::ReadFileOr;

int Lines(const std::string& path) {
  std::string s = ReadFileOr(path);
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

// What a gridmanager does: resend with the same request id until an answer comes.
template <typename F>
auto Retry(F call) {
  auto r = call();
  for (int i = 0; i < 5 && !r && r.error().code() == ErrorCode::kUnavailable; ++i) r = call();
  return r;
}

class ExactlyOnce : public ::testing::Test {
 protected:
  // Submits a counting job, with `fault` armed for the submit or the commit, and checks the job
  // ran exactly once and the fault really happened.
  void Run(const std::string& submit_fault, const std::string& commit_fault) {
    auto c = site_.MakeClient();
    std::string count = site_.dir() + "/count";
    if (!submit_fault.empty()) site_.Arm(submit_fault);
    auto sub = Retry([&] { return c->Submit("submit-x", Site::ShellJob("echo ran >> " + count)); });
    ASSERT_TRUE(sub) << sub.error().ToString();
    if (!submit_fault.empty()) {
      EXPECT_TRUE(site_.Fired(submit_fault));
    }
    // A late duplicate of the submit (the first one's lost reply, resent) creates nothing, and
    // the client is told the job was made for an earlier send.
    bool existing = false;
    auto dup = c->Submit("submit-x", Site::ShellJob("echo ran >> " + count), &existing);
    ASSERT_TRUE(dup);
    EXPECT_EQ(dup->job_id, sub->job_id);
    EXPECT_TRUE(existing);
    if (!commit_fault.empty()) site_.Arm(commit_fault);
    auto com = Retry([&] { return c->Commit("commit-x", sub->job_id); });
    ASSERT_TRUE(com) << com.error().ToString();
    if (!commit_fault.empty()) {
      EXPECT_TRUE(site_.Fired(commit_fault));
    }
    ASSERT_TRUE(c->Commit("commit-x", sub->job_id));  // and a late duplicate commit
    auto end = Site::WaitFor(*c, sub->job_id, JobState::kDone);
    ASSERT_TRUE(end);
    EXPECT_EQ(end->state, JobState::kDone);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(Lines(count), 1);
    auto ping = c->Ping();
    EXPECT_TRUE(ping) << "the site keeps serving";
  }

  Site site_{"gram-once"};
};

TEST_F(ExactlyOnce, ConnectionDropsBeforeTheGatekeeperReadsTheSubmit) {
  Run("gatekeeper-drop-before-forward", "");
}

TEST_F(ExactlyOnce, ConnectionDropsAfterTheJobManagerStoredTheSubmit) {
  Run("jobmanager-drop-after-store-submit", "");
}

TEST_F(ExactlyOnce, ConnectionDropsBeforeTheCommitIsRead) {
  Run("", "gatekeeper-drop-before-forward");
}

TEST_F(ExactlyOnce, ConnectionDropsAfterTheCommitWasStored) {
  Run("", "jobmanager-drop-after-store-commit");
}

TEST_F(ExactlyOnce, ManyJobsWithDropsEverywhereRunOnceEach) {
  auto c = site_.MakeClient();
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) {
    std::string n = std::to_string(i);
    if (i % 3 == 0) site_.Arm("jobmanager-drop-after-store-submit");
    if (i % 3 == 1) site_.Arm("gatekeeper-drop-before-forward");
    auto sub = Retry([&] {
      return c->Submit("s" + n, Site::ShellJob("echo ran >> " + site_.dir() + "/count" + n));
    });
    ASSERT_TRUE(sub) << sub.error().ToString();
    if (i % 3 == 2) site_.Arm("jobmanager-drop-after-store-commit");
    ASSERT_TRUE(Retry([&] { return c->Commit("c" + n, sub->job_id); }));
    ids.push_back(sub->job_id);
  }
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Site::WaitFor(*c, ids[i], JobState::kDone)->state, JobState::kDone);
    EXPECT_EQ(Lines(site_.dir() + "/count" + std::to_string(i)), 1) << i;
  }
}

}  // namespace
}  // namespace kite::gram::testing
