// Job semantics as an HTCondor user expects them: max_retries runs a failing job again up to its
// limit, and a job its exit policy reruns is not restarted in a tight loop.
#include <gtest/gtest.h>

#include <chrono>
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

}  // namespace
}  // namespace kite::testing
