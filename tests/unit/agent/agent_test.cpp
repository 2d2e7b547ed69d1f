// The agent driven in-process through its entry point (Agent::HandleNow), as the CLI would drive
// it through its socket: local jobs run under real kite-exec wrappers, hold, release and remove
// stop and start them, a restarted agent finds them again, and the event loop stays fair while a
// burst of short jobs runs.
#include "agent/agent.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>

#include "agent/job_transitions.h"
#include "agent/local_jobs.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::agent {
namespace {

namespace json = boost::json;
namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override { StartAgent(); }
  void TearDown() override {
    if (agent_) agent_->Stop();
  }

  void StartAgent() {
    AgentOptions o;
    o.home = dir_ / "home";
    o.start_gridmanagers = false;
    o.pool.local_slots = 0;  // no startd: the pool is tested with real processes (pool_it)
    o.kill_grace = 1;
    agent_ = std::make_unique<Agent>(o);
    auto st = agent_->Start();
    ASSERT_TRUE(st) << st.error().ToString();
  }
  // Ends this agent as `kite agent stop` does: the wrappers of running jobs live on.
  void StopAgent() {
    agent_->Stop();
    agent_.reset();
  }

  json::value Call(const std::string& target, const json::object& body) {
    ApiRequest req{http::verb::post, target, 11};
    req.body() = json::serialize(body);
    req.prepare_payload();
    auto res = agent_->HandleNow(req);
    EXPECT_EQ(res.result_int(), 200u) << target << ": " << res.body();
    boost::system::error_code ec;
    auto v = json::parse(res.body(), ec);
    return ec ? json::value(res.body()) : v;
  }
  // Submits `n` local jobs running `sh -c SCRIPT`; returns the cluster id.
  int Submit(const std::string& script, int n) {
    int cluster = static_cast<int>(Call("/v1/cluster", {}).at("cluster").as_int64());
    json::array common{
        json::array{"Cmd", "\"/bin/sh\""},
        json::array{"Arguments", json::serialize(json::string("-c '" + script + "'"))},
        json::array{"Iwd", json::serialize(json::string(dir_.path()))},
        json::array{"JobUniverse", "12"}};
    json::array procs;
    for (int i = 0; i < n; ++i)
      procs.push_back(json::array{json::array{"ProcId", std::to_string(i)}});
    Call("/v1/submit", {{"cluster", cluster}, {"common", common}, {"procs", procs}});
    return cluster;
  }
  int Status(int cluster, int proc) {
    Job* j = agent_->queue().Find({cluster, proc});
    return j ? j->status : 0;
  }
  // Runs the agent's event loop until `done` holds or `seconds` pass.
  bool RunUntil(const std::function<bool()>& done, double seconds = 30) {
    auto end = Clock::now() + std::chrono::duration<double>(seconds);
    while (!done()) {
      if (Clock::now() > end) return false;
      agent_->io().run_for(std::chrono::milliseconds(20));
    }
    return true;
  }
  json::object Act(const std::string& action, const std::string& id) {
    return Call("/v1/act", {{"action", action}, {"ids", json::array{json::string(id)}}})
        .as_object();
  }

  testing::TempDir dir_{"agent-unit"};
  std::unique_ptr<Agent> agent_;
};

TEST_F(AgentTest, LocalJobsRunToCompletionAndLeaveForHistory) {
  int c = Submit("echo ran >> runs", 3);
  ASSERT_TRUE(RunUntil([&] { return agent_->queue().jobs().empty(); }));
  auto counts = agent_->Count({JobSelector{c, -1}});
  EXPECT_EQ(counts.total, 3);
  EXPECT_EQ(counts.done, 3);
  std::ifstream runs(dir_ / "runs");
  int lines = 0;
  for (std::string l; std::getline(runs, l);) ++lines;
  EXPECT_EQ(lines, 3);
}

TEST_F(AgentTest, HoldStopsARunningJobAndReleaseRunsItAgain) {
  int c = Submit("echo start >> runs; sleep 60", 1);
  ASSERT_TRUE(RunUntil([&] {
    return Status(c, 0) == kRunning && agent_->queue().Find({c, 0})->pid > 0;
  }));
  auto r = Act("hold", std::to_string(c) + ".0");
  EXPECT_EQ(r.at("changed").as_int64(), 1);
  EXPECT_EQ(Status(c, 0), kHeld);
  // The wrapper reports the job's end, and the job stays held.
  ASSERT_TRUE(RunUntil([&] {
    Job* j = agent_->queue().Find({c, 0});
    return j->pid == 0 && !j->kill_sent;
  }));
  r = Act("hold", std::to_string(c) + ".0");  // the table's refusal, in condor_hold's words
  EXPECT_EQ(r.at("changed").as_int64(), 0);
  EXPECT_EQ(r.at("errors").as_array().at(0).as_string(),
            RefusalReason(std::to_string(c) + ".0", kHeld, JobEvent::kHold));
  r = Act("release", std::to_string(c) + ".0");
  EXPECT_EQ(r.at("changed").as_int64(), 1);
  ASSERT_TRUE(RunUntil([&] { return Status(c, 0) == kRunning; }));
  r = Act("rm", std::to_string(c));
  EXPECT_EQ(r.at("changed").as_int64(), 1);
  ASSERT_TRUE(RunUntil([&] { return agent_->queue().jobs().empty(); }));
}

TEST_F(AgentTest, ARestartedAgentWatchesRunningJobsAgain) {
  int c = Submit("sleep 1; echo done >> runs", 2);
  ASSERT_TRUE(RunUntil([&] { return Status(c, 0) == kRunning && Status(c, 1) == kRunning; }));
  ASSERT_TRUE(RunUntil([&] {  // both wrappers spawned
    return agent_->queue().Find({c, 0})->pid > 0 && agent_->queue().Find({c, 1})->pid > 0;
  }));
  StopAgent();
  StartAgent();
  EXPECT_EQ(Status(c, 0), kRunning);
  EXPECT_TRUE(agent_->queue().Find({c, 0})->adopted);
  ASSERT_TRUE(RunUntil([&] { return agent_->queue().jobs().empty(); }));
  std::ifstream runs(dir_ / "runs");
  int lines = 0;
  for (std::string l; std::getline(runs, l);) ++lines;
  EXPECT_EQ(lines, 2);  // each ran once
}

// While a burst of short jobs runs, no turn of the event loop starts more than a slice of them:
// requests from clients are answered between the slices, not after the whole burst.
TEST_F(AgentTest, AStartingBurstComesInSlicesWithTurnsForClientsBetween) {
  int c = Submit("true", 300);
  auto idle = [&] {
    size_t n = 0;
    for (auto& [k, j] : agent_->queue().jobs()) n += j.status == kIdle;
    return n;
  };
  size_t worst = 0, turns = 0;
  auto end = Clock::now() + std::chrono::seconds(120);
  while (!agent_->queue().jobs().empty() && Clock::now() < end) {
    size_t before = idle();
    if (agent_->io().run_one_for(std::chrono::milliseconds(50)) == 0) continue;
    ++turns;
    size_t after = idle();
    worst = std::max(worst, before > after ? before - after : 0);
  }
  EXPECT_TRUE(agent_->queue().jobs().empty());
  EXPECT_LE(worst, LocalJobs::kSlice) << "one turn started " << worst << " jobs";
  EXPECT_GT(turns, 300 / LocalJobs::kSlice);
  EXPECT_EQ(agent_->Count({JobSelector{c, -1}}).done, 300);
}

}  // namespace
}  // namespace kite::agent
