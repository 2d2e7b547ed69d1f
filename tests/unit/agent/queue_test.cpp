#include "agent/queue.h"

#include <gtest/gtest.h>

#include <memory>

#include "agent/agent.h"
#include "classad/io.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::agent {
namespace {

struct QueueTest : ::testing::Test {
  void SetUp() override {
    path = dir / "queue.db";
    Open();
  }
  void Open() {
    queue.reset();
    auto s = store::JobQueueStore::Open(path);
    ASSERT_TRUE(s);
    store = std::move(*s);
    queue = std::make_unique<JobQueue>(store.get(), [this] { return now; });
    ASSERT_TRUE(queue->Load());
  }
  SubmitRequest Request(int cluster, int n) {
    SubmitRequest r;
    r.cluster = cluster;
    r.common = {{"Cmd", "\"/bin/true\""}, {"JobUniverse", "12"}, {"JobStatus", "1"}};
    for (int i = 0; i < n; ++i) r.procs.push_back({{"ProcId", std::to_string(i)}});
    return r;
  }
  kite::testing::TempDir dir{"queue-unit"};
  std::string path;
  double now = 1000;
  std::unique_ptr<store::JobQueueStore> store;
  std::unique_ptr<JobQueue> queue;
};

TEST_F(QueueTest, SubmitIsDurableAndSplitsClusterFromJobs) {
  auto c = queue->NewCluster();
  ASSERT_TRUE(c);
  ASSERT_TRUE(queue->Submit(Request(*c, 3)));
  Open();  // as after a restart
  ASSERT_EQ(queue->jobs().size(), 3u);
  Job* j = queue->Find({*c, 2});
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(j->status, kIdle);
  EXPECT_EQ(j->universe, kUniverseLocal);
  EXPECT_EQ(j->ad.EvaluateString("Cmd").value_or(""), "/bin/true");  // through the cluster ad
  EXPECT_EQ(j->ad.LookupOwn("Cmd"), nullptr);
  EXPECT_NE(j->ad.LookupOwn("JobStatus"), nullptr);  // job-level even though submitted as common
  EXPECT_EQ(j->ad.EvaluateInt("QDate").value_or(0), 1000);
  EXPECT_EQ(j->cluster->total, 3);
}

TEST_F(QueueTest, SubmitNeedsAHandedOutClusterId) {
  auto r = queue->Submit(Request(42, 1));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kConflict);
  auto c = queue->NewCluster();
  ASSERT_TRUE(queue->Submit(Request(*c, 1)));
  EXPECT_FALSE(queue->Submit(Request(*c, 1)));  // not twice
}

TEST_F(QueueTest, BadExpressionQueuesNothing) {
  auto c = queue->NewCluster();
  auto req = Request(*c, 2);
  req.procs[1].push_back({"Requirements", "((("});
  auto r = queue->Submit(req);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("Requirements"), std::string::npos);
  EXPECT_TRUE(queue->jobs().empty());
  Open();
  EXPECT_TRUE(queue->jobs().empty());
}

TEST_F(QueueTest, StateChangesPersistAndRetireGoesToHistory) {
  auto c = queue->NewCluster();
  ASSERT_TRUE(queue->Submit(Request(*c, 2)));
  Job* j = queue->Find({*c, 0});
  now = 2000;
  queue->MarkRunning(*j);
  ExecStatus st;
  st.code = 5;
  st.start = 2000;
  st.end = 2010;
  queue->MarkExited(*j, st);
  queue->MarkCompleted(*j);
  queue->Retire(*j);
  queue->Hold(*queue->Find({*c, 1}), "because", kHoldUserRequest);
  ASSERT_TRUE(queue->Flush());
  Open();
  ASSERT_EQ(queue->jobs().size(), 1u);
  Job* held = queue->Find({*c, 1});
  EXPECT_EQ(held->status, kHeld);
  EXPECT_EQ(held->ad.EvaluateString("HoldReason").value_or(""), "because");
  int n = 0;
  ASSERT_TRUE(store->History(*c, 0, 0, [&](const store::HistoryRecord& h) {
    auto ad = classad::ParseOldAd(h.ad);
    EXPECT_TRUE(ad);
    EXPECT_EQ(ad->EvaluateInt("ExitCode").value_or(-1), 5);
    EXPECT_EQ(ad->EvaluateInt("JobStatus").value_or(-1), kCompleted);
    EXPECT_EQ(ad->EvaluateString("Cmd").value_or(""), "/bin/true");
    EXPECT_DOUBLE_EQ(ad->EvaluateReal("RemoteWallClockTime").value_or(0), 10);
    ++n;
    return true;
  }));
  EXPECT_EQ(n, 1);
  auto events = store->Events({*c, 0});
  ASSERT_TRUE(events);
  std::vector<int> codes;
  for (auto& e : *events) codes.push_back(e.code);
  EXPECT_EQ(codes, (std::vector<int>{0, 1, 5}));
}

TEST_F(QueueTest, LastJobLeavingRemovesTheCluster) {
  auto c = queue->NewCluster();
  ASSERT_TRUE(queue->Submit(Request(*c, 1)));
  Job* j = queue->Find({*c, 0});
  queue->MarkRemoved(*j, "gone");
  queue->Retire(*j);
  ASSERT_TRUE(queue->Flush());
  EXPECT_EQ(queue->FindCluster(*c), nullptr);
  Open();
  EXPECT_TRUE(queue->clusters().empty());
}

TEST_F(QueueTest, HistoryIsTrimmedToHistoryMax) {
  queue = std::make_unique<JobQueue>(
      store.get(), [this] { return now; }, 2);
  auto c = queue->NewCluster();
  ASSERT_TRUE(queue->Submit(Request(*c, 4)));
  for (int p = 0; p < 4; ++p) {
    now += 1;
    Job* j = queue->Find({*c, p});
    queue->MarkRemoved(*j, "done with it");
    queue->Retire(*j);
    ASSERT_TRUE(queue->Flush());
  }
  std::vector<int> kept;
  ASSERT_TRUE(store->History(-1, -1, 0, [&](const store::HistoryRecord& h) {
    kept.push_back(h.job.proc);
    return true;
  }));
  EXPECT_EQ(kept, (std::vector<int>{3, 2}));  // newest first, the two oldest dropped
  EXPECT_TRUE(store->Events({*c, 0})->empty());
  EXPECT_FALSE(store->Events({*c, 3})->empty());
}

TEST(JobSelector, Parses) {
  EXPECT_EQ(ParseJobSelector("12")->cluster, 12);
  EXPECT_EQ(ParseJobSelector("12")->proc, -1);
  EXPECT_EQ(ParseJobSelector("12.3")->proc, 3);
  for (const char* bad : {"", "x", "0", "-1", "1.", "1.x", "1.2.3", "1 "})
    EXPECT_FALSE(ParseJobSelector(bad)) << bad;
}

}  // namespace
}  // namespace kite::agent
