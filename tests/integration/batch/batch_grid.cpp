// BatchGridTest: the batch suites' set-up, helpers and post-mortem.
#include "tests/integration/batch/batch_grid.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/files.h"
#include "tests/fixtures/kite_env.h"

namespace kite::gram::testing {
namespace {

using kite::testing::ReadFileOr;

// How much of the job manager's log, and how many tool calls, a failure shows.
constexpr size_t kLogTail = 4000;
constexpr size_t kCallsTail = 40;

}  // namespace

void BatchGridTest::StartAll(const std::string& batch, const std::string& tag, int slots,
                             const std::vector<std::string>& extra_env) {
  dir_ = kite::testing::MakeTempDir(batch + "-" + tag);
  cluster_ = kite::testing::StartBatchCluster(batch, dir_ + "/cluster", slots);
  ASSERT_TRUE(cluster_) << "no fixture for batch system " << batch;
  ASSERT_TRUE(cluster_->ok()) << cluster_->error();
  const auto& t = cluster_->traits();
  tools_ = std::make_unique<kite::testing::ToolCalls>(
      dir_ + "/bin",
      std::vector<std::string>{t.submit_tool, t.status_tool, t.cancel_tool, t.lookup_tool});
  ASSERT_TRUE(tools_->ok()) << dir_ + "/bin";
  std::vector<std::string> env = cluster_->env();
  env.push_back("PATH=" + tools_->dir() + ":/usr/local/bin:/usr/bin:/bin");
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  site_ = std::make_unique<Site>(batch + "-" + tag,
                                 SiteOptions{.batch = batch, .batch_poll_interval = 1, .env = env});
  client_ = site_->MakeClient();
  ASSERT_TRUE(client_);
}

void BatchGridTest::TearDown() {
  if (HasFailure() && site_) {
    std::string log = ReadFileOr(site_->account_dir() + "/jobmanager.log");
    std::fprintf(stderr, "--- job manager log (tail):\n%s\n",
                 log.substr(log.size() > kLogTail ? log.size() - kLogTail : 0).c_str());
  }
  if (HasFailure() && tools_) {
    auto calls = tools_->Between(0);
    double from = calls.size() > kCallsTail ? calls[calls.size() - kCallsTail].at
                  : calls.empty()           ? 0
                                            : calls.front().at;
    std::fprintf(stderr, "--- the last %zu of %zu tool calls (seconds from the first shown):\n%s",
                 std::min(calls.size(), kCallsTail), calls.size(), tools_->Timeline(from).c_str());
  }
  client_.reset();
  site_.reset();
  cluster_.reset();  // after the site: the job manager must not see the batch system vanish first
  if (!dir_.empty() && !HasFailure()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  } else if (!dir_.empty()) {
    std::fprintf(stderr, "kept %s for inspection\n", dir_.c_str());
  }
}

std::string BatchGridTest::Run(const std::string& tag, const JobDescription& job) {
  auto sub = client_->Submit("s-" + tag, job);
  EXPECT_TRUE(sub) << sub.error().ToString();
  if (!sub) return "";
  auto c = client_->Commit("c-" + tag, sub->job_id);
  EXPECT_TRUE(c) << c.error().ToString();
  return sub->job_id;
}

std::string BatchGridTest::BatchId(const std::string& id) const {
  return cluster_->JobId("kite-" + id);
}

std::string BatchGridTest::JobFile(const std::string& id, const std::string& name) const {
  return site_->account_dir() + "/jobs/" + id + "/" + name;
}

Result<JobStatus> BatchGridTest::StatusAfterRestart(const std::string& id) {
  Result<JobStatus> st = client_->Status(id);
  if (!st) st = client_->Status(id);
  return st;
}

void BatchGridTest::ExpectRefused(const std::string& tag, const JobDescription& job,
                                  const std::string& words) {
  std::string id = Run(tag, job);
  auto st = Site::WaitFor(*client_, id, JobState::kFailed, 30);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->state, JobState::kFailed);
  EXPECT_EQ(st->failure, FailureCode::kBadRequest);
  EXPECT_NE(st->failure_message.find(words), std::string::npos) << st->failure_message;
}

void BatchGridTest::HoldQueues() const {
  auto r = cluster_->HoldQueues();
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

void BatchGridTest::ReleaseQueues() const {
  auto r = cluster_->ReleaseQueues();
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

int Lines(const std::string& path) {
  std::string s = ReadFileOr(path);
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

bool ProcessGone(const std::string& pid) {
  std::string stat = ReadFileOr("/proc/" + pid + "/stat");
  return stat.empty() || stat.find(") Z") != std::string::npos;
}

}  // namespace kite::gram::testing
