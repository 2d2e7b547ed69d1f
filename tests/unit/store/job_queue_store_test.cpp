#include "store/job_queue_store.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/fixtures/temp_dir.h"

namespace kite::store {
namespace {

using kite::testing::TempDir;

TEST(JobQueueStore, ClusterIdsAreNeverReused) {
  TempDir tmp("queue");
  auto path = tmp / "queue.db";
  {
    auto q = JobQueueStore::Open(path);
    ASSERT_TRUE(q) << q.error().ToString();
    EXPECT_EQ(*(*q)->ReserveClusterId(), 1);
    EXPECT_EQ(*(*q)->ReserveClusterId(), 2);
  }
  auto q = JobQueueStore::Open(path);
  EXPECT_EQ(*(*q)->ReserveClusterId(), 3);
}

TEST(JobQueueStore, PutLoadDeleteAndEvents) {
  TempDir tmp("queue");
  auto path = tmp / "queue.db";
  {
    auto q = JobQueueStore::Open(path);
    ASSERT_TRUE(q);
    auto& s = **q;
    ASSERT_TRUE(s.Begin());
    ASSERT_TRUE(s.PutCluster(1, "Cmd = \"/bin/true\"\n"));
    for (int p = 0; p < 3; ++p) ASSERT_TRUE(s.PutJob({1, p}, "ProcId = " + std::to_string(p)));
    ASSERT_TRUE(s.AppendEvent({{1, 0}, 1.5, 0, "Job submitted"}));
    ASSERT_TRUE(s.Commit());
    ASSERT_TRUE(s.Begin());
    ASSERT_TRUE(s.DeleteJob({1, 1}));
    ASSERT_TRUE(s.AppendHistory({{1, 1}, 2.0, "ProcId = 1"}));
    ASSERT_TRUE(s.Commit());
    ASSERT_TRUE(s.Begin());
    ASSERT_TRUE(s.DeleteJob({1, 2}));
    s.Rollback();  // not committed: job 1.2 stays
  }
  auto q = JobQueueStore::Open(path);
  ASSERT_TRUE(q);
  std::vector<std::string> seen;
  ASSERT_TRUE((*q)->Load([&](int c, std::string_view) { seen.push_back("c" + std::to_string(c)); },
                         [&](JobKey k, std::string_view) {
                           seen.push_back(std::to_string(k.cluster) + "." + std::to_string(k.proc));
                         }));
  EXPECT_EQ(seen, (std::vector<std::string>{"c1", "1.0", "1.2"}));
  auto ev = (*q)->Events({1, 0});
  ASSERT_TRUE(ev);
  ASSERT_EQ(ev->size(), 1u);
  EXPECT_EQ((*ev)[0].text, "Job submitted");
  int hist = 0;
  ASSERT_TRUE((*q)->History(-1, -1, 0, [&](const HistoryRecord& h) {
    EXPECT_EQ(h.job.proc, 1);
    ++hist;
    return true;
  }));
  EXPECT_EQ(hist, 1);
}

TEST(JobQueueStore, WritesOutsideTransactionStillWork) {
  TempDir tmp("queue");
  auto q = JobQueueStore::Open(tmp / "queue.db");
  ASSERT_TRUE(q);
  EXPECT_FALSE((*q)->Commit());  // nothing open: an error, not a crash
}

}  // namespace
}  // namespace kite::store
