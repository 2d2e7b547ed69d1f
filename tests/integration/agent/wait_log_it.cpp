// condor_wait's form of `kite wait`: a user log written by the real agent, followed by the real
// `kite` until the jobs in it end; the timeout, job-id and -num forms; no agent needed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class WaitLog : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = std::make_unique<KiteEnv>("wait-log");
    env_->StartAgent();
    log_ = env_->dir() + "/jobs.log";
  }
  // A cluster of local jobs running `sh -c SCRIPT`, logging to jobs.log.
  std::string Submit(const std::string& script, int count = 1) {
    return std::to_string(
        env_->Submit("universe = local\nexecutable = /bin/sh\narguments = \"-c '" + script +
                     "'\"\nlog = jobs.log\nqueue " + std::to_string(count) + "\n"));
  }
  std::unique_ptr<KiteEnv> env_;
  std::string log_;
};

TEST_F(WaitLog, ReturnsOnceEveryJobInTheLogHasEnded) {
  std::string c = Submit("sleep 1", 3);
  auto start = std::chrono::steady_clock::now();
  auto r = env_->Kite({"wait", "jobs.log"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "All jobs done.")) << r.out;
  EXPECT_GE(SecondsSince(start), 0.9);  // it did wait for the jobs
  for (int p = 0; p < 3; ++p) EXPECT_EQ(env_->JobStatus(c + "." + std::to_string(p)), 4) << p;
  // -status shows each job's events; the whole log is read again, so it ends at once.
  r = env_->Kite({"wait", "-status", log_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, c + ".2: Job terminated.")) << r.out;
  EXPECT_TRUE(Has(r.out, c + ".0: Job submitted from host")) << r.out;
}

TEST_F(WaitLog, TimesOutOnARunningJobAndEndsWhenItIsRemoved) {
  std::string c = Submit("sleep 300");
  auto start = std::chrono::steady_clock::now();
  auto r = env_->Kite({"wait", "-wait", "1", "jobs.log"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Has(r.err, "timed out: 0 of 1 job(s) ended; waiting for " + c + ".0")) << r.err;
  EXPECT_GE(SecondsSince(start), 0.9);
  EXPECT_LT(SecondsSince(start), 10);
  // A removed job has ended too (009, aborted).
  ASSERT_EQ(env_->Kite({"rm", c}).exit_code, 0);
  r = env_->Kite({"wait", "-wait", "20", "jobs.log"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(WaitLog, JobIdAndNumChooseWhatToWaitFor) {
  std::string quick = Submit("exit 0");
  std::string slow = Submit("sleep 300", 2);
  auto r = env_->Kite({"wait", "jobs.log", quick});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = env_->Kite({"wait", "-wait", "1", "jobs.log", slow + ".1"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(Has(r.err, "waiting for " + slow + ".1")) << r.err;
  EXPECT_FALSE(Has(r.err, slow + ".0")) << r.err;
  // -num 1: one job of the log has ended (the quick one), so that is enough.
  r = env_->Kite({"wait", "-num", "1", "-wait", "5", "jobs.log"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = env_->Kite({"wait", "-num", "2", "-wait", "1", "jobs.log"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  r = env_->Kite({"wait", "jobs.log", "999"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Has(r.err, "job 999 is not in user log jobs.log")) << r.err;
  ASSERT_EQ(env_->Kite({"rm", slow + ".0"}).exit_code, 0);
  r = env_->Kite({"wait", "-wait", "20", "jobs.log", slow + ".0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(env_->Kite({"rm", slow}).exit_code, 0);
}

TEST_F(WaitLog, BadInputIsAnErrorNamingIt) {
  env_->Write("job.sub", "executable = /bin/true\nqueue\n");
  struct Case {
    std::vector<std::string> args;
    const char* error;
  } cases[] = {
      {{"wait", "missing.log"}, "cannot read user log missing.log: No such file"},
      {{"wait", "job.sub"}, "user log job.sub: line 1: not a user log event"},
      {{"wait", "-wait", "1", "job.sub", "x"}, "'x' is not a job id"},
      {{"wait", "job.sub", "1", "2"}, "takes one user log and at most one job id"},
      {{"wait", "-num", "-1", "job.sub"}, "-num needs"},
  };
  for (auto& c : cases) {
    auto r = env_->Kite(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.error << ": " << r.err;
    EXPECT_TRUE(Has(r.err, c.error)) << c.error << ": " << r.err;
  }
}

// The log is all it reads: with no agent running, entries appended by hand are followed, and
// one still being written is waited on, not misread.
TEST(WaitLogNoAgent, FollowsALogAsItIsWritten) {
  KiteEnv env("wait-log-no-agent");
  std::string log = env.Write("htcondor.log",
                              "000 (041.000.000) 11/25 10:00:00 Job submitted from host: "
                              "<10.0.0.1:9618>\n...\n");
  std::atomic<bool> ended = false;
  CommandResult r;
  std::thread waiter([&] {
    r = env.Kite({"wait", "-wait", "60", log, "41"});
    ended = true;
  });
  auto append = [&](const std::string& text) {
    std::ofstream(log, std::ios::app) << text;
    std::this_thread::sleep_for(std::chrono::milliseconds(600));  // several polls
  };
  append("005 (041.000.000) 11/25 10:00:05 Job terminated.\n\t(1) Normal termination");
  EXPECT_FALSE(ended) << r.err;
  append(" (return value 0)\n..");
  EXPECT_FALSE(ended) << r.err;
  append(".\n");
  EXPECT_TRUE(WaitUntil([&] { return ended.load(); }, 10));
  waiter.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(env.AgentPid(), 0);
}

}  // namespace
}  // namespace kite::testing
