// `kite q` with condor_q's habits: -hold/-held, -run, -idle, -af[:MODS], -long, -format, -totals,
// owner names as arguments, batch names in the batch view, and clear errors for bad formats.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class QueryCli : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = std::make_unique<KiteEnv>("query-cli");
    env_->StartAgent();
    held_ = std::to_string(
        env_->Submit("universe = local\nexecutable = /bin/true\nhold = true\nbatch_name = nightly\n"
                     "+Color = \"$(Process)\"\nqueue 2\n"));
    running_ = std::to_string(
        env_->Submit("universe = local\nexecutable = /bin/sleep\narguments = 300\nqueue\n"));
    EXPECT_TRUE(WaitUntil([&] { return env_->JobStatus(running_ + ".0") == 2; }, 20));
    owner_ = env_->Kite({"q", running_, "-af", "Owner"}).out;
    if (!owner_.empty() && owner_.back() == '\n') owner_.pop_back();
  }
  CommandResult Q(std::vector<std::string> args) {
    args.insert(args.begin(), "q");
    return env_->Kite(args);
  }
  std::unique_ptr<KiteEnv> env_;
  std::string held_, running_, owner_;
};

// "-hold" is an option, never the bundle -h -o -l -d (which printed the help and exited 0).
TEST_F(QueryCli, HoldRunAndIdleFilter) {
  for (const char* flag : {"-hold", "-held"}) {
    auto r = Q({flag});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(Has(r.out, "HOLD_REASON")) << r.out;
    EXPECT_TRUE(Has(r.out, held_ + ".1")) << r.out;
    EXPECT_TRUE(Has(r.out, "submitted on hold")) << r.out;
    EXPECT_FALSE(Has(r.out, running_ + ".0")) << r.out;
    EXPECT_TRUE(
        Has(r.out, "Total for query: 2 jobs; 0 completed, 0 removed, 0 idle, 0 running, 2 held"))
        << r.out;
  }
  auto r = Q({"-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "HOST(S)")) << r.out;
  EXPECT_TRUE(Has(r.out, running_ + ".0")) << r.out;
  EXPECT_TRUE(Has(r.out, " local")) << r.out;
  EXPECT_FALSE(Has(r.out, held_ + ".0")) << r.out;
  r = Q({"-idle"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "Total for query: 0 jobs")) << r.out;
  r = Q({"-hold", "-run"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(Has(r.err, "one of -hold, -run and -idle")) << r.err;
}

TEST_F(QueryCli, AutoformatWithModifiers) {
  auto r = Q({held_, "-af", "ProcId", "Color", "JobStatus == 5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "0 0 true\n1 1 true\n");
  r = Q({held_ + ".1", "-af:jh,", "Color", "NoSuchAttribute"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ID,Color,NoSuchAttribute\n" + held_ + ".1,1,undefined\n");
  r = Q({held_ + ".0", "-autoformat:lt", "ProcId", "Color"});
  EXPECT_EQ(r.out, "ProcId = 0\tColor = 0\n");
  r = Q({held_ + ".0", "-af:V", "Color"});
  EXPECT_EQ(r.out, "\"0\"\n");
  // The attribute list ends at the next option.
  r = Q({"-af", "ClusterId", "-hold"});
  EXPECT_EQ(r.out, held_ + "\n" + held_ + "\n");
}

TEST_F(QueryCli, LongFormatAndTotals) {
  auto r = Q({held_, "-long"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "ProcId = 0\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "Color = \"1\"\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "JobBatchName = \"nightly\"\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "ProcId = 1\n")) << r.out;
  size_t blank = r.out.find("\n\n");  // the first ad ends before the second starts
  ASSERT_NE(blank, std::string::npos);
  EXPECT_TRUE(Has(r.out.substr(0, blank), "ProcId = 0\n")) << r.out;
  EXPECT_TRUE(Has(r.out.substr(blank), "ProcId = 1\n")) << r.out;
  EXPECT_EQ(r.out.substr(r.out.size() - 2), "\n\n");
  EXPECT_FALSE(Has(r.out, "Total for query")) << r.out;

  r = Q({held_, "-format", "%d.", "ClusterId", "-format", "%-3d|", "ProcId", "-format", "%s\\n",
         "strcat(\"c=\", Color)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, held_ + ".0  |c=0\n" + held_ + ".1  |c=1\n");
  r = Q({held_ + ".0", "-format", "%5.1f%%\\n", "ProcId + 0.25"});
  EXPECT_EQ(r.out, "  0.2%\n");

  r = Q({"-totals"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "Total for query: 3 jobs; 0 completed, 0 removed, 0 idle, 1 running, 2 held, 0 "
            "suspended\n");
  // -grid counts grid jobs only: there are none here.
  r = Q({"-grid", "-totals"});
  EXPECT_TRUE(Has(r.out, "Total for query: 0 jobs")) << r.out;
  r = Q({"-grid"});
  EXPECT_TRUE(Has(r.out, "Total for query: 0 jobs")) << r.out;
}

TEST_F(QueryCli, MalformedFormatsAreRefusedClearly) {
  struct Case {
    std::vector<std::string> args;
    const char* expect;
  } cases[] = {
      {{"-format", "%q", "ProcId"}, "unknown conversion %q"},
      {{"-format", "%d %d", "ProcId"}, "one conversion per -format"},
      {{"-format", "50%", "ProcId"}, "a '%' with no conversion"},
      {{"-format", "%99999d", "ProcId"}, "too large"},
      {{"-format", "%d", "ProcId +"}, "bad expression 'ProcId +'"},
      {{"-format", "%d"}, "format"},
      {{"-af:jq", "ProcId"}, "unknown modifier 'q'"},
      {{"-af", "(ProcId"}, "bad expression '(ProcId'"},
      {{"-af", "ProcId", "-format", "%d", "ProcId"}, "-af or -format, not both"},
  };
  for (auto& c : cases) {
    auto r = Q(c.args);
    EXPECT_NE(r.exit_code, 0) << c.expect;
    EXPECT_TRUE(Has(r.err, c.expect)) << c.expect << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST_F(QueryCli, OwnerNamesAndBatchNames) {
  ASSERT_FALSE(owner_.empty());
  auto r = Q({owner_, "-af", "ClusterId"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, held_ + "\n" + held_ + "\n" + running_ + "\n");
  r = Q({"nobody-else", "-af", "ClusterId"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  // An owner and an id: jobs that match both.
  r = Q({owner_, running_, "-af", "ClusterId"});
  EXPECT_EQ(r.out, running_ + "\n");
  r = Q({"nobody-else", running_, "-af", "ClusterId"});
  EXPECT_EQ(r.out, "");
  r = Q({"no/such"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(Has(r.err, "neither a job id")) << r.err;

  r = Q({});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, " nightly ")) << r.out;
  EXPECT_TRUE(Has(r.out, "ID: " + running_)) << r.out;
  // A second cluster in the same batch joins its row.
  int more = env_->Submit(
      "universe = local\nexecutable = /bin/true\nhold = true\nbatch_name = nightly\nqueue\n");
  r = Q({});
  EXPECT_TRUE(Has(r.out, held_ + ".0 ... " + std::to_string(more) + ".0")) << r.out;
}

// condor_history and the user log need no agent: they read the queue store, read-only.
// -analyze (and -better-analyze) says why: a held job's reason, a running job's start, an idle
// local job waiting for a slot behind max_local_jobs and for the jobs submitted before it.
TEST(QueryAnalyze, SaysWhyEachJobIsWhereItIs) {
  KiteEnv env("query-analyze");
  std::filesystem::create_directories(env.home());
  WriteFile(env.home() + "/config.toml", "[agent]\nmax_local_jobs = 1\n");
  env.StartAgent();
  int c = env.Submit("universe = local\nexecutable = /bin/sleep\narguments = 300\nqueue 3\n");
  std::string id = std::to_string(c);
  ASSERT_TRUE(WaitUntil([&] { return env.JobStatus(id + ".0") == 2; }, 20));
  ASSERT_EQ(env.Kite({"hold", id + ".1", "-reason", "not today"}).exit_code, 0);
  auto r = env.Kite({"q", "-better-analyze", id});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "Job " + id + ".0: running since ")) << r.out;
  EXPECT_TRUE(Has(r.out, "Job " + id + ".1: held.\n  not today")) << r.out;
  EXPECT_TRUE(Has(r.out, "Job " + id + ".2: idle.")) << r.out;
  EXPECT_TRUE(Has(r.out, "1 of max_local_jobs = 1 run")) << r.out;
  EXPECT_EQ(env.Kite({"q", "-analyze", id + ".2"}).out.find("Job " + id + ".0"), std::string::npos);
  env.Kite({"rm", id});
}

TEST(HistoryCli, HistoryAndLogWithoutAnAgent) {
  KiteEnv env("history-cli");
  env.StartAgent();
  // One after the other, so "newest first" has one answer.
  int first = env.Submit("universe = local\nexecutable = /bin/true\nqueue 2\n");
  auto r = env.Kite({"wait", std::to_string(first), "-timeout", "30"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int second = env.Submit(
      "universe = local\nexecutable = /bin/sh\narguments = \"-c 'exit 3'\"\n"
      "+Color = \"red\"\nqueue\n");
  r = env.Kite({"wait", std::to_string(second), "-timeout", "30"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string f = std::to_string(first), s = std::to_string(second);
  auto with_agent = env.Kite({"history", "-af", "ClusterId", "ProcId", "ExitCode"});
  env.StopAgent();

  r = env.Kite({"history", "-af", "ClusterId", "ProcId", "ExitCode"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, with_agent.out);
  EXPECT_TRUE(Has(r.out, s + " 0 3\n")) << r.out;
  EXPECT_TRUE(Has(r.out, f + " 1 0\n")) << r.out;
  r = env.Kite({"history", "-match", "1", "-af:j", "Color"});
  EXPECT_EQ(r.out, s + ".0 red\n");
  r = env.Kite({"history", f, "-limit", "5", "-af", "ProcId"});
  EXPECT_TRUE(r.out == "1\n0\n" || r.out == "0\n1\n") << r.out;
  r = env.Kite({"history", "-constraint", "ExitCode == 3", "-long"});
  EXPECT_TRUE(Has(r.out, "Color = \"red\"\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "ExitCode = 3\n")) << r.out;
  r = env.Kite({"history", "-json", s});
  EXPECT_TRUE(Has(r.out, "\"ExitCode\": 3")) << r.out;
  r = env.Kite({"history"});
  EXPECT_TRUE(Has(r.out, f + ".1")) << r.out;
  EXPECT_TRUE(Has(r.out, "COMPLETED")) << r.out;

  r = env.Kite({"log", s + ".0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  char submitted[64];
  std::snprintf(submitted, sizeof submitted, "000 (%03d.000.000)", second);
  EXPECT_TRUE(Has(r.out, submitted)) << r.out;
  EXPECT_TRUE(Has(r.out, "Normal termination (return value 3)")) << r.out;
  r = env.Kite({"log", "999.0"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(Has(r.err, "job 999.0 not found")) << r.err;
  r = env.Kite({"q"});
  EXPECT_NE(r.exit_code, 0);  // the queue itself needs the agent
  EXPECT_TRUE(Has(r.err, "kite agent start")) << r.err;

  // Reading left the queue as it was: the agent starts on it and goes on numbering.
  env.StartAgent();
  int third = env.Submit("universe = local\nexecutable = /bin/true\nhold = true\nqueue\n");
  EXPECT_EQ(third, second + 1);
}

TEST(HistoryCli, NoQueueYet) {
  KiteEnv env("history-none");
  auto r = env.Kite({"history"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(Has(r.err, "no job queue at")) << r.err;
}

}  // namespace
}  // namespace kite::testing
