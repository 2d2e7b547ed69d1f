// Grid jobs to a real Globus GRAM5 gatekeeper, as a user runs them: globus-gatekeeper with
// globus-gram-job-manager and the fork LRM from Debian's packages
// (tests/fixtures/gt5/start-gatekeeper.sh), trusting a test CA made with `kite ca`; `kite proxy
// init`, `kite agent start`, `kite submit` of universe = grid jobs with `grid_resource = gt5
// localhost:PORT/jobmanager-fork`, `kite rm`, `kite wait`. Real kite-agent, kite-gridmanager and
// kite-gt5-helper processes, the gatekeeper's job managers and their jobs, GSI over real TLS.
//
// The gatekeeper listens on every address and cannot be told otherwise, so each test runs in a
// network namespace of its own that has only lo (made when the test starts, before any thread or
// child exists; everything the test starts inherits it). A test that cannot start the gatekeeper
// fails with the reason.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include "common/strings.h"
#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

class Gt5Gatekeeper : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // A network namespace with only lo for this test process and all it starts.
    ASSERT_EQ(::unshare(CLONE_NEWNET), 0) << "unshare(CLONE_NEWNET): " << strerror(errno);
    auto r = RunCommand({"ip", "link", "set", "lo", "up"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  void SetUp() override {
    std::filesystem::create_directories(env_.home());
    std::string ca = env_.home() + "/ca";
    env_.AddEnv("X509_USER_PROXY=" + env_.dir() + "/x509up");
    env_.AddEnv("X509_CERT_DIR=" + ca + "/certificates");
    std::vector<std::string> proxy = {"proxy",
                                      "init",
                                      "-q",
                                      "--cert",
                                      env_.dir() + "/globus/usercert.pem",
                                      "--key",
                                      env_.dir() + "/globus/userkey.pem",
                                      "--out",
                                      env_.dir() + "/x509up"};
    for (const auto& flag : ProxyFlags()) proxy.push_back(flag);
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"ca", "init", "--ca", ca},
             {"ca", "issue-host", "--ca", ca, "--out", env_.dir() + "/host", "localhost"},
             {"ca", "issue-user", "--ca", ca, "--out", env_.dir() + "/globus", "CN=Gt5 Tester"},
             proxy}) {
      auto r = env_.Kite(args);
      ASSERT_EQ(r.exit_code, 0) << args[0] << " " << args[1] << ": " << r.out << r.err;
    }
    gk_dir_ = env_.dir() + "/gk";
    auto r = RunCommand({std::string(KITE_SOURCE_DIR) + "/tests/fixtures/gt5/start-gatekeeper.sh",
                         gk_dir_, ca, env_.dir() + "/host"},
                        GatekeeperEnv());
    ASSERT_EQ(r.exit_code, 0) << "the gatekeeper did not start:\n" << r.out << r.err;
    started_ = true;
    contact_ = std::string(Trim(r.out));
    WriteFile(env_.home() + "/config.toml", "[grid]\nprobe_interval = 1\n");
    env_.StartAgent();
  }

  void TearDown() override {
    if (HasFailure()) {
      std::string text = ReadFileOr(env_.home() + "/gridmanager.log");
      std::fprintf(stderr, "--- gridmanager.log (tail):\n%s\n",
                   text.substr(text.size() > 4000 ? text.size() - 4000 : 0).c_str());
      std::string g = ReadFileOr(gk_dir_ + "/log/gatekeeper.log");
      std::fprintf(stderr, "--- gatekeeper.log (tail):\n%s\n",
                   g.substr(g.size() > 2000 ? g.size() - 2000 : 0).c_str());
    }
    env_.StopAgent();
    if (started_) {
      auto r = RunCommand(
          {std::string(KITE_SOURCE_DIR) + "/tests/fixtures/gt5/stop-gatekeeper.sh", gk_dir_});
      EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    }
  }

  // GRAM5 takes only RSA proxies (docs/grid-gt5.md).
  virtual std::vector<std::string> ProxyFlags() const { return {"--bits", "2048"}; }
  // The gatekeeper's settings (tests/fixtures/gt5/start-gatekeeper.sh): our identity mapped.
  virtual std::vector<std::string> GatekeeperEnv() const {
    return {"GT5_ALLOW_DNS=/O=Grid/OU=Kite/CN=Gt5 Tester"};
  }

  std::string Sub(const std::string& body) const {
    return "universe = grid\ngrid_resource = gt5 " + contact_ + "\nlog = job.log\n" + body;
  }
  void WaitDone(int cluster, int seconds = 120) const {
    auto r = env_.Kite({"wait", "--timeout", std::to_string(seconds), std::to_string(cluster)});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << env_.Kite({"q", "-nobatch"}).out;
  }
  std::string Attr(const std::string& id, const std::string& attr, bool history) const {
    return env_.JobAttr(id, attr, history);
  }
  int Processes(const std::string& word) const {
    auto r = RunCommand({"pgrep", "-c", "-f", word});
    return std::atoi(r.out.c_str());
  }
  std::string HoldReasonOnceHeld(const std::string& id, double seconds) const {
    bool held = WaitUntil([&] { return Attr(id, "JobStatus", false) == "5"; }, seconds);
    EXPECT_TRUE(held) << env_.Kite({"q", "-nobatch"}).out;
    return held ? Attr(id, "HoldReason", false) : "";
  }
  pid_t Pid(const std::string& pattern) const {
    auto r = RunCommand({"pgrep", "-o", "-f", pattern});
    return r.exit_code == 0 ? std::atoi(r.out.c_str()) : 0;
  }
  pid_t GridmanagerPid() const { return Pid("kite-gridmanager --home " + env_.home()); }

  KiteEnv env_{"gt5"};
  std::string gk_dir_;
  std::string contact_;
  bool started_ = false;
};

TEST_F(Gt5Gatekeeper, JobsWithStagedInputRunAtTheSiteAndTheirOutputAndExactExitCodesComeBack) {
  env_.Write("analyse.sh",
             "#!/bin/sh\n"
             "echo \"args: $*\"\n"
             "wc -l < in.dat\n"
             "cat\n"
             "echo \"to stderr\" >&2\n"
             "mkdir -p sub && seq 1 \"$1\" > sub/result.dat\n"
             "echo \"checksum $(sum < in.dat)\" > summary.txt\n"
             "exit \"$1\"\n",
             0755);
  std::string lines;
  for (int i = 0; i < 1000; ++i) lines += "line " + std::to_string(i) + "\n";
  env_.Write("in.dat", lines);
  env_.Write("stdin.txt", "from stdin\n");
  std::filesystem::create_directories(env_.dir() + "/sums");
  int c =
      env_.Submit(Sub("executable = analyse.sh\narguments = $(code) two\n"
                      "transfer_input_files = in.dat\ninput = stdin.txt\n"
                      "output = out.$(Process)\nerror = err.$(Process)\n"
                      "transfer_output_files = sub/result.dat, summary.txt\n"
                      "transfer_output_remaps = \"result.dat = result.$(Process).dat; "
                      "summary.txt = sums/summary.$(Process)\"\n"
                      "queue code in (0, 3)\n"));
  WaitDone(c);
  for (int p = 0; p < 2; ++p) {
    std::string id = std::to_string(c) + "." + std::to_string(p);
    EXPECT_EQ(Attr(id, "JobStatus", true), "4") << id;
    EXPECT_EQ(Attr(id, "ExitCode", true), std::to_string(p * 3)) << id;
    EXPECT_EQ(ReadFileOr(env_.dir() + "/out." + std::to_string(p)),
              "args: " + std::to_string(p * 3) + " two\n1000\nfrom stdin\n");
    EXPECT_EQ(ReadFileOr(env_.dir() + "/err." + std::to_string(p)), "to stderr\n");
    EXPECT_EQ(ReadFileOr(env_.dir() + "/result." + std::to_string(p) + ".dat"),
              p == 0 ? "" : "1\n2\n3\n");
    auto sum = RunCommand({"sh", "-c", "sum < " + env_.dir() + "/in.dat"});
    EXPECT_EQ(ReadFileOr(env_.dir() + "/sums/summary." + std::to_string(p)), "checksum " + sum.out);
    // GRAM's job contact: the job manager's URL.
    EXPECT_TRUE(StartsWith(Trim(Attr(id, "GridJobId", true)), "\"https://"))
        << Attr(id, "GridJobId", true);
  }
  std::string log = ReadFileOr(env_.dir() + "/job.log");
  for (const char* code : {"000 (", "027 (", "001 (", "005 ("}) {
    EXPECT_NE(log.find(code), std::string::npos) << code << " missing in\n" << log;
  }
  EXPECT_NE(log.find("return value 3"), std::string::npos) << log;
}

// `kite rm` of a running job has the job manager cancel it: its process at the site is gone.
TEST_F(Gt5Gatekeeper, ARemovedJobIsKilledAtTheSite) {
  int c =
      env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\n"
                      "arguments = \"-c 'sleep 302 && touch never'\"\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return Processes("sleep 302") > 0; }, 90))
      << env_.Kite({"q", "-grid"}).out;
  ASSERT_TRUE(WaitUntil([&] { return Attr(id, "JobStatus", false) == "2"; }, 30));
  auto q = env_.Kite({"q", "-grid"});
  EXPECT_NE(q.out.find("gt5->jobmanager-fork"), std::string::npos) << q.out;
  auto r = env_.Kite({"rm", id});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_TRUE(WaitUntil([&] { return Attr(id, "JobStatus", true) == "3"; }, 90))
      << env_.Kite({"q", "-grid"}).out;
  EXPECT_TRUE(WaitUntil([&] { return Processes("sleep 302") == 0; }, 30))
      << "the job's process still runs at the site";
}

TEST_F(Gt5Gatekeeper, AJobTheSiteCannotRunIsHeldWithGramsReason) {
  int c = env_.Submit(Sub("executable = /no/such/program\ntransfer_executable = false\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  std::string reason = HoldReasonOnceHeld(id, 120);
  EXPECT_NE(reason.find("GRAM error"), std::string::npos) << reason;
  EXPECT_NE(reason.find("executable"), std::string::npos) << reason;
}

// A gatekeeper whose grid-mapfile does not hold our identity.
class Gt5GatekeeperForSomeoneElse : public Gt5Gatekeeper {
 protected:
  std::vector<std::string> GatekeeperEnv() const override {
    return {"GT5_ALLOW_DNS=/O=Grid/OU=Kite/CN=Somebody Else"};
  }
};

TEST_F(Gt5GatekeeperForSomeoneElse, JobsOfAnIdentityTheSiteDoesNotMapAreHeldWithItsRefusal) {
  int c = env_.Submit(Sub("executable = /bin/true\ntransfer_executable = false\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  std::string reason = HoldReasonOnceHeld(id, 90);
  EXPECT_NE(reason.find("GRAM error 7"), std::string::npos) << reason;
  // The gatekeeper refuses the unmapped identity during authentication; GRAM says no more.
  EXPECT_NE(reason.find("authentication with the remote server failed"), std::string::npos)
      << reason;
}

// Kite's default proxy (EC P-256) cannot be used with GRAM5: its gatekeeper makes the delegated
// key the size of the presented one and its client will not sign with ECDSA. Jobs are held with
// what to do, before anything reaches the gatekeeper.
class Gt5GatekeeperWithAnEcProxy : public Gt5Gatekeeper {
 protected:
  std::vector<std::string> ProxyFlags() const override { return {}; }
};

TEST_F(Gt5GatekeeperWithAnEcProxy, JobsAreHeldSayingAnRsaProxyIsNeeded) {
  int c = env_.Submit(Sub("executable = /bin/true\ntransfer_executable = false\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  std::string reason = HoldReasonOnceHeld(id, 90);
  EXPECT_NE(reason.find("kite proxy init --bits 2048"), std::string::npos) << reason;
  EXPECT_EQ(ReadFileOr(gk_dir_ + "/log/gatekeeper.log").find("Authenticated globus user"),
            std::string::npos)
      << "the gatekeeper was contacted";
}

// GRAM's two-phase commit makes a resent submit harmless: a job is committed only once its
// contact is recorded, and an uncommitted one never runs. The gridmanager (with its helper) and
// then the helper alone are killed (-9) over and over while jobs are submitted, committed and
// run; every job runs exactly once (each appends a line to a file of its own) and its output
// comes back whole.
TEST_F(Gt5Gatekeeper, EveryJobRunsExactlyOnceWhileTheGridmanagerAndItsHelperAreKilled) {
  constexpr int kJobs = 10;
  std::string side = env_.dir() + "/side";
  std::filesystem::create_directories(side);
  std::filesystem::permissions(side, std::filesystem::perms::all);  // the site's account writes
  env_.Write("in.txt", "input for every job\n");
  int c =
      env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\n"
                      "arguments = \"-c 'echo ran >> " +
                      side +
                      "/ran.$(Process); cat in.txt; sleep 3; echo done $(Process)'\"\n"
                      "transfer_input_files = in.txt\noutput = out.$(Process)\n"
                      "queue " +
                      std::to_string(kJobs) + "\n"));
  int kills = 0;
  auto queue_empty = [&] {
    return env_.Kite({"q", "-json", std::to_string(c)}).out.find("\"ProcId\"") == std::string::npos;
  };
  for (double after : {0.5, 1.0, 1.5, 2.5}) {
    pid_t pid = 0;
    bool empty = false;
    ASSERT_TRUE(WaitUntil(
        [&] {
          pid = GridmanagerPid();
          if (pid == 0) empty = queue_empty();
          return pid != 0 || empty;
        },
        90));
    if (empty) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(after * 1000)));
    if (::kill(pid, SIGKILL) == 0) ++kills;
  }
  // Then the helper alone: the gridmanager starts another.
  for (int i = 0; i < 2; ++i) {
    pid_t helper = 0;
    if (!WaitUntil([&] { return (helper = Pid("kite-gt5-helper")) != 0 || queue_empty(); }, 60) ||
        helper == 0) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    if (::kill(helper, SIGKILL) == 0) ++kills;
  }
  WaitDone(c, 240);
  EXPECT_GE(kills, 3);
  for (int p = 0; p < kJobs; ++p) {
    std::string id = std::to_string(c) + "." + std::to_string(p);
    EXPECT_EQ(ReadFileOr(side + "/ran." + std::to_string(p)), "ran\n") << id << " ran not once";
    EXPECT_EQ(ReadFileOr(env_.dir() + "/out." + std::to_string(p)),
              "input for every job\ndone " + std::to_string(p) + "\n")
        << id;
    EXPECT_EQ(Attr(id, "ExitCode", true), "0") << id;
  }
}

}  // namespace
}  // namespace kite::testing
