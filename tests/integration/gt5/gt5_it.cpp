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
    // A helper outlives its gridmanager while its site's jobs may still stage files.
    RunCommand({"pkill", "-KILL", "-f", "kite-gt5-helper " + env_.dir()});
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
  // None of the cluster's jobs is idle or running (all ended, or held): no gridmanager is
  // started for it any more.
  bool NothingActive(int cluster) const {
    auto r = env_.Kite({"q", "-json", std::to_string(cluster)});
    return r.out.find("\"JobStatus\": 1") == std::string::npos &&
           r.out.find("\"JobStatus\": 2") == std::string::npos;
  }
  // side_: a folder outside the site's directories where jobs leave side-effect files.
  void MakeSide() {
    side_ = env_.dir() + "/side";
    std::filesystem::create_directories(side_);
    std::filesystem::permissions(side_, std::filesystem::perms::all);  // the site's account writes
  }
  // One job that appends "ran" to side_/ran, waits until Go(), then runs `then`; `extra` adds
  // submit commands. Its stdout goes to out.txt. The job's id.
  std::string SubmitWaitingJob(const std::string& then, const std::string& extra = "") {
    MakeSide();
    int c =
        env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\n"
                        "arguments = \"-c 'echo ran >> " +
                        side_ + "/ran; while [ ! -e " + side_ + "/go ]; do sleep 0.2; done; " +
                        then + "'\"\n" + extra + "output = out.txt\nqueue\n"));
    return std::to_string(c) + ".0";
  }
  void Go() const { WriteFile(side_ + "/go", ""); }
  // `n` jobs that each append "ran" to side_/ran.PROC (outside the site's directories), read a
  // staged input, sleep 3 s and say they are done: the cluster id.
  int SubmitMarkedJobs(int n) {
    MakeSide();
    env_.Write("in.txt", "input for every job\n");
    return env_.Submit(
        Sub("executable = /bin/sh\ntransfer_executable = false\n"
            "arguments = \"-c 'echo ran >> " +
            side_ +
            "/ran.$(Process); cat in.txt; sleep 3; echo done $(Process)'\"\n"
            "transfer_input_files = in.txt\noutput = out.$(Process)\n"
            "queue " +
            std::to_string(n) + "\n"));
  }
  // Waits until none of the cluster's `n` marked jobs is idle or running, then checks each: it
  // ran exactly once, and either completed with its whole output and exit code 0, or is held
  // saying its output did not come back. Returns how many are held.
  int CheckMarkedJobs(int c, int n) const {
    EXPECT_TRUE(WaitUntil([&] { return NothingActive(c); }, 240))
        << env_.Kite({"q", "-nobatch"}).out;
    int held = 0;
    for (int p = 0; p < n; ++p) {
      std::string id = std::to_string(c) + "." + std::to_string(p);
      EXPECT_EQ(ReadFileOr(side_ + "/ran." + std::to_string(p)), "ran\n") << id << " ran not once";
      if (Attr(id, "JobStatus", false) == "5") {
        ++held;
        std::string reason = Attr(id, "HoldReason", false);
        std::printf("held %s: %s\n", id.c_str(), reason.c_str());
        EXPECT_NE(reason.find("stage-out-failed"), std::string::npos) << id << ": " << reason;
        continue;
      }
      EXPECT_EQ(Attr(id, "JobStatus", true), "4") << id;
      std::string out = ReadFileOr(env_.dir() + "/out." + std::to_string(p));
      std::string want = "input for every job\ndone " + std::to_string(p) + "\n";
      EXPECT_EQ(out, want) << id << " completed without its output";
      EXPECT_EQ(Attr(id, "ExitCode", true), "0") << id;
    }
    return held;
  }
  std::string side_;

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
  EXPECT_NE(log.find("GridResource: gt5 "), std::string::npos) << log;
}

// GRAM's state callbacks, not probes, bring a job's news: with probes ten minutes apart (the
// default is one), a job is seen running, then done with its output, within seconds of each.
TEST_F(Gt5Gatekeeper, CallbacksBringAJobsNewsWithoutWaitingForAProbe) {
  env_.StopAgent();
  WriteFile(env_.home() + "/config.toml", "[grid]\nprobe_interval = 600\n");
  env_.StartAgent();
  int c =
      env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\n"
                      "arguments = \"-c 'sleep 4; echo finished'\"\noutput = out.txt\n"
                      "queue 3\n"));
  auto start = std::chrono::steady_clock::now();
  WaitDone(c, 90);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("three 4-second jobs done in %.1f s with probes 600 s apart\n", took);
  EXPECT_LT(took, 60) << "only a probe could have brought the end";
  for (int p = 0; p < 3; ++p) {
    std::string id = std::to_string(c) + "." + std::to_string(p);
    EXPECT_EQ(Attr(id, "JobStatus", true), "4") << id;
  }
  EXPECT_EQ(ReadFileOr(env_.dir() + "/out.txt"), "finished\n");
  std::string log = ReadFileOr(env_.dir() + "/job.log");
  EXPECT_NE(log.find("001 ("), std::string::npos) << "never seen running\n" << log;
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

// An output file the job did not make, and an output name the job made a folder (GRAM stages files
// only: its copy of a folder sends an empty file and then fails), each hold their job with a
// stage-out failure, never an empty file taken for the output; neither job runs a second time.
TEST_F(Gt5Gatekeeper, AnOutputFileTheJobDidNotMakeOrMadeAFolderHoldsItsJob) {
  MakeSide();
  int c =
      env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\n"
                      "arguments = \"-c 'echo ran >> " +
                      side_ +
                      "/ran.$(Process); mkdir -p res && echo a > res/a.txt'\"\n"
                      "transfer_output_files = $(name)\nqueue name in (never.txt, res)\n"));
  for (int p = 0; p < 2; ++p) {
    std::string id = std::to_string(c) + "." + std::to_string(p);
    std::string reason = HoldReasonOnceHeld(id, 240);
    std::printf("held %s: %s\n", id.c_str(), reason.c_str());
    EXPECT_NE(reason.find("stage-out-failed"), std::string::npos) << id << ": " << reason;
    EXPECT_EQ(ReadFileOr(side_ + "/ran." + std::to_string(p)), "ran\n") << id << " ran not once";
  }
}

// A job manager that dies under a running job (kill -9) is restarted from its saved state through
// the gatekeeper (GRAM's jm_restart): the job goes on and ends once. The restarted job manager of
// Debian 12's GRAM5 (globus-gram-job-manager 15.8) then ends the job without sending back its
// stdout, even when told its destination again (STDIO_UPDATE): Kite holds the job saying so
// rather than report an empty output as the job's, and does not run it again.
TEST_F(Gt5Gatekeeper, AJobManagerKilledUnderARunningJobIsRestartedAndTheJobRunsOnce) {
  std::string side = env_.dir() + "/side";
  std::filesystem::create_directories(side);
  std::filesystem::permissions(side, std::filesystem::perms::all);
  int c = env_.Submit(Sub(
      "executable = /bin/sh\ntransfer_executable = false\n"
      "arguments = \"-c 'echo ran >> " +
      side + "/ran; while [ ! -e " + side + "/go ]; do sleep 0.2; done; echo finished >> " + side +
      "/ran; echo finished'\"\n"
      "output = out.txt\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return Attr(id, "JobStatus", false) == "2"; }, 90));
  pid_t jm = Pid("globus-job-manager -conf " + gk_dir_);
  ASSERT_NE(jm, 0);
  ASSERT_EQ(::kill(jm, SIGKILL), 0);
  // The next probes find no job manager; the link restarts one.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ReadFileOr(env_.home() + "/gridmanager.log").find("restarted the job manager") !=
               std::string::npos;
      },
      90))
      << "no restart of the job manager";
  WriteFile(side + "/go", "");
  bool ended = WaitUntil(
      [&] { return Attr(id, "JobStatus", false) == "5" || Attr(id, "JobStatus", true) == "4"; },
      90);
  ASSERT_TRUE(ended) << env_.Kite({"q", "-nobatch"}).out;
  // Once, to its end.
  EXPECT_EQ(ReadFileOr(side + "/ran"), "ran\nfinished\n");
  if (Attr(id, "JobStatus", true) == "4") {
    // A job manager that does send the output back.
    EXPECT_EQ(ReadFileOr(env_.dir() + "/out.txt"), "finished\n");
    std::printf("the restarted job manager sent the job's output back\n");
  } else {
    std::string reason = Attr(id, "HoldReason", false);
    EXPECT_NE(reason.find("restarted while it ran and its output did not come back"),
              std::string::npos)
        << reason;
    EXPECT_NE(reason.find("exit code 0"), std::string::npos) << reason;
    std::printf("held: %s\n", reason.c_str());
  }
}

// The job manager finds no file server when it sends a job's output (the helper died, and the
// gridmanager, stopped, has not started it again): GRAM fails the job with "failed to open
// stdout". The link stops and restarts that job manager, which sends stdout and the output file
// again; the job completes with both, having run once.
TEST_F(Gt5Gatekeeper, OutputThatFoundNoFileServerIsSentAgainByARestartedJobManager) {
  std::string id = SubmitWaitingJob("seq 1 5 > result.txt; echo finished",
                                    "transfer_output_files = result.txt\n");
  ASSERT_TRUE(WaitUntil([&] { return Attr(id, "JobStatus", false) == "2"; }, 90));
  pid_t gm = GridmanagerPid();
  pid_t helper = Pid("kite-gt5-helper " + env_.dir());
  ASSERT_NE(gm, 0);
  ASSERT_NE(helper, 0);
  ASSERT_EQ(::kill(gm, SIGSTOP), 0);
  ASSERT_EQ(::kill(helper, SIGKILL), 0);
  Go();
  // The job manager's stage-out fails (nothing listens at the helper's port).
  bool failed = WaitUntil(
      [&] {
        auto r = RunCommand({"sh", "-c", "cat " + gk_dir_ + "/log/jm/*.log"});
        return r.out.find("staging failed") != std::string::npos;
      },
      60);
  ::kill(gm, SIGCONT);
  ASSERT_TRUE(failed) << "the job manager did not try to send the output";
  ASSERT_TRUE(WaitUntil(
      [&] { return Attr(id, "JobStatus", false) == "5" || Attr(id, "JobStatus", true) == "4"; },
      120))
      << env_.Kite({"q", "-nobatch"}).out;
  ASSERT_EQ(Attr(id, "JobStatus", true), "4") << Attr(id, "HoldReason", false);
  EXPECT_EQ(ReadFileOr(side_ + "/ran"), "ran\n");
  EXPECT_EQ(ReadFileOr(env_.dir() + "/out.txt"), "finished\n");
  EXPECT_EQ(ReadFileOr(env_.dir() + "/result.txt"), "1\n2\n3\n4\n5\n");
  EXPECT_NE(ReadFileOr(env_.home() + "/gridmanager.log").find("restarted to send it again"),
            std::string::npos);
}

// A proxy refreshed on the desktop (`kite proxy init` again) reaches the job manager of a running
// job: the job's own proxy at the site is the new one when it looks.
TEST_F(Gt5Gatekeeper, ARefreshedProxyReachesARunningJob) {
  auto end_of = [&](const std::string& pem_file) -> int64_t {
    auto r = RunCommand({"openssl", "x509", "-noout", "-enddate", "-in", pem_file});
    std::string text(Trim(r.out));
    if (!StartsWith(text, "notAfter=")) return 0;
    auto d = RunCommand({"date", "-u", "-d", text.substr(9), "+%s"});
    return std::atoll(d.out.c_str());
  };
  std::string side = env_.dir() + "/side";
  std::filesystem::create_directories(side);
  std::filesystem::permissions(side, std::filesystem::perms::all);
  int c = env_.Submit(
      Sub("executable = /bin/sh\ntransfer_executable = false\n"
          "arguments = \"-c 'openssl x509 -noout -enddate -in $X509_USER_PROXY; while [ ! -e " +
          side +
          "/go ]; do sleep 0.2; done; openssl x509 -noout -enddate -in $X509_USER_PROXY'\"\n"
          "output = out.txt\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return Attr(id, "JobStatus", false) == "2"; }, 90));
  int64_t first = end_of(env_.dir() + "/x509up");
  std::vector<std::string> again = {"proxy",
                                    "init",
                                    "-q",
                                    "--valid",
                                    "13:00",
                                    "--cert",
                                    env_.dir() + "/globus/usercert.pem",
                                    "--key",
                                    env_.dir() + "/globus/userkey.pem",
                                    "--out",
                                    env_.dir() + "/x509up",
                                    "--bits",
                                    "2048"};
  auto r = env_.Kite(again);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  int64_t second = end_of(env_.dir() + "/x509up");
  ASSERT_GT(second, first + 3000);
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ReadFileOr(env_.home() + "/gridmanager.log").find("refreshed delegation") !=
               std::string::npos;
      },
      60))
      << "the gridmanager did not refresh the site";
  WriteFile(side + "/go", "");
  ASSERT_TRUE(WaitUntil(
      [&] { return Attr(id, "JobStatus", false) == "5" || Attr(id, "JobStatus", true) == "4"; },
      90));
  ASSERT_EQ(Attr(id, "JobStatus", true), "4") << Attr(id, "HoldReason", false);
  auto lines = Split(ReadFileOr(env_.dir() + "/out.txt"), '\n');
  ASSERT_EQ(lines.size(), 2u) << ReadFileOr(env_.dir() + "/out.txt");
  auto when = [](const std::string& line) {
    auto d = RunCommand({"date", "-u", "-d", line.substr(9), "+%s"});
    return std::atoll(d.out.c_str());
  };
  // The delegated proxy ends with the one it was made from.
  EXPECT_LE(std::abs(when(lines[0]) - first), 5) << lines[0];
  EXPECT_LE(std::abs(when(lines[1]) - second), 5)
      << lines[1] << " (refreshed proxy ends at " << second << ")";
}

// A job that runs past the point where its first proxy would have stopped the site's job manager
// (GRAM5's job manager stops managing 10 minutes before its proxy expires, a setting of the whole
// job manager): the user makes a new proxy while it runs, the link hands it to the job manager,
// and the job completes with its output, its job manager never lost.
TEST_F(Gt5Gatekeeper, AJobRunningPastItsFirstProxysEndAtTheSiteCompletesAfterARefresh) {
  auto init = [&](const std::string& valid) {
    auto r =
        env_.Kite({"proxy", "init", "-q", "--valid", valid, "--cert",
                   env_.dir() + "/globus/usercert.pem", "--key", env_.dir() + "/globus/userkey.pem",
                   "--out", env_.dir() + "/x509up", "--bits", "2048"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  };
  env_.StopAgent();
  WriteFile(env_.home() + "/config.toml",
            "[grid]\nprobe_interval = 1\n[credentials]\ncheck_interval = 1\nmin_lifetime = 60\n");
  ASSERT_NO_FATAL_FAILURE(init("0:11"));
  // The job manager's own end under the first proxy: 11 minutes less 10.
  auto jm_end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  env_.StartAgent();
  std::string id = SubmitWaitingJob("echo finished");
  ASSERT_TRUE(WaitUntil([&] { return Attr(id, "JobStatus", false) == "2"; }, 50));
  ASSERT_NO_FATAL_FAILURE(init("13:00"));
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ReadFileOr(env_.home() + "/gridmanager.log").find("refreshed delegation") !=
               std::string::npos;
      },
      30))
      << "the gridmanager did not refresh the site";
  std::this_thread::sleep_until(jm_end + std::chrono::seconds(15));
  Go();
  ASSERT_TRUE(WaitUntil(
      [&] { return Attr(id, "JobStatus", false) == "5" || Attr(id, "JobStatus", true) == "4"; },
      90));
  ASSERT_EQ(Attr(id, "JobStatus", true), "4") << Attr(id, "HoldReason", false);
  EXPECT_EQ(ReadFileOr(side_ + "/ran"), "ran\n");
  EXPECT_EQ(ReadFileOr(env_.dir() + "/out.txt"), "finished\n");
  EXPECT_EQ(ReadFileOr(env_.home() + "/gridmanager.log").find("restarted the job manager"),
            std::string::npos)
      << "the job manager stopped under the first proxy";
}

// The helper's GASS server is reachable by anyone who holds the user's identity, which every site
// the user delegated to does. It serves only the files it was told of, under names a site learns
// only for its own jobs, each one way: a site cannot read the desktop's other files, write a
// job's inputs, or reach another identity's. Probed with Globus's own client.
TEST_F(Gt5Gatekeeper, TheHelpersFileServerGivesASiteOnlyItsOwnJobsFilesOneWay) {
  env_.Write("secret.txt", "not for sites\n");
  env_.Write("in.dat", "input\n");
  int c =
      env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\n"
                      "arguments = \"-c 'sleep 300'\"\ntransfer_input_files = in.dat\n"
                      "output = out.txt\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return Attr(id, "JobStatus", false) == "2"; }, 90));
  // The helper's port and its naming key, as only the desktop knows them.
  std::string port, key;
  for (const auto& e : std::filesystem::recursive_directory_iterator(env_.home() + "/gt5")) {
    if (e.path().filename() == "gass-port") port = std::string(Trim(ReadFileOr(e.path())));
  }
  key = std::string(Trim(ReadFileOr(env_.home() + "/gt5/gass.key")));
  ASSERT_FALSE(port.empty());
  std::string base = "https://localhost:" + port + "/";
  std::string name_of_input;
  {
    std::string msg =
        "kite-" + std::string(Trim(Attr(id, "QDate", false))) + "-" + id + "-0\nRinput/in.dat";
    WriteFile(env_.dir() + "/msg", msg);
    auto h = RunCommand({"sh", "-c",
                         "openssl dgst -sha256 -hmac '" + key + "' < " + env_.dir() +
                             "/msg | sed 's/.*= //' | cut -c1-32"});
    name_of_input = std::string(Trim(h.out));
  }
  auto copy = [&](const std::string& from, const std::string& to, const std::string& proxy) -> int {
    auto r = RunCommand(
        {"timeout", "20", "globus-url-copy", from, to},
        {"X509_USER_PROXY=" + proxy, "X509_CERT_DIR=" + env_.home() + "/ca/certificates"});
    return r.exit_code;
  };
  std::string proxy = env_.dir() + "/x509up";
  std::string got = "file://" + env_.dir() + "/got";
  // The job's own input, under its name: served, to the user's identity.
  EXPECT_EQ(copy(base + name_of_input, got, proxy), 0);
  EXPECT_EQ(ReadFileOr(env_.dir() + "/got"), "input\n");
  // Anything else is not: a path, a made-up name.
  EXPECT_NE(copy(base + env_.dir() + "/secret.txt", got + "2", proxy), 0);
  EXPECT_NE(copy(base + std::string(32, 'a'), got + "3", proxy), 0);
  EXPECT_FALSE(std::filesystem::exists(env_.dir() + "/got2"));
  // An input cannot be written.
  env_.Write("evil", "overwritten\n");
  EXPECT_NE(copy("file://" + env_.dir() + "/evil", base + name_of_input, proxy), 0);
  EXPECT_EQ(ReadFileOr(env_.dir() + "/in.dat"), "input\n");
  // Another identity of the same CA gets nothing.
  auto r = env_.Kite({"ca", "issue-user", "--ca", env_.home() + "/ca", "--out",
                      env_.dir() + "/other", "CN=Someone Else"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = env_.Kite({"proxy", "init", "-q", "--cert", env_.dir() + "/other/usercert.pem", "--key",
                 env_.dir() + "/other/userkey.pem", "--out", env_.dir() + "/other/x509up", "--bits",
                 "2048"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(copy(base + name_of_input, got + "4", env_.dir() + "/other/x509up"), 0);
  EXPECT_FALSE(std::filesystem::exists(env_.dir() + "/got4"));
  env_.Kite({"rm", id});
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
// contact is recorded, and an uncommitted one never runs. The gridmanager is killed (-9) over and
// over while jobs are submitted, committed and run (the agent starts it again); every job runs
// exactly once (each appends a line to a file of its own) and its output comes back whole: the
// helper's file server outlives its gridmanager while jobs may send their output, until the next
// gridmanager's helper takes its port over.
TEST_F(Gt5Gatekeeper, EveryJobRunsExactlyOnceWhileTheGridmanagerIsKilledOverAndOver) {
  constexpr int kJobs = 10;
  int c = SubmitMarkedJobs(kJobs);
  int kills = 0;
  for (double after : {0.5, 1.0, 1.5, 2.5, 4.0}) {
    pid_t pid = 0;
    bool empty = false;
    ASSERT_TRUE(WaitUntil(
        [&] {
          pid = GridmanagerPid();
          if (pid == 0) empty = NothingActive(c);
          return pid != 0 || empty;
        },
        90));
    if (empty) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(after * 1000)));
    if (::kill(pid, SIGKILL) == 0) ++kills;
  }
  EXPECT_GE(kills, 3);
  int held = CheckMarkedJobs(c, kJobs);
  std::printf("%d gridmanager kills; %d of %d jobs held because their output did not come back\n",
              kills, held, kJobs);
}

// The helper alone killed (-9) while jobs run: the gridmanager starts another at once, on the
// same port. Every job still runs exactly once and completes with its output: a job manager that
// tried to send it in the moment no helper served it (GRAM's "failed to open stdout") is
// restarted and sends it again. A job may be held saying its output did not come back, never
// run again and never completed without it.
TEST_F(Gt5Gatekeeper, EveryJobRunsExactlyOnceWhileTheHelperIsKilled) {
  constexpr int kJobs = 10;
  int c = SubmitMarkedJobs(kJobs);
  int kills = 0;
  for (double after : {0.8, 1.5, 2.5}) {
    pid_t helper = 0;
    if (!WaitUntil(
            [&] {
              return (helper = Pid("kite-gt5-helper " + env_.dir())) != 0 || NothingActive(c);
            },
            60) ||
        helper == 0) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(after * 1000)));
    if (::kill(helper, SIGKILL) == 0) ++kills;
  }
  EXPECT_GE(kills, 2);
  int held = CheckMarkedJobs(c, kJobs);
  std::printf("%d helper kills; %d of %d jobs held because their output did not come back\n", kills,
              held, kJobs);
}

}  // namespace
}  // namespace kite::testing
