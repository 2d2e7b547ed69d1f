// What a submit may not do to the queue, and what the queue does with an ad that does not load:
// the regressions of the attack on Kite (names that do not parse back, duplicate or negative
// ProcIds, states the agent cannot handle, ids past 32 bits, a damaged stored ad).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "agent/agent.h"
#include "agent/queue.h"
#include "store/sqlite.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::agent {
namespace {

struct Hardening : ::testing::Test {
  void SetUp() override { Open(); }
  void Open() {
    queue.reset();
    store.reset();
    auto s = store::JobQueueStore::Open(dir / "queue.db");
    ASSERT_TRUE(s);
    store = std::move(*s);
    queue = std::make_unique<JobQueue>(store.get(), [this] { return now; });
    ASSERT_TRUE(queue->Load());
  }
  SubmitRequest Request(int n) {
    auto c = queue->NewCluster();
    EXPECT_TRUE(c);
    SubmitRequest r;
    r.cluster = c.value_or(0);
    r.common = {{"Cmd", "\"/bin/sleep\""}, {"JobUniverse", "12"}};
    for (int i = 0; i < n; ++i) r.procs.push_back({{"ProcId", std::to_string(i)}});
    return r;
  }
  // Rewrites one stored row's ad text, as damage on disk would.
  void Damage(const char* sql) {
    queue.reset();
    store.reset();
    auto db = store::Db::Open(dir / "queue.db");
    ASSERT_TRUE(db);
    ASSERT_TRUE((*db)->Exec(sql));
  }
  testing::TempDir dir{"queue-hardening"};
  double now = 1000;
  std::unique_ptr<store::JobQueueStore> store;
  std::unique_ptr<JobQueue> queue;
};

TEST_F(Hardening, AttributeNamesThatCouldNotBeStoredAreRefusedWithTheReason) {
  struct Case {
    std::string name;
    const char* why;
  };
  const Case cases[] = {
      {"error", "reserved word"},
      {"TRUE", "reserved word"},
      {"false", "reserved word"},
      {"undefined", "reserved word"},
      {"is", "reserved word"},
      {"isnt", "reserved word"},
      {"a b", "letters, digits"},
      {"a\nb", "letters, digits"},
      {"a=b", "letters, digits"},
      {"a[", "letters, digits"},
      {"caf\xc3\xa9", "letters, digits"},
      {"", "empty"},
      {"1abc", "start with"},
      {std::string(300, 'a'), "longer than"},
  };
  for (const auto& c : cases) {
    for (bool common : {true, false}) {
      auto req = Request(2);
      if (common) {
        req.common.push_back({c.name, "1"});
      } else {
        req.procs[1].push_back({c.name, "1"});
      }
      auto r = queue->Submit(req);
      ASSERT_FALSE(r) << "name '" << c.name << "' was accepted";
      EXPECT_EQ(r.error().code(), ErrorCode::kInvalidInput);
      EXPECT_NE(r.error().message().find(c.why), std::string::npos) << r.error().message();
    }
  }
  EXPECT_TRUE(queue->jobs().empty());
}

TEST_F(Hardening, ProcIdsMustBeDistinctAndInRange) {
  const char* bad[][2] = {{"0", "0"}, {"-1", "5"}, {"2147483648", "1"}, {"\"x\"", "1"}};
  for (auto& pair : bad) {
    auto req = Request(2);
    req.procs[0] = {{"ProcId", pair[0]}};
    req.procs[1] = {{"ProcId", pair[1]}};
    auto r = queue->Submit(req);
    ASSERT_FALSE(r) << pair[0] << "," << pair[1];
    EXPECT_NE(r.error().message().find("ProcId"), std::string::npos) << r.error().message();
  }
  EXPECT_TRUE(queue->jobs().empty());
}

TEST_F(Hardening, OnlyIdleOrHeldJobsOfAKnownUniverseMayBeSubmitted) {
  for (const char* status : {"2", "3", "4", "99", "0"}) {
    auto req = Request(1);
    req.procs[0].push_back({"JobStatus", status});
    auto r = queue->Submit(req);
    ASSERT_FALSE(r) << "JobStatus " << status;
    EXPECT_NE(r.error().message().find("JobStatus"), std::string::npos);
  }
  auto req = Request(1);
  req.common.push_back({"JobUniverse", "99"});
  EXPECT_FALSE(queue->Submit(req));
  for (const char* status : {"1", "5"}) {
    auto ok = Request(1);
    ok.procs[0].push_back({"JobStatus", status});
    EXPECT_TRUE(queue->Submit(ok)) << status;
  }
}

// A job's ClusterId is its cluster's: a proc that names another one (a raw /v1/submit) would
// say it belongs to a cluster it does not.
TEST_F(Hardening, AJobsClusterIdIsTheClustersOnly) {
  auto req = Request(2);
  req.procs[1].push_back({"ClusterId", "999"});
  auto r = queue->Submit(req);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("ClusterId is the cluster's"), std::string::npos)
      << r.error().message();
  EXPECT_TRUE(queue->jobs().empty());
  auto common = Request(1);
  common.common.push_back({"ClusterId", "999"});
  auto c = queue->Submit(common);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message().find("is not the cluster's id"), std::string::npos);
  // The cluster's own id, as condor_submit writes it, is fine.
  auto own = Request(1);
  own.common.push_back({"ClusterId", std::to_string(own.cluster)});
  EXPECT_TRUE(queue->Submit(own));
}

TEST_F(Hardening, ADagsJobIsRefusedUnlessTheAgentSubmitsItAsOne) {
  auto req = Request(1);
  req.common.push_back({"JobUniverse", "7"});  // a raw API submit
  auto r = queue->Submit(req);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("kite dag submit"), std::string::npos) << r.error().message();
  auto plain = Request(1);
  plain.dag = true;  // the runner's flag on a job that is not a DAG's
  ASSERT_FALSE(queue->Submit(plain));
  auto dag = Request(1);
  dag.common.push_back({"JobUniverse", "7"});
  dag.dag = true;
  EXPECT_TRUE(queue->Submit(dag));
}

// A DAG's node records go in the transaction of the next flush, survive a reopen, and go with
// ForgetDag.
TEST_F(Hardening, DagNodeRecordsAreWrittenWithTheNextFlushAndForgottenWhole) {
  queue->SetDagNode(7, "A", "done 0 8 0");
  queue->SetDagNode(7, "B", "post 1 9 3");
  queue->SetDagNode(7, "A", "failed 2 10 1");  // a later record replaces an earlier one
  queue->SetDagNode(8, "A", "done 0 11 0");
  EXPECT_TRUE(queue->has_pending());
  ASSERT_TRUE(queue->Flush());
  Open();
  std::map<std::string, std::string> seven;
  ASSERT_TRUE(queue->DagNodes(7, [&](std::string_view n, std::string_view r) {
    seven.emplace(std::string(n), std::string(r));
  }));
  EXPECT_EQ(seven,
            (std::map<std::string, std::string>{{"A", "failed 2 10 1"}, {"B", "post 1 9 3"}}));
  queue->ForgetDag(7);
  ASSERT_TRUE(queue->Flush());
  Open();
  int left7 = 0, left8 = 0;
  ASSERT_TRUE(queue->DagNodes(7, [&](std::string_view, std::string_view) { ++left7; }));
  ASSERT_TRUE(queue->DagNodes(8, [&](std::string_view, std::string_view) { ++left8; }));
  EXPECT_EQ(left7, 0);
  EXPECT_EQ(left8, 1);
}

TEST_F(Hardening, TooManyJobsInOneSubmitAreRefused) {
  auto req = Request(0);
  req.procs.resize(kMaxJobsPerSubmit + 1);
  auto r = queue->Submit(req);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("at most"), std::string::npos);
}

TEST_F(Hardening, EveryAcceptedAdLoadsBackWhole) {
  auto req = Request(2);
  // Strings with every escape the writer must get right, and names that are plain but unusual.
  req.common.push_back({"_odd_Name_1", "\"quote \\\" backslash \\\\ tab \\t newline \\n end\""});
  req.procs[1].push_back({"Parent_", "{ 1, \"two\", [ a = 3 ] }"});
  ASSERT_TRUE(queue->Submit(req));
  std::string before = queue->FlatText(*queue->Find({req.cluster, 1}));
  Open();
  Job* j = queue->Find({req.cluster, 1});
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(queue->FlatText(*j), before);
  EXPECT_EQ(j->status, kIdle);
}

TEST_F(Hardening, AJobWhoseStoredAdIsDamagedIsHeldWithTheReasonNotDropped) {
  auto req = Request(3);
  ASSERT_TRUE(queue->Submit(req));
  int c = req.cluster;
  Damage(("UPDATE jobs SET ad = ad || 'Broken = ((('||char(10) WHERE cluster = " +
          std::to_string(c) + " AND proc = 1")
             .c_str());
  Open();
  ASSERT_EQ(queue->jobs().size(), 3u);
  Job* j = queue->Find({c, 1});
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(j->status, kHeld);
  std::string why = j->ad.EvaluateString("HoldReason").value_or("");
  EXPECT_NE(why.find("could not load this job in full"), std::string::npos) << why;
  EXPECT_EQ(j->ad.EvaluateInt("HoldReasonCode").value_or(-1), kHoldQueueDamage);
  EXPECT_EQ(j->ad.EvaluateString("Cmd").value_or(""), "/bin/sleep");  // the rest is kept
  EXPECT_EQ(queue->Find({c, 0})->status, kIdle);
  ASSERT_TRUE(queue->Flush());
  Open();  // held durably, and held once
  EXPECT_EQ(queue->Find({c, 1})->status, kHeld);
  EXPECT_EQ(queue->Find({c, 1})->ad.EvaluateInt("NumHolds").value_or(0), 1);
}

TEST_F(Hardening, ADamagedClusterAdHoldsEveryJobOfTheCluster) {
  auto req = Request(2);
  ASSERT_TRUE(queue->Submit(req));
  Damage(("UPDATE clusters SET ad = 'error = 1'||char(10)||ad WHERE cluster = " +
          std::to_string(req.cluster))
             .c_str());
  Open();
  ASSERT_EQ(queue->jobs().size(), 2u);
  for (int p = 0; p < 2; ++p) {
    Job* j = queue->Find({req.cluster, p});
    ASSERT_NE(j, nullptr);
    EXPECT_EQ(j->status, kHeld);
    EXPECT_NE(j->ad.EvaluateString("HoldReason").value_or("").find("cluster"), std::string::npos);
  }
}

TEST(JobSelector, IdsOutOfRangeAreRefusedNeverTruncated) {
  struct Case {
    const char* text;
    int cluster, proc;  // cluster 0: refused
  };
  const Case cases[] = {
      {"1", 1, -1},
      {"12.3", 12, 3},
      {"2147483647.2147483647", 2147483647, 2147483647},
      {"4294967297", 0, 0},
      {"4294967298.4294967297", 0, 0},
      {"1.4294967296", 0, 0},
      {"2147483648", 0, 0},
      {"99999999999999999999", 0, 0},
      {"0", 0, 0},
      {"-1", 0, 0},
      {"1.-1", 0, 0},
      {"+1", 0, 0},
      {"1.", 0, 0},
      {".1", 0, 0},
      {"1.2.3", 0, 0},
      {"", 0, 0},
      {"1x", 0, 0},
      {" 1", 0, 0},
  };
  for (const auto& c : cases) {
    auto s = ParseJobSelector(c.text);
    if (c.cluster == 0) {
      EXPECT_FALSE(s) << c.text << " parsed as " << (s ? s->cluster : 0);
      continue;
    }
    ASSERT_TRUE(s) << c.text << ": " << s.error().message();
    EXPECT_EQ(s->cluster, c.cluster) << c.text;
    EXPECT_EQ(s->proc, c.proc) << c.text;
  }
}

}  // namespace
}  // namespace kite::agent
