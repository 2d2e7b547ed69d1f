// Grid jobs to a real ARC CE, as a user runs them: A-REX 6.17 from Debian's packages on loopback
// (tests/fixtures/arex/start-arex.sh) with its REST interface and the fork LRM, trusting a test
// CA made with `kite ca`; `kite proxy init`, `kite agent start`, `kite submit` of universe = grid
// jobs with `grid_resource = arc https://localhost:PORT/arex`, `kite rm`, `kite wait`. Real
// kite-agent and kite-gridmanager processes, the CE's own arched and its jobs, real TLS. Each test
// starts its own CE; one that cannot start fails the test with the reason.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

class ArcCe : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(env_.home());
    std::string ca = env_.home() + "/ca";
    env_.AddEnv("X509_USER_PROXY=" + env_.dir() + "/x509up");
    env_.AddEnv("X509_CERT_DIR=" + ca + "/certificates");
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"ca", "init", "--ca", ca},
             {"ca", "issue-host", "--ca", ca, "--out", env_.dir() + "/host", "localhost"},
             {"ca", "issue-user", "--ca", ca, "--out", env_.dir() + "/globus", "CN=Arc Tester"},
             {"proxy", "init", "-q", "--cert", env_.dir() + "/globus/usercert.pem", "--key",
              env_.dir() + "/globus/userkey.pem", "--out", env_.dir() + "/x509up"}}) {
      auto r = env_.Kite(args);
      ASSERT_EQ(r.exit_code, 0) << args[0] << " " << args[1] << ": " << r.out << r.err;
    }
    ce_dir_ = env_.dir() + "/ce";
    auto r = RunCommand({std::string(KITE_SOURCE_DIR) + "/tests/fixtures/arex/start-arex.sh",
                         ce_dir_, ca, env_.dir() + "/host"},
                        {"AREX_PROBE_CRED=" + env_.dir() + "/x509up"});
    ASSERT_EQ(r.exit_code, 0) << "the ARC CE did not start:\n" << r.out << r.err;
    started_ = true;
    std::smatch m;
    std::string out = r.out;
    ASSERT_TRUE(std::regex_search(out, m, std::regex("https://[^\\s]+/arex"))) << r.out;
    endpoint_ = m[0];
    WriteFile(env_.home() + "/config.toml", "[grid]\nprobe_interval = 1\n");
    env_.StartAgent();
  }

  void TearDown() override {
    if (HasFailure()) {
      std::string text = ReadFileOr(env_.home() + "/gridmanager.log");
      std::fprintf(stderr, "--- gridmanager.log (tail):\n%s\n",
                   text.substr(text.size() > 4000 ? text.size() - 4000 : 0).c_str());
      for (const char* log : {"/arex.log", "/log/arex.log"}) {
        std::string a = ReadFileOr(ce_dir_ + log);
        if (!a.empty()) {
          std::fprintf(stderr, "--- %s (tail):\n%s\n", log,
                       a.substr(a.size() > 3000 ? a.size() - 3000 : 0).c_str());
        }
      }
    }
    env_.StopAgent();
    if (started_) {
      auto r =
          RunCommand({std::string(KITE_SOURCE_DIR) + "/tests/fixtures/arex/stop-arex.sh", ce_dir_});
      EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    }
  }

  std::string Sub(const std::string& body) const {
    return "universe = grid\ngrid_resource = arc " + endpoint_ + "\nlog = job.log\n" + body;
  }
  void WaitDone(int cluster, int seconds = 120) const {
    auto r = env_.Kite({"wait", "--timeout", std::to_string(seconds), std::to_string(cluster)});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << env_.Kite({"q", "-nobatch"}).out;
  }
  std::string Attr(const std::string& id, const std::string& attr, bool history) const {
    auto r = env_.Kite({history ? "history" : "q", "-json", id});
    std::smatch m;
    std::regex re("\"" + attr + "\": (\"(?:[^\"\\\\]|\\\\.)*\"|[^,\n]+)");
    return std::regex_search(r.out, m, re) ? std::string(m[1]) : "";
  }
  // Processes whose command line holds `word` (the CE's jobs run as its mapped account).
  int Processes(const std::string& word) const {
    auto r = RunCommand({"pgrep", "-c", "-f", word});
    return std::atoi(r.out.c_str());
  }

  KiteEnv env_{"arc"};
  std::string ce_dir_;
  std::string endpoint_;
  bool started_ = false;
};

TEST_F(ArcCe, JobsWithStagedInputRunAtTheCeAndTheirOutputAndExactExitCodesComeBack) {
  env_.Write("analyse.sh",
             "#!/bin/sh\n"
             "echo \"args: $*\"\n"
             "wc -l < in.dat\n"
             "cat\n"
             "echo \"to stderr\" >&2\n"
             "exit \"$1\"\n",
             0755);
  std::string lines;
  for (int i = 0; i < 1000; ++i) lines += "line " + std::to_string(i) + "\n";
  env_.Write("in.dat", lines);
  env_.Write("stdin.txt", "from stdin\n");
  int c =
      env_.Submit(Sub("executable = analyse.sh\narguments = $(code) two\n"
                      "transfer_input_files = in.dat\ninput = stdin.txt\n"
                      "output = out.$(Process)\nerror = err.$(Process)\n"
                      "queue code in (0, 3)\n"));
  WaitDone(c);
  for (int p = 0; p < 2; ++p) {
    std::string id = std::to_string(c) + "." + std::to_string(p);
    EXPECT_EQ(Attr(id, "JobStatus", true), "4") << id;
    EXPECT_EQ(Attr(id, "ExitCode", true), std::to_string(p * 3)) << id;
    EXPECT_EQ(ReadFileOr(env_.dir() + "/out." + std::to_string(p)),
              "args: " + std::to_string(p * 3) + " two\n1000\nfrom stdin\n");
    EXPECT_EQ(ReadFileOr(env_.dir() + "/err." + std::to_string(p)), "to stderr\n");
    // The CE's own id of the job, as a URL under its REST interface.
    EXPECT_NE(Attr(id, "GridJobId", true).find(endpoint_ + "/rest/1.0/jobs/"), std::string::npos)
        << Attr(id, "GridJobId", true);
  }
  std::string log = ReadFileOr(env_.dir() + "/job.log");
  for (const char* code : {"000 (", "027 (", "001 (", "005 ("}) {
    EXPECT_NE(log.find(code), std::string::npos) << code << " missing in\n" << log;
  }
  EXPECT_NE(log.find("return value 3"), std::string::npos) << log;
}

// `kite rm` of a running job has the CE kill it: the CE records the cancel as the job's end.
// Debian's A-REX 6.17 fork LRM marks the job KILLED without stopping its processes (its watcher
// runs with signals blocked; tests/fixtures/arex/start-arex.sh says more), so the processes are
// not what this test can look at; on a batch LRM the kill reaches them.
TEST_F(ArcCe, ARemovedJobIsKilledAtTheCe) {
  int c =
      env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\n"
                      "arguments = \"-c 'sleep 301 && touch never'\"\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return Processes("sleep 301") > 0; }, 90))
      << env_.Kite({"q", "-grid"}).out;
  ASSERT_TRUE(WaitUntil([&] { return Attr(id, "JobStatus", false) == "2"; }, 30));
  auto q = env_.Kite({"q", "-grid"});
  EXPECT_NE(q.out.find("arc"), std::string::npos) << q.out;
  auto r = env_.Kite({"rm", id});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // It leaves the queue once the CE has confirmed the kill.
  ASSERT_TRUE(WaitUntil([&] { return Attr(id, "JobStatus", true) == "3"; }, 90))
      << env_.Kite({"q", "-grid"}).out;
  std::string jobs_log = ReadFileOr(ce_dir_ + "/log/arex-jobs.log");
  EXPECT_NE(jobs_log.find("failure: \"Job is canceled by external request"), std::string::npos)
      << jobs_log;
  if (Processes("sleep 301") > 0) {
    std::printf("note: the CE's fork LRM left the killed job's processes running (A-REX 6.17)\n");
  }
}

TEST_F(ArcCe, AJobTheCeCannotRunIsHeldWithTheCesReason) {
  int c = env_.Submit(Sub("executable = /no/such/program\ntransfer_executable = false\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return Attr(id, "JobStatus", false) == "5"; }, 120))
      << env_.Kite({"q", "-nobatch"}).out;
  // The CE's own words: the fork LRM says no more of a program it cannot start.
  std::string reason = Attr(id, "HoldReason", false);
  EXPECT_NE(reason.find("LRMS error: (-1) Job died unexpectedly"), std::string::npos) << reason;
}

}  // namespace
}  // namespace kite::testing
