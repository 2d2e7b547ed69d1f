// Local-universe jobs through the real agent: redirection, environment, exit codes, signals,
// hold/release/rm of running processes, policies, and the user log.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <memory>
#include <string>

#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

class LocalJobs : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = std::make_unique<KiteEnv>("local");
    // Policies every half second so the tests need not wait a minute.
    std::filesystem::create_directories(env_->home());
    WriteFile(env_->home() + "/config.toml", "[agent]\nperiodic_interval = 0.5\nkill_grace = 2\n");
    env_->StartAgent();
  }
  void WaitDone(int cluster, double seconds = 30) {
    auto r = env_->Kite({"wait", std::to_string(cluster), "--timeout", std::to_string(seconds)});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  bool WaitStatus(const std::string& id, int status, double seconds = 20) {
    return WaitUntil([&] { return env_->JobStatus(id) == status; }, seconds);
  }
  std::string HistoryJson(const std::string& id) {
    return env_->Kite({"history", id, "-json"}).out;
  }
  std::unique_ptr<KiteEnv> env_;
};

TEST_F(LocalJobs, RedirectionEnvironmentAndWorkingDirectory) {
  std::filesystem::create_directories(env_->dir() + "/work");
  env_->Write("work/in.txt", "line from stdin\n");
  int c = env_->Submit(R"(universe = local
executable = /bin/sh
arguments = "-c 'cat; echo ""$GREETING""; pwd; echo oops >&2; exit 7'"
environment = "GREETING='hello there'"
initialdir = work
input = in.txt
output = out.txt
error = err.txt
queue
)");
  ASSERT_GT(c, 0);
  WaitDone(c);
  EXPECT_EQ(ReadFileOr(env_->dir() + "/work/out.txt"),
            "line from stdin\nhello there\n" + env_->dir() + "/work\n");
  EXPECT_EQ(ReadFileOr(env_->dir() + "/work/err.txt"), "oops\n");
  auto h = HistoryJson(std::to_string(c) + ".0");
  EXPECT_NE(h.find("\"ExitCode\": 7"), std::string::npos) << h;
  EXPECT_NE(h.find("\"JobStatus\": 4"), std::string::npos) << h;
}

TEST_F(LocalJobs, SignalIsRecorded) {
  int c = env_->Submit(
      "universe = local\nexecutable = /bin/sh\n"
      "arguments = \"-c 'kill -9 $$'\"\nqueue\n");
  WaitDone(c);
  auto h = HistoryJson(std::to_string(c) + ".0");
  EXPECT_NE(h.find("\"ExitBySignal\": true"), std::string::npos) << h;
  EXPECT_NE(h.find("\"ExitSignal\": 9"), std::string::npos) << h;
}

TEST_F(LocalJobs, HoldReleaseAndRemoveActOnTheRunningProcess) {
  int c = env_->Submit(
      "universe = local\nexecutable = /bin/sh\n"
      "arguments = \"-c 'echo $$ >> pids; exec sleep 300'\"\nlog = job.log\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitStatus(id, 2));
  ASSERT_TRUE(WaitUntil([&] { return !ReadFileOr(env_->dir() + "/pids").empty(); }, 10));
  pid_t first = std::stoi(ReadFileOr(env_->dir() + "/pids"));
  EXPECT_EQ(kill(first, 0), 0);

  auto r = env_->Kite({"hold", id, "-reason", "testing hold"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(env_->JobStatus(id), 5);
  EXPECT_TRUE(WaitUntil([&] { return kill(first, 0) != 0; }, 10)) << "held job still runs";
  auto q = env_->Kite({"q", id, "-json"}).out;
  EXPECT_NE(q.find("\"HoldReason\": \"testing hold\""), std::string::npos) << q;
  EXPECT_NE(q.find("\"HoldReasonCode\": 1"), std::string::npos) << q;

  r = env_->Kite({"release", id});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitStatus(id, 2));
  ASSERT_TRUE(WaitUntil(
      [&] { return ReadFileOr(env_->dir() + "/pids").size() > std::to_string(first).size() + 1; },
      10));
  auto pids = ReadFileOr(env_->dir() + "/pids");
  pid_t second = std::stoi(pids.substr(pids.find('\n') + 1));
  EXPECT_EQ(kill(second, 0), 0);

  r = env_->Kite({"rm", id});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(WaitUntil([&] { return kill(second, 0) != 0; }, 10)) << "removed job still runs";
  WaitDone(c);
  EXPECT_EQ(env_->JobStatus(id), 3);
  auto log = ReadFileOr(env_->dir() + "/job.log");
  for (const char* ev : {"000 (", "001 (", "012 (", "013 (", "009 ("})
    EXPECT_NE(log.find(ev), std::string::npos) << "missing event " << ev << " in\n" << log;
  EXPECT_NE(log.find("Job was held.\n\ttesting hold\n\tCode 1 Subcode 0"), std::string::npos);
}

TEST_F(LocalJobs, OnExitRemoveFalseRunsAgainUntilItHolds) {
  // Fails twice, then succeeds: on_exit_remove keeps it queued until exit code 0.
  int c = env_->Submit(R"(universe = local
executable = /bin/sh
arguments = "-c 'echo run >> runs; n=`wc -l < runs`; [ $n -ge 3 ]'"
on_exit_remove = ExitCode == 0
queue
)");
  WaitDone(c);
  EXPECT_EQ(ReadFileOr(env_->dir() + "/runs"), "run\nrun\nrun\n");
  auto h = HistoryJson(std::to_string(c) + ".0");
  EXPECT_NE(h.find("\"NumJobStarts\": 3"), std::string::npos) << h;
}

TEST_F(LocalJobs, PeriodicHoldReleaseAndRemove) {
  int c = env_->Submit(R"(universe = local
executable = /bin/sleep
arguments = 300
periodic_hold = JobStatus == 2 && NumJobStarts == 1
periodic_release = NumHolds == 1
periodic_remove = NumJobStarts >= 2 && JobStatus == 2
queue
)");
  std::string id = std::to_string(c) + ".0";
  WaitDone(c, 40);
  EXPECT_EQ(env_->JobStatus(id), 3);
  auto log = env_->Kite({"log", id}).out;
  EXPECT_NE(log.find("The job attribute PeriodicHold expression"), std::string::npos) << log;
  EXPECT_NE(log.find("Job was released."), std::string::npos) << log;
  EXPECT_NE(log.find("The job attribute PeriodicRemove expression"), std::string::npos) << log;
}

TEST_F(LocalJobs, OnExitHoldHoldsWithPolicyCode) {
  int c = env_->Submit(
      "universe = local\nexecutable = /bin/false\non_exit_hold = ExitCode != 0\n"
      "queue\n");
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitStatus(id, 5));
  auto q = env_->Kite({"q", id, "-json"}).out;
  EXPECT_NE(q.find("\"HoldReasonCode\": 3"), std::string::npos) << q;
  EXPECT_NE(q.find("OnExitHold"), std::string::npos) << q;
}

TEST_F(LocalJobs, SubmittedOnHoldWaitsForRelease) {
  int c = env_->Submit("universe = local\nexecutable = /bin/true\nhold = true\nqueue 2\n");
  std::string id = std::to_string(c) + ".1";
  EXPECT_EQ(env_->JobStatus(id), 5);
  auto q = env_->Kite({"q", id, "-json"}).out;
  EXPECT_NE(q.find("\"HoldReasonCode\": 15"), std::string::npos) << q;
  ASSERT_EQ(env_->Kite({"release", std::to_string(c)}).exit_code, 0);
  WaitDone(c);
  EXPECT_EQ(env_->JobStatus(id), 4);
}

TEST_F(LocalJobs, ExecutableThatCannotRunIsHeldWithReason) {
  env_->Write("not-exec.sh", "#!/bin/sh\necho hi\n", 0755);
  // Submitted on hold so it cannot start before the program is gone, as a user deleting it
  // before the job's turn would make it.
  int c = env_->Submit("universe = local\nexecutable = not-exec.sh\nhold = true\nqueue\n");
  ASSERT_GT(c, 0);
  std::filesystem::remove(env_->dir() + "/not-exec.sh");
  std::string id = std::to_string(c) + ".0";
  ASSERT_EQ(env_->Kite({"release", id}).exit_code, 0);
  ASSERT_TRUE(WaitStatus(id, 5));
  auto q = env_->Kite({"q", id, "-json"}).out;
  EXPECT_NE(q.find("No such file or directory"), std::string::npos) << q;
  EXPECT_NE(q.find("\"HoldReasonCode\": 6"), std::string::npos) << q;
}

}  // namespace
}  // namespace kite::testing
