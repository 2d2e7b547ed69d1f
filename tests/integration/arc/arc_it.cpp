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

#include "common/strings.h"
#include "tests/fixtures/kite_env.h"
#include "tests/fixtures/output_folders.h"

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
                        CeEnv());
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

  // The CE's settings (tests/fixtures/arex/start-arex.sh).
  virtual std::vector<std::string> CeEnv() const {
    return {"AREX_PROBE_CRED=" + env_.dir() + "/x509up"};
  }

  std::string Sub(const std::string& body) const {
    return "universe = grid\ngrid_resource = arc " + endpoint_ + "\nlog = job.log\n" + body;
  }
  void WaitDone(int cluster, int seconds = 120) const {
    auto r = env_.Kite({"wait", "--timeout", std::to_string(seconds), std::to_string(cluster)});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << env_.Kite({"q", "-nobatch"}).out;
  }
  std::string Attr(const std::string& id, const std::string& attr, bool history) const {
    return env_.JobAttr(id, attr, history);
  }
  // Processes whose command line holds `word` (the CE's jobs run as its mapped account).
  int Processes(const std::string& word) const {
    auto r = RunCommand({"pgrep", "-c", "-f", word});
    return std::atoi(r.out.c_str());
  }

  // curl ARGS... at the CE's REST interface as the user (the proxy), the last argument the
  // target under /rest/1.0/.
  CommandResult AtCe(std::vector<std::string> args) const {
    args.back() = endpoint_ + "/rest/1.0/" + args.back();
    std::vector<std::string> argv = {"curl",     "-s",
                                     "--cert",   env_.dir() + "/x509up",
                                     "--key",    env_.dir() + "/x509up",
                                     "--capath", env_.home() + "/ca/certificates"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv);
  }
  // Waits until job `id` is held; its HoldReason.
  std::string HoldReasonOnceHeld(const std::string& id, double seconds) const {
    bool held = WaitUntil([&] { return Attr(id, "JobStatus", false) == "5"; }, seconds);
    EXPECT_TRUE(held) << env_.Kite({"q", "-nobatch"}).out;
    return held ? Attr(id, "HoldReason", false) : "";
  }

  pid_t GridmanagerPid() const {
    auto r = RunCommand({"pgrep", "-o", "-f", "kite-gridmanager --home " + env_.home()});
    return r.exit_code == 0 ? std::atoi(r.out.c_str()) : 0;
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
             "mkdir -p sub && seq 1 \"$1\" > sub/result.dat\n"
             "echo \"checksum $(sum < in.dat)\" > summary.txt\n"
             "exit \"$1\"\n",
             0755);
  std::string lines;
  for (int i = 0; i < 1000; ++i) lines += "line " + std::to_string(i) + "\n";
  env_.Write("in.dat", lines);
  env_.Write("stdin.txt", "from stdin\n");
  std::filesystem::create_directories(env_.dir() + "/sums");  // a remap's folder must exist
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
    // transfer_output_files, where the remaps put them.
    EXPECT_EQ(ReadFileOr(env_.dir() + "/result." + std::to_string(p) + ".dat"),
              p == 0 ? "" : "1\n2\n3\n");
    auto sum = RunCommand({"sh", "-c", "sum < " + env_.dir() + "/in.dat"});
    EXPECT_EQ(ReadFileOr(env_.dir() + "/sums/summary." + std::to_string(p)), "checksum " + sum.out);
    // The CE's own id of the job, as a URL under its REST interface.
    EXPECT_NE(Attr(id, "GridJobId", true).find(endpoint_ + "/rest/1.0/jobs/"), std::string::npos)
        << Attr(id, "GridJobId", true);
  }
  std::string log = ReadFileOr(env_.dir() + "/job.log");
  for (const char* code : {"000 (", "027 (", "001 (", "005 ("}) {
    EXPECT_NE(log.find(code), std::string::npos) << code << " missing in\n" << log;
  }
  EXPECT_NE(log.find("return value 3"), std::string::npos) << log;
  EXPECT_NE(log.find("GridResource: arc "), std::string::npos) << log;
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
  // The CE's own word for the state, as the CE's status reply says it (its information system
  // catches up within seconds).
  ASSERT_TRUE(WaitUntil(
      [&] { return Attr(id, "GridJobSiteStatus", false).find("\"RUNNING\"") != std::string::npos; },
      30))
      << Attr(id, "GridJobSiteStatus", false);
  auto q = env_.Kite({"q", "-grid"});
  EXPECT_NE(q.out.find("arc"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find(" RUNNING "), std::string::npos) << q.out;
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
  // The CE's own words: the fork LRM says no more of a program it cannot start.
  std::string reason = HoldReasonOnceHeld(id, 120);
  EXPECT_NE(reason.find("LRMS error: (-1) Job died unexpectedly"), std::string::npos) << reason;
}

// A job that does not write an output file it names is held saying which (running it again would
// not write it either); what did come back is there.
TEST_F(ArcCe, AJobWithoutAnOutputFileItNamesIsHeldSayingWhich) {
  int c =
      env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\n"
                      "arguments = \"-c 'echo partial'\"\noutput = out.txt\n"
                      "transfer_output_files = never-written.dat\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  std::string reason = HoldReasonOnceHeld(id, 120);
  EXPECT_NE(reason.find("never-written.dat"), std::string::npos) << reason;
  EXPECT_EQ(ReadFileOr(env_.dir() + "/out.txt"), "partial\n");
}

// Folders in transfer_output_files come back from the CE as condor_submit users name them: "res"
// as the folder res with everything in it, empty folders too; "flat/" as what the folder holds,
// into the submit folder. A folder the job did not make holds its job saying which.
TEST_F(ArcCe, OutputFoldersComeBackWholeAndOneTheJobDidNotMakeHoldsIt) {
  int c = env_.Submit(Sub(std::string(kOutputFoldersJob) + "queue\n"));
  WaitDone(c);
  std::string id = std::to_string(c) + ".0";
  ASSERT_EQ(Attr(id, "JobStatus", true), "4") << Attr(id, "HoldReason", false);
  const std::string d = env_.dir();
  ExpectOutputFoldersCameBack(d);

  int missing =
      env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\n"
                      "arguments = \"-c 'echo partial'\"\noutput = out.txt\n"
                      "transfer_output_files = never/\nqueue\n"));
  std::string reason = HoldReasonOnceHeld(std::to_string(missing) + ".0", 120);
  EXPECT_NE(reason.find("never/"), std::string::npos) << reason;
  EXPECT_EQ(ReadFileOr(d + "/out.txt"), "partial\n");
}

// A proxy refreshed on the desktop (`kite proxy init` again) reaches the CE while a job runs
// there: the gridmanager renews its delegation in place (the same id, which the job names), and
// the job goes on to its end. Whether the CE then rewrites the proxy file of a job already running
// is the CE's business: A-REX 6.17 leaves it (the job prints both; said in the output).
TEST_F(ArcCe, ARefreshedProxyReachesTheCeWhileAJobRuns) {
  // Unix seconds of a PEM certificate's end (the first in the text).
  auto end_of = [&](const std::string& pem) -> int64_t {
    WriteFile(env_.dir() + "/probe.pem", pem);
    auto r =
        RunCommand({"openssl", "x509", "-noout", "-enddate", "-in", env_.dir() + "/probe.pem"});
    std::string text(Trim(r.out));
    if (!StartsWith(text, "notAfter=")) return 0;
    auto d = RunCommand({"date", "-u", "-d", text.substr(9), "+%s"});
    return std::atoll(d.out.c_str());
  };
  // The CE's copy of the delegation the gridmanager made there, fetched as the user.
  auto at_ce = [&]() -> int64_t {
    std::smatch m;
    std::string log = ReadFileOr(env_.home() + "/gridmanager.log");
    if (!std::regex_search(log, m, std::regex("delegated to [^ ]+ as ([0-9a-f]+)"))) return 0;
    return end_of(AtCe({"-X", "POST", "delegations/" + std::string(m[1]) + "?action=get"}).out);
  };
  int64_t first = end_of(ReadFileOr(env_.dir() + "/x509up"));
  int c = env_.Submit(
      Sub("executable = /bin/sh\ntransfer_executable = false\n"
          "arguments = \"-c 'while [ ! -e " +
          env_.dir() +
          "/go ]; do sleep 0.2; done; openssl x509 -noout -enddate -in $X509_USER_PROXY'\"\n"
          "output = out.txt\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return Attr(id, "JobStatus", false) == "2"; }, 90));
  int64_t before = at_ce();
  EXPECT_LE(std::abs(before - first), 5) << "the CE's delegation ends at " << before;
  auto r = env_.Kite({"proxy", "init", "-q", "--valid", "13:00", "--cert",
                      env_.dir() + "/globus/usercert.pem", "--key",
                      env_.dir() + "/globus/userkey.pem", "--out", env_.dir() + "/x509up"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  int64_t second = end_of(ReadFileOr(env_.dir() + "/x509up"));
  ASSERT_GT(second, first + 3000);
  int64_t after = 0;
  EXPECT_TRUE(WaitUntil(
      [&] {
        after = at_ce();
        return std::abs(after - second) <= 5;
      },
      60))
      << "the CE's delegation ends at " << after << ", the refreshed proxy at " << second;
  WriteFile(env_.dir() + "/go", "");
  WaitDone(c, 90);
  EXPECT_EQ(Attr(id, "ExitCode", true), "0");
  std::string out(Trim(ReadFileOr(env_.dir() + "/out.txt")));
  ASSERT_TRUE(StartsWith(out, "notAfter=")) << out;
  auto job_end = RunCommand({"date", "-u", "-d", out.substr(9), "+%s"});
  bool rewritten = std::abs(std::atoll(job_end.out.c_str()) - second) <= 5;
  std::printf("the running job's own proxy file: %s\n",
              rewritten ? "the refreshed proxy (the CE rewrote it)"
                        : "the first proxy (this CE does not rewrite a running job's proxy file)");
}

// The step that makes a resent submit exactly-once, on its own: a job the CE already has under
// the submit's name (as after a crash between the CE's answer and the gridmanager's record of
// it) is taken for the job, not submitted again.
TEST_F(ArcCe, ASubmitWhoseJobTheCeHasAlreadyIsNotSentAgain) {
  std::string side = env_.dir() + "/side";
  std::filesystem::create_directories(side);
  std::filesystem::permissions(side, std::filesystem::perms::all);
  int c =
      env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\n"
                      "arguments = \"-c 'echo kite >> " +
                      side + "/ran'\"\noutput = out.txt\nhold = true\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  std::string name = "kite-" + Attr(id, "QDate", false) + "-" + id + "-0/submit";
  // The "earlier send": made at the CE by hand, under the name Kite gives the first attempt.
  std::string xrsl = "&(jobname=\"" + name +
                     "\")(executable=\"/bin/sh\")(arguments=\"-c\" \"echo " + "earlier >> " + side +
                     "/ran; echo earlier\")(stdout=\"_kite_stdout\")" +
                     "(outputfiles=(\"_kite_stdout\" \"\"))";
  auto made = AtCe(
      {"-H", "Accept: application/json", "-X", "POST", "--data-binary", xrsl, "jobs?action=new"});
  ASSERT_NE(made.out.find("\"201\""), std::string::npos) << made.out << made.err;
  auto r = env_.Kite({"release", id});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  WaitDone(c);
  EXPECT_EQ(ReadFileOr(side + "/ran"), "earlier\n") << "the job ran again";
  EXPECT_EQ(ReadFileOr(env_.dir() + "/out.txt"), "earlier\n");
  EXPECT_EQ(Attr(id, "ExitCode", true), "0");
  EXPECT_NE(ReadFileOr(env_.home() + "/gridmanager.log").find("not submitted again"),
            std::string::npos);
}

// A CE that admits only another identity (its mapping refuses ours).
class ArcCeForSomeoneElse : public ArcCe {
 protected:
  std::vector<std::string> CeEnv() const override {
    return {"AREX_ALLOW_DNS=/O=Grid/OU=Kite/CN=Somebody Else"};
  }
};

TEST_F(ArcCeForSomeoneElse, JobsOfAnIdentityTheCeDoesNotMapAreHeldWithItsRefusal) {
  int c = env_.Submit(Sub("executable = /bin/true\ntransfer_executable = false\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  std::string reason = HoldReasonOnceHeld(id, 90);
  EXPECT_NE(reason.find("403"), std::string::npos) << reason;
  EXPECT_NE(reason.find("User can't be assigned configuration"), std::string::npos) << reason;
}

// ARC has no two-phase commit: Kite names each job after its submit's request id and, after a
// crash, looks for the name at the CE before submitting again (docs/grid-arc.md). The gridmanager
// is killed (-9) over and over while jobs are delegated, submitted, uploaded and run; every job
// runs exactly once (each appends a line to a file of its own outside the CE) and its output
// comes back whole.
TEST_F(ArcCe, EveryJobRunsExactlyOnceWhileTheGridmanagerIsKilledOverAndOver) {
  constexpr int kJobs = 12;
  std::string side = env_.dir() + "/side";
  std::filesystem::create_directories(side);
  std::filesystem::permissions(side, std::filesystem::perms::all);  // the CE's account writes
  env_.Write("in.txt", "input for every job\n");
  int c =
      env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\n"
                      "arguments = \"-c 'echo ran >> " +
                      side +
                      "/ran.$(Process); cat in.txt; sleep 2; echo done $(Process)'\"\n"
                      "transfer_input_files = in.txt\noutput = out.$(Process)\n"
                      "queue " +
                      std::to_string(kJobs) + "\n"));
  // Kills at different points of the gridmanager's life: the first ones while it delegates and
  // submits, the later ones while jobs upload, run and end. The agent restarts it each time.
  int kills = 0;
  auto queue_empty = [&] {
    return env_.Kite({"q", "-json", std::to_string(c)}).out.find("\"ProcId\"") == std::string::npos;
  };
  for (double after : {0.7, 1.0, 1.6, 3.0, 5.0}) {
    pid_t pid = 0;
    bool empty = false;
    ASSERT_TRUE(WaitUntil(
        [&] {
          pid = GridmanagerPid();
          if (pid == 0) empty = queue_empty();  // none is started once no job needs one
          return pid != 0 || empty;
        },
        90));
    if (empty) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(after * 1000)));
    if (::kill(pid, SIGKILL) == 0) ++kills;
  }
  WaitDone(c, 240);
  EXPECT_GE(kills, 4);
  // How many submits found their job at the CE after a kill (it depends on where kills land).
  std::string log = ReadFileOr(env_.home() + "/gridmanager.log");
  size_t found = 0;
  for (size_t at = 0; (at = log.find("not submitted again", at)) != std::string::npos; ++at)
    ++found;
  std::printf("%d kills; %zu submits found their job at the CE already\n", kills, found);
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
