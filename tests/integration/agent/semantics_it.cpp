// Job semantics as an HTCondor user expects them: max_retries runs a failing job again up to its
// limit, a job its exit policy reruns is not restarted in a tight loop, and a running job's
// memory and CPU use are in its ad, where a periodic_hold can read them.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

int Lines(const std::string& path) {
  std::istringstream in(ReadFileOr(path));
  int n = 0;
  for (std::string l; std::getline(in, l);) ++n;
  return n;
}

TEST(JobSemantics, MaxRetriesRunsAFailingJobOnceAndThenItsRetries) {
  KiteEnv env("sem-retries");
  env.StartAgent();
  std::string runs = env.dir() + "/runs";
  int c = env.Submit("universe = local\nexecutable = /bin/sh\narguments = \"-c 'echo x >> " + runs +
                     "; exit 42'\"\nmax_retries = 3\nqueue\n");
  auto r = env.Kite({"wait", std::to_string(c), "--timeout", "60"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Lines(runs), 4);  // the run and its three retries
  EXPECT_EQ(env.JobStatus(std::to_string(c) + ".0"), 4);
  auto h = env.Kite({"history", std::to_string(c), "-json"});
  EXPECT_NE(h.out.find("\"NumJobCompletions\": 4"), std::string::npos) << h.out;
}

TEST(JobSemantics, AJobItsPolicyRerunsBacksOffInsteadOfSpinning) {
  KiteEnv env("sem-backoff");
  env.StartAgent();
  std::string runs = env.dir() + "/runs";
  int c = env.Submit("universe = local\nexecutable = /bin/sh\narguments = \"-c 'echo x >> " + runs +
                     "; exit 1'\"\non_exit_remove = ExitCode == 0\nlog = job.log\nqueue\n");
  std::this_thread::sleep_for(std::chrono::seconds(5));
  int n = Lines(runs);
  EXPECT_GE(n, 2);
  EXPECT_LE(n, 5) << "restarted " << n << " times in 5 s";  // 1 + 2 + 4 s of waiting at most
  std::string log = ReadFileOr(env.dir() + "/job.log");
  EXPECT_NE(log.find("its exit policy runs it again; it waits"), std::string::npos) << log;
  env.Kite({"rm", std::to_string(c)});
}

TEST(JobSemantics, ARunningJobsMemoryUseIsInItsAdAndAMemoryPolicyHoldsIt) {
  KiteEnv env("sem-usage");
  std::filesystem::create_directories(env.home());
  WriteFile(env.home() + "/config.toml", "[agent]\nperiodic_interval = 0.5\n");
  env.StartAgent();
  // 60 MiB touched (so resident), and a busy loop for CPU time, then a long sleep.
  std::string prog = env.Write("grow.py",
                               "import time\n"
                               "b = bytearray(60 * 1024 * 1024)\n"
                               "for i in range(0, len(b), 4096): b[i] = 1\n"
                               "t = time.process_time()\n"
                               "while time.process_time() - t < 0.3: pass\n"
                               "time.sleep(120)\n");
  int c = env.Submit("universe = local\nexecutable = /usr/bin/python3\narguments = " + prog +
                     "\nperiodic_hold = MemoryUsage > 40\n"
                     "periodic_hold_reason = strcat(\"used \", MemoryUsage, \" MiB\")\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return env.JobStatus(id) == 5; }, 30)) << env.JobStatus(id);
  auto q = env.Kite({"q", id, "-json"});
  EXPECT_NE(q.out.find("\"HoldReason\": \"used "), std::string::npos) << q.out;
  for (const char* attr : {"\"MemoryUsage\"", "\"ResidentSetSize\"", "\"ImageSize\"",
                           "\"RemoteUserCpu\"", "\"RemoteSysCpu\""}) {
    EXPECT_NE(q.out.find(attr), std::string::npos) << attr << " missing in " << q.out;
  }
  auto rss = q.out.find("\"ResidentSetSize\": ");
  ASSERT_NE(rss, std::string::npos);
  EXPECT_GT(std::stol(q.out.substr(rss + 19)), 40 * 1024) << q.out;
}

}  // namespace
}  // namespace kite::testing
