// Acknowledged means durable: kill -9 of the agent during submits and while jobs run.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <boost/json.hpp>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

std::map<int, int> JobsPerCluster(const KiteEnv& env) {
  auto r = env.Kite({"q", "-json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<int, int> n;
  auto v = boost::json::parse(r.out);
  for (auto& j : v.as_array()) ++n[static_cast<int>(j.as_object().at("ClusterId").as_int64())];
  return n;
}

TEST(Durability, KillDuringSubmitStreamLosesNoAcknowledgedCluster) {
  KiteEnv env("durable");
  env.Write("job.sub", "executable = /bin/true\nhold = true\nqueue 50\n");
  std::mt19937 rng(std::random_device{}());
  std::set<int> acknowledged;
  int kills = 0;
  for (int round = 0; round < 6; ++round) {
    env.StartAgent();
    std::atomic<bool> stop{false};
    std::mutex mu;
    std::thread submitter([&] {
      std::regex re("^50 job\\(s\\) submitted to cluster ([0-9]+)\\.\n$");
      while (!stop) {
        auto r = env.Kite({"submit", "job.sub"});
        std::smatch m;
        if (r.exit_code == 0) {
          ASSERT_TRUE(std::regex_match(r.out, m, re)) << r.out;
          std::lock_guard<std::mutex> l(mu);
          acknowledged.insert(std::stoi(m[1]));
        }
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 400));
    env.KillAgent();
    ++kills;
    stop = true;
    submitter.join();
    env.StartAgent();
    auto present = JobsPerCluster(env);
    for (int c : acknowledged) EXPECT_EQ(present[c], 50) << "acknowledged cluster " << c;
    for (auto& [c, n] : present) EXPECT_EQ(n, 50) << "cluster " << c << " is half-queued";
    env.StopAgent();
  }
  std::printf("durability: %d kills, %zu acknowledged clusters, all whole\n", kills,
              acknowledged.size());
  EXPECT_GT(acknowledged.size(), 6u);
}

class Restart : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = std::make_unique<KiteEnv>("restart");
    env_->StartAgent();
  }
  std::string Log(const std::string& id) { return env_->Kite({"log", id}).out; }
  std::unique_ptr<KiteEnv> env_;
};

TEST_F(Restart, RunningJobIsWatchedAgainAfterAgentKill) {
  int c = env_->Submit(
      "universe = local\nexecutable = /bin/sh\n"
      "arguments = \"-c 'echo start >> runs; sleep 2; echo end >> runs'\"\n"
      "queue\n");
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(env_->dir() + "/runs") == "start\n"; }, 10));
  env_->KillAgent();
  env_->StartAgent();
  auto r = env_->Kite({"wait", id, "--timeout", "20"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFileOr(env_->dir() + "/runs"), "start\nend\n");  // ran exactly once
  EXPECT_EQ(env_->JobStatus(id), 4);
  EXPECT_NE(Log(id).find("still running and is watched again"), std::string::npos) << Log(id);
}

TEST_F(Restart, OutcomeOfJobThatEndedWhileAgentWasDownIsRecorded) {
  int c = env_->Submit(
      "universe = local\nexecutable = /bin/sh\n"
      "arguments = \"-c 'echo start >> runs; sleep 1; exit 3'\"\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(env_->dir() + "/runs") == "start\n"; }, 10));
  env_->KillAgent();
  std::this_thread::sleep_for(std::chrono::milliseconds(1800));
  env_->StartAgent();
  auto r = env_->Kite({"wait", id, "--timeout", "20"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFileOr(env_->dir() + "/runs"), "start\n");
  auto h = env_->Kite({"history", id, "-json"}).out;
  EXPECT_NE(h.find("\"ExitCode\": 3"), std::string::npos) << h;
  EXPECT_NE(Log(id).find("ended while the agent was down"), std::string::npos) << Log(id);
}

TEST_F(Restart, JobWhoseWrapperDiedWithTheAgentRunsAgain) {
  int c = env_->Submit(
      "universe = local\nexecutable = /bin/sh\n"
      "arguments = \"-c 'echo start >> runs; sleep 300'\"\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(env_->dir() + "/runs") == "start\n"; }, 10));
  // A machine crash: the agent, the wrapper (its pid recorded in the lock) and the job all die.
  // The wrapper's pid, from the lock of the slot that names the job's first run.
  pid_t wrapper = 0;
  for (const auto& slot : std::filesystem::directory_iterator(env_->home() + "/spool/slots")) {
    std::string lock = ReadFileOr(slot.path().string() + "/lock"),
                head = "owner " + id + " 1\npid ";
    if (lock.starts_with(head)) wrapper = std::atoi(lock.c_str() + head.size());
  }
  ASSERT_GT(wrapper, 0);
  env_->KillAgent();
  kill(-wrapper, SIGKILL);
  ASSERT_TRUE(WaitUntil([&] { return kill(wrapper, 0) != 0; }, 5));
  env_->StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(env_->dir() + "/runs") == "start\nstart\n"; }, 10));
  EXPECT_NE(Log(id).find("recorded no outcome; the job will run again"), std::string::npos)
      << Log(id);
  ASSERT_EQ(env_->Kite({"rm", id}).exit_code, 0);
}

}  // namespace
}  // namespace kite::testing
