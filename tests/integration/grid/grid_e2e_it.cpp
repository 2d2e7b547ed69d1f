// Grid jobs end to end, as a user runs them: `kite testgrid up`, `kite agent start`, `kite submit`
// of universe = grid jobs, and the real kite-agent, kite-gridmanager, kite-gatekeeper,
// kite-jobmanager and kite-exec processes on loopback with real TLS.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "common/files.h"
#include "credentials/ca.h"
#include "credentials/certificate.h"
#include "credentials/proxy.h"
#include "tests/fixtures/kite_env.h"
#include "tests/fixtures/output_folders.h"

namespace kite::testing {
namespace {

class GridE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    // Everything of this test stays in its own directory: its proxy, its CA, its agent.
    std::string resource = env_.TestgridUp();
    ASSERT_FALSE(resource.empty());
    resource_ = "grid_resource = " + resource;
    env_.StartAgent();
  }
  void TearDown() override {
    env_.StopAgent();
    env_.Kite({"testgrid", "down"});
  }

  std::string Sub(const std::string& body) const {
    return "universe = grid\n" + resource_ + "\nlog = job.log\n" + body;
  }
  // `kite wait` until every job of the cluster has left the queue.
  void WaitDone(int cluster, int seconds = 60) const {
    auto r = env_.Kite({"wait", "--timeout", std::to_string(seconds), std::to_string(cluster)});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << env_.Kite({"q", "-nobatch"}).out;
  }
  std::string Attr(const std::string& id, const std::string& attr, bool history) const {
    auto r = env_.Kite({history ? "history" : "q", "-json", id});
    std::smatch m;
    std::regex re("\"" + attr + "\": ([^,\n]+)");
    return std::regex_search(r.out, m, re) ? std::string(m[1]) : "";
  }
  void KillGridManager() const {
    RunCommand({"pkill", "-9", "-f", "kite-gridmanager --home " + env_.home()});
  }

  KiteEnv env_{"grid-e2e"};
  std::string resource_;
};

TEST_F(GridE2E, RunsWithStagingAndStreamsOutputWhileRunning) {
  env_.Write("data.txt", "alpha\nbeta\n");
  env_.Write("in.txt", "from stdin\n");
  std::string release = env_.dir() + "/release";
  env_.Write("job.sh",
             "#!/bin/sh\ncat data.txt\nread line; echo \"$line\"\necho \"args: $1 $2\"\n"
             "while [ ! -e " +
                 release + " ]; do sleep 0.05; done\necho second\necho oops >&2\nexit 3\n",
             0755);
  int c =
      env_.Submit(Sub("executable = job.sh\narguments = \"one 'two three'\"\n"
                      "transfer_input_files = data.txt\ninput = in.txt\noutput = out.txt\n"
                      "error = err.txt\nstream_output = true\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  std::string first = "alpha\nbeta\nfrom stdin\nargs: one two three\n";
  // Streaming: the first part arrives while the job still runs at the site.
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(env_.dir() + "/out.txt") == first; }, 30))
      << ReadFileOr(env_.dir() + "/out.txt");
  EXPECT_EQ(env_.JobStatus(id), 2);
  auto grid = env_.Kite({"q", "-grid"});
  EXPECT_NE(grid.out.find("ACTIVE"), std::string::npos) << grid.out;
  EXPECT_NE(grid.out.find("kite->fork"), std::string::npos) << grid.out;
  std::string contact = Attr(id, "GridJobId", false);
  EXPECT_NE(contact.find("https://"), std::string::npos) << contact;

  WriteFile(release, "");
  WaitDone(c);
  EXPECT_EQ(ReadFileOr(env_.dir() + "/out.txt"), first + "second\n");
  EXPECT_EQ(ReadFileOr(env_.dir() + "/err.txt"), "oops\n");
  EXPECT_EQ(Attr(id, "JobStatus", true), "4");
  EXPECT_EQ(Attr(id, "ExitCode", true), "3");
  EXPECT_EQ(Attr(id, "GridJobId", true), contact);
  std::string log = ReadFileOr(env_.dir() + "/job.log");
  for (const char* code : {"000 (", "027 (", "001 (", "005 ("}) {
    EXPECT_NE(log.find(code), std::string::npos) << code << " missing in\n" << log;
  }
  EXPECT_NE(log.find("return value 3"), std::string::npos) << log;
}

TEST_F(GridE2E, RemoveCancelsTheJobAtItsSite) {
  std::string mark = env_.dir() + "/mark";
  std::string release = env_.dir() + "/release";
  int c =
      env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\narguments = \"-c '"
                      "echo started > " +
                      mark + "; while [ ! -e " + release + " ]; do sleep 0.05; done; echo " +
                      "finished >> " + mark + "'\"\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(mark) == "started\n"; }, 30));
  auto r = env_.Kite({"rm", id});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Removed at once; it leaves the queue for history once the site confirmed the cancel.
  EXPECT_EQ(env_.JobStatus(id), 3);
  ASSERT_TRUE(WaitUntil([&] { return Attr(id, "JobStatus", true) == "3"; }, 30))
      << env_.Kite({"q", "-grid"}).out;
  WriteFile(release, "");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(ReadFileOr(mark), "started\n") << "the job ran on after kite rm";
}

// Every job appends its id to one file; a kill -9 of the gridmanager while jobs are submitted and
// run, then of the agent, must neither lose nor repeat any job.
TEST_F(GridE2E, ExactlyOnceAcrossGridmanagerAndAgentKills) {
  std::string counter = env_.dir() + "/ran";
  int c =
      env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\narguments = \"-c '"
                      "echo $(Process) >> " +
                      counter +
                      "; sleep 1; echo out $(Process)'\"\n"
                      "output = out.$(Process)\nqueue 12\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  KillGridManager();
  ASSERT_TRUE(WaitUntil([&] { return !ReadFileOr(counter).empty(); }, 30));
  KillGridManager();
  env_.KillAgent();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  env_.StartAgent();
  WaitDone(c, 90);
  std::map<int, int> runs;
  std::istringstream in(ReadFileOr(counter));
  for (int p; in >> p;) ++runs[p];
  for (int p = 0; p < 12; ++p) {
    EXPECT_EQ(runs[p], 1) << "job " << c << "." << p << " ran " << runs[p] << " times";
    std::string id = std::to_string(c) + "." + std::to_string(p);
    EXPECT_EQ(Attr(id, "JobStatus", true), "4") << id;
    EXPECT_EQ(ReadFileOr(env_.dir() + "/out." + std::to_string(p)),
              "out " + std::to_string(p) + "\n");
  }
  EXPECT_EQ(runs.size(), 12u);
}

TEST_F(GridE2E, HundredMegabytesOfStreamedOutputArriveByteIdentical) {
  const std::string cmd = "yes 'The quick brown fox jumps over the lazy grid.' | head -c 100000000";
  env_.Write("big.sh", "#!/bin/sh\n" + cmd + "\n", 0755);
  int c = env_.Submit(Sub("executable = big.sh\noutput = big.out\nstream_output = true\nqueue\n"));
  WaitDone(c, 240);
  // The same command run here, for comparison.
  auto local = RunCommand({"/bin/sh", "-c", cmd + " > " + env_.dir() + "/local.out"});
  ASSERT_EQ(local.exit_code, 0);
  auto cmp = RunCommand({"cmp", env_.dir() + "/local.out", env_.dir() + "/big.out"});
  EXPECT_EQ(cmp.exit_code, 0) << cmp.out << cmp.err;
  EXPECT_EQ(Attr(std::to_string(c) + ".0", "JobStatus", true), "4");
}

TEST_F(GridE2E, JobTheSiteCannotRunIsHeldWithTheSiteReason) {
  int c =
      env_.Submit(Sub("executable = /nonexistent/program\ntransfer_executable = false\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(id) == 5; }, 30));
  std::string reason = Attr(id, "HoldReason", false);
  EXPECT_NE(reason.find("bad-executable"), std::string::npos) << reason;
  EXPECT_EQ(Attr(id, "HoldReasonCode", false), "2");
  // Removing it leaves nothing behind: it is gone from the queue at once or after the cancel.
  ASSERT_EQ(env_.Kite({"rm", id}).exit_code, 0);
  WaitDone(c);
}

TEST_F(GridE2E, IdentityOutsideTheGridMapfileIsHeld) {
  auto ca = credentials::TestCa::Open(env_.home() + "/ca");
  ASSERT_TRUE(ca) << ca.error().ToString();
  auto user = ca->IssueUserCredential("CN=Mallory Outsider");
  ASSERT_TRUE(user) << user.error().ToString();
  auto proxy = credentials::CreateProxy(*user, {});
  ASSERT_TRUE(proxy) << proxy.error().ToString();
  std::string path = env_.dir() + "/mallory.pem";
  ASSERT_TRUE(credentials::SaveProxyFile(path, proxy->credential));
  int c =
      env_.Submit(Sub("executable = /bin/true\ntransfer_executable = false\n"
                      "x509userproxy = " +
                      path + "\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(id) == 5; }, 30));
  std::string reason = Attr(id, "HoldReason", false);
  EXPECT_NE(reason.find("grid-mapfile"), std::string::npos) << reason;
  EXPECT_EQ(Attr(id, "HoldReasonCode", false), "4");
}

// The files a user names are sent as what they name: /bin/sh (a symbolic link on Debian) as the
// executable, an input through "..", an input that is a link. Directories as input or output
// are refused at submit, naming the command, with nothing queued.
TEST_F(GridE2E, LinkedAndRelativeInputsAreSentAndWhatCannotBeSentIsRefusedAtSubmit) {
  std::string sub = env_.dir() + "/sub";
  ASSERT_EQ(::mkdir(sub.c_str(), 0755), 0);
  WriteFile(env_.dir() + "/up.txt", "from above\n");
  WriteFile(env_.dir() + "/real.txt", "through a link\n");
  ASSERT_EQ(::symlink((env_.dir() + "/real.txt").c_str(), (sub + "/linked.txt").c_str()), 0);
  std::string body =
      Sub("executable = /bin/sh\narguments = \"-c 'cat up.txt linked.txt'\"\n"
          "initialdir = " +
          sub +
          "\ntransfer_input_files = ../up.txt, linked.txt\n"
          "output = out.txt\nqueue\n");
  int c = env_.Submit(body);
  WaitDone(c);
  EXPECT_EQ(env_.JobStatus(std::to_string(c) + ".0"), 4);
  EXPECT_EQ(ReadFileOr(sub + "/out.txt"), "from above\nthrough a link\n");

  auto before = env_.Kite({"q", "-nobatch"}).out;
  for (auto [extra, word] : std::vector<std::pair<std::string, std::string>>{
           {"transfer_input_files = " + sub + "\n", "is a directory"},
           {"transfer_input_files = adir/\n", "is a directory"},
           {"transfer_output_files = ../results\n", "transfer_output_files"}}) {
    env_.Write("bad.sub",
               Sub("executable = /bin/true\ntransfer_executable = false\n" + extra + "queue\n"));
    auto r = env_.Kite({"submit", "bad.sub"});
    EXPECT_NE(r.exit_code, 0) << extra;
    EXPECT_NE(r.err.find(word), std::string::npos) << r.err;
  }
  EXPECT_EQ(env_.Kite({"q", "-nobatch"}).out, before);
}

// transfer_output_files come back from a Kite gatekeeper as a user names them: a file in the
// job's directory, one in a subdirectory put elsewhere by a remap, an empty one and a large one,
// each byte-identical, an old copy here replaced. A file the job did not make holds its job with
// the name, after the job ran once.
TEST_F(GridE2E, OutputFilesComeBackAndOneTheJobDidNotMakeHoldsIt) {
  std::filesystem::create_directories(env_.dir() + "/tables");
  WriteFile(env_.dir() + "/result.dat", "an old result, longer than the new one\n");
  int c = env_.Submit(
      Sub("executable = /bin/sh\ntransfer_executable = false\n"
          "arguments = \"-c 'mkdir -p sub && seq 1 1000 > sub/table.csv && echo new > result.dat "
          "&& : > empty.txt && seq 1 700000 > big.txt && echo done'\"\n"
          "transfer_output_files = result.dat, sub/table.csv, empty.txt, big.txt\n"
          "transfer_output_remaps = \"table.csv = tables/t.csv\"\n"
          "output = out.txt\nqueue\n"));
  WaitDone(c, 120);
  std::string id = std::to_string(c) + ".0";
  ASSERT_EQ(Attr(id, "JobStatus", true), "4") << Attr(id, "HoldReason", false);
  EXPECT_EQ(ReadFileOr(env_.dir() + "/out.txt"), "done\n");
  EXPECT_EQ(ReadFileOr(env_.dir() + "/result.dat"), "new\n");
  EXPECT_EQ(
      RunCommand({"sh", "-c", "seq 1 1000 | cmp - " + env_.dir() + "/tables/t.csv"}).exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(env_.dir() + "/empty.txt"));
  EXPECT_EQ(std::filesystem::file_size(env_.dir() + "/empty.txt"), 0u);
  EXPECT_EQ(RunCommand({"sh", "-c", "seq 1 700000 | cmp - " + env_.dir() + "/big.txt"}).exit_code,
            0);
  EXPECT_FALSE(std::filesystem::exists(env_.dir() + "/table.csv"));

  std::string side = env_.dir() + "/ran";
  int missing =
      env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\n"
                      "arguments = \"-c 'echo ran >> " +
                      side +
                      "'\"\n"
                      "transfer_output_files = never.txt\nqueue\n"));
  std::string mid = std::to_string(missing) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(mid) == 5; }, 60));
  std::string reason = Attr(mid, "HoldReason", false);
  EXPECT_NE(reason.find("stage-out-failed"), std::string::npos) << reason;
  EXPECT_NE(reason.find("the job made no file or folder 'never.txt'"), std::string::npos) << reason;
  EXPECT_EQ(ReadFileOr(side), "ran\n");
}

// Folders in transfer_output_files come back from a Kite gatekeeper as condor_submit users name
// them: "res" as the folder res with everything in it, at any depth, empty folders too; "flat/"
// as what the folder holds, into the submit folder. A symbolic link in a folder holds its job
// saying which, after the job ran once: only files and folders come back.
TEST_F(GridE2E, OutputFoldersComeBackWholeAndALinkInOneHoldsItsJob) {
  int c = env_.Submit(Sub(std::string(kOutputFoldersJob) + "queue\n"));
  WaitDone(c, 120);
  std::string id = std::to_string(c) + ".0";
  ASSERT_EQ(Attr(id, "JobStatus", true), "4") << Attr(id, "HoldReason", false);
  const std::string d = env_.dir();
  ExpectOutputFoldersCameBack(d);

  std::string side = d + "/ran";
  int linked =
      env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\n"
                      "arguments = \"-c 'echo ran >> " +
                      side +
                      " && mkdir -p got && echo a > got/a.txt && ln -s /etc/passwd got/link'\"\n"
                      "transfer_output_files = got\nqueue\n"));
  std::string lid = std::to_string(linked) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(lid) == 5; }, 60));
  std::string reason = Attr(lid, "HoldReason", false);
  EXPECT_NE(reason.find("'got/link' is a symbolic link"), std::string::npos) << reason;
  EXPECT_EQ(ReadFileOr(side), "ran\n");
  EXPECT_FALSE(std::filesystem::exists(d + "/got/link"));
}

// A proxy no gridmanager can use holds its grid jobs (HoldReasonCode 4) with a reason naming the
// file and the fix, instead of leaving them Idle while gridmanagers fail to start; once the file
// is fixed the jobs are released by themselves and run.
TEST_F(GridE2E, AJobWhoseProxyCannotBeUsedIsHeldWithTheFixAndRunsOnceItIsFixed) {
  // Proxies are looked at every second here (the default is a minute), so a fixed file releases
  // its job quickly.
  env_.StopAgent();
  std::string config = env_.home() + "/config.toml";
  WriteFile(config, ReadFileOr(config) + "\n[credentials]\ncheck_interval = 1\n", 0600);
  env_.StartAgent();
  std::string good = env_.dir() + "/x509up";
  ASSERT_EQ(RunCommand({"cp", good, env_.dir() + "/keep.pem"}).exit_code, 0);
  struct Case {
    std::string name, expect;
    std::function<void(const std::string&)> make;
  };
  auto other_ca_proxy = [&](const std::string& path) {
    auto ca = credentials::TestCa::Init(env_.dir() + "/otherca",
                                        {.subject = "/O=Grid/OU=Kite/CN=Another Test CA"});
    ASSERT_TRUE(ca) << ca.error().ToString();
    auto user = ca->IssueUserCredential("CN=Kite Test User");
    ASSERT_TRUE(user) << user.error().ToString();
    auto proxy = credentials::CreateProxy(*user, {});
    ASSERT_TRUE(proxy) << proxy.error().ToString();
    ASSERT_TRUE(credentials::SaveProxyFile(path, proxy->credential));
  };
  std::vector<Case> cases = {
      {"missing", "cannot read", [](const std::string&) {}},
      {"garbage", "cannot be used",
       [](const std::string& p) { WriteFile(p, "not a proxy at all\n", 0600); }},
      {"open to others", "chmod 600",
       [&](const std::string& p) {
         ASSERT_EQ(RunCommand({"cp", good, p}).exit_code, 0);
         ::chmod(p.c_str(), 0644);
       }},
      {"another CA", "not trusted by the CA directory", other_ca_proxy},
  };
  int n = 0;
  for (auto& k : cases) {
    SCOPED_TRACE(k.name);
    std::string path = env_.dir() + "/proxy" + std::to_string(n++) + ".pem";
    k.make(path);
    int c =
        env_.Submit(Sub("executable = /bin/true\ntransfer_executable = false\n"
                        "x509userproxy = " +
                        path + "\nqueue\n"));
    std::string id = std::to_string(c) + ".0";
    ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(id) == 5; }, 30))
        << env_.Kite({"q", "-json", id}).out;
    std::string ad = env_.Kite({"q", "-json", id}).out;  // HoldReason holds commas: the whole ad
    auto at = ad.find("\"HoldReason\": \"");
    ASSERT_NE(at, std::string::npos) << ad;
    std::string reason = ad.substr(at, ad.find('\n', at) - at);
    EXPECT_NE(reason.find(path), std::string::npos) << reason;
    EXPECT_NE(reason.find(k.expect), std::string::npos) << reason;
    EXPECT_NE(reason.find("released by itself"), std::string::npos) << reason;
    EXPECT_EQ(Attr(id, "HoldReasonCode", false), "4");
    // The user fixes the file: the job is released and runs.
    ASSERT_EQ(RunCommand({"cp", env_.dir() + "/keep.pem", path}).exit_code, 0);
    ::chmod(path.c_str(), 0600);
    WaitDone(c, 90);
    EXPECT_EQ(env_.JobStatus(id), 4);
  }
  std::string log = ReadFileOr(env_.home() + "/agent.log");
  EXPECT_NE(log.find("cannot be used"), std::string::npos);
}

// A job that runs longer than the proxy it was submitted with: the user makes a new proxy while it
// runs, the gridmanager re-delegates it to the site, and the job's output comes back over GASS
// after the first proxy has expired.
TEST_F(GridE2E, AJobRunningAcrossItsProxysExpiryFinishesAfterARefresh) {
  std::string proxy = env_.dir() + "/x509up";
  std::string cert = env_.home() + "/testgrid/usercert.pem";
  std::string key = env_.home() + "/testgrid/userkey.pem";
  auto init = [&](const std::string& valid) {
    auto r = env_.Kite({"proxy", "init", "--cert", cert, "--key", key, "--valid", valid});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  };
  env_.StopAgent();
  // The gridmanager looks at its proxy file on every probe tick (a quarter of this interval).
  WriteFile(env_.home() + "/config.toml",
            "[grid]\nprobe_interval = 2\n[credentials]\ncheck_interval = 1\nmin_lifetime = 10\n");
  ASSERT_NO_FATAL_FAILURE(init("45s"));
  auto first_expiry = std::chrono::steady_clock::now() + std::chrono::seconds(45);
  env_.StartAgent();
  std::string mark = env_.dir() + "/started";
  int c = env_.Submit(
      Sub("executable = /bin/sh\ntransfer_executable = false\narguments = \"-c 'touch " + mark +
          "; sleep 55; echo finished after the first proxy'\"\noutput = out.txt\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return kite::FileExists(mark); }, 30))
      << env_.Kite({"q", "-grid"}).out;
  ASSERT_NO_FATAL_FAILURE(init("1:00"));
  std::string gm_log = env_.home() + "/gridmanager.log";
  EXPECT_TRUE(WaitUntil(
      [&] { return ReadFileOr(gm_log).find("refreshed delegation") != std::string::npos; }, 20))
      << ReadFileOr(gm_log);
  WaitDone(c, 120);
  EXPECT_GT(std::chrono::steady_clock::now(), first_expiry)
      << "the job ended before the test's point";
  EXPECT_EQ(Attr(id, "JobStatus", true), "4") << Attr(id, "HoldReason", true);
  EXPECT_EQ(Attr(id, "ExitCode", true), "0");
  EXPECT_EQ(ReadFileOr(env_.dir() + "/out.txt"), "finished after the first proxy\n");
}

// A site that cannot be reached keeps a removed job in the queue (its cancel is not confirmed);
// --forcex lets it go at once, as condor_rm -forcex does.
TEST_F(GridE2E, RemoveWithForcexLeavesAtOnceWhenTheSiteIsGone) {
  std::string mark = env_.dir() + "/mark";
  int c =
      env_.Submit(Sub("executable = /bin/sh\ntransfer_executable = false\narguments = \"-c '"
                      "touch " +
                      mark + "; sleep 60'\"\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return kite::FileExists(mark); }, 30));
  std::string gk = ReadFileOr(env_.home() + "/testgrid/gatekeeper.pid");
  ASSERT_EQ(::kill(std::atoi(gk.c_str()), SIGKILL), 0);
  ASSERT_EQ(env_.Kite({"rm", id}).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(env_.JobStatus(id), 3);
  EXPECT_EQ(Attr(id, "JobStatus", true), "") << "left the queue without the site's word";
  auto r = env_.Kite({"rm", "--forcex", id});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Attr(id, "JobStatus", true), "3");
  EXPECT_NE(ReadFileOr(env_.dir() + "/job.log").find("--forcex"), std::string::npos);
  RunCommand({"pkill", "-9", "-f", "kite-jobmanager --state-dir " + env_.home()});
}

// MyProxy renewal with no user action: the agent renews a proxy that is about to run out from a
// real myproxy-server on loopback, the gridmanager re-delegates it, and a job running across the
// first proxy's expiry finishes without ever being held.
TEST_F(GridE2E, MyProxyRenewsTheProxyBeforeItRunsOutAndTheJobRunsOn) {
  ASSERT_EQ(RunCommand({"/bin/sh", "-c", "command -v myproxy-server"}).exit_code, 0)
      << "myproxy-server is not installed (scripts/deps installs it)";
  std::string tg = env_.home() + "/testgrid";
  auto host = env_.Kite({"ca", "issue-host", "localhost", "--out", env_.dir() + "/mphost"});
  ASSERT_EQ(host.exit_code, 0) << host.out << host.err;
  std::string store = env_.dir() + "/mpstore";
  ASSERT_EQ(RunCommand({"mkdir", "-m", "700", store}).exit_code, 0);
  WriteFile(env_.dir() + "/myproxy-server.config",
            "accepted_credentials \"*\"\nauthorized_retrievers \"*\"\ndefault_retrievers \"*\"\n");
  std::string port = std::to_string(30000 + ::getpid() % 20000);
  std::string pidfile = env_.dir() + "/myproxy.pid";
  std::vector<std::string> menv = env_.Env();
  menv.push_back("X509_USER_CERT=" + env_.dir() + "/mphost/hostcert.pem");
  menv.push_back("X509_USER_KEY=" + env_.dir() + "/mphost/hostkey.pem");
  auto srv = RunCommand({"myproxy-server", "-c", env_.dir() + "/myproxy-server.config", "-s", store,
                         "-l", "127.0.0.1", "-p", port, "-P", pidfile},
                        menv);
  ASSERT_EQ(srv.exit_code, 0) << srv.out << srv.err;
  ASSERT_TRUE(WaitUntil([&] { return !ReadFileOr(pidfile).empty(); }, 10));
  struct StopServer {
    std::string pidfile;
    ~StopServer() { ::kill(std::atoi(ReadFileOr(pidfile).c_str()), SIGTERM); }
  } stop{pidfile};
  // MyProxy re-delegates only from RSA keys (the test user's is EC): store an RSA proxy.
  std::string rsa = env_.dir() + "/rsa-proxy";
  auto made = env_.Kite({"proxy", "init", "--cert", tg + "/usercert.pem", "--key",
                         tg + "/userkey.pem", "--bits", "2048", "--valid", "2:00", "--out", rsa});
  ASSERT_EQ(made.exit_code, 0) << made.out << made.err;
  auto stored = env_.Kite({"myproxy", "store", "-s", "localhost:" + port, "-l", "kiteuser",
                           "--pwstdin", "--proxy", rsa},
                          "renew-pass-phrase\n");
  ASSERT_EQ(stored.exit_code, 0) << stored.out << stored.err;
  std::string pass = env_.Write("myproxy.pass", "renew-pass-phrase\n", 0600);

  env_.StopAgent();
  WriteFile(env_.home() + "/config.toml",
            "[grid]\nprobe_interval = 2\n[credentials]\ncheck_interval = 1\nmin_lifetime = 10\n"
            "[myproxy]\nserver = \"localhost:" +
                port + "\"\nusername = \"kiteuser\"\npassphrase_file = \"" + pass +
                "\"\nrenew_before = 30\nlifetime = \"1h\"\n");
  auto init = env_.Kite({"proxy", "init", "--cert", tg + "/usercert.pem", "--key",
                         tg + "/userkey.pem", "--valid", "45s"});
  ASSERT_EQ(init.exit_code, 0) << init.out << init.err;
  auto first_expiry = std::chrono::steady_clock::now() + std::chrono::seconds(45);
  env_.StartAgent();
  int c = env_.Submit(
      Sub("executable = /bin/sh\ntransfer_executable = false\narguments = \"-c 'sleep 55; echo "
          "renewed under me'\"\noutput = out.txt\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  // Renewed by the agent (less than renew_before = 30 s left), with no user action.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ReadFileOr(env_.home() + "/agent.log").find("myproxy: renewed") != std::string::npos;
      },
      40))
      << ReadFileOr(env_.home() + "/agent.log");
  auto info = env_.Kite({"proxy", "info", "--timeleft"});
  EXPECT_GT(std::atoi(info.out.c_str()), 3000) << info.out << info.err;
  EXPECT_TRUE(WaitUntil(
      [&] {
        return ReadFileOr(env_.home() + "/gridmanager.log").find("refreshed delegation") !=
               std::string::npos;
      },
      20));
  WaitDone(c, 120);
  EXPECT_GT(std::chrono::steady_clock::now(), first_expiry);
  EXPECT_EQ(Attr(id, "JobStatus", true), "4") << Attr(id, "HoldReason", true);
  EXPECT_EQ(ReadFileOr(env_.dir() + "/out.txt"), "renewed under me\n");
  EXPECT_EQ(ReadFileOr(env_.dir() + "/job.log").find("012 ("), std::string::npos)
      << "the job was held\n"
      << ReadFileOr(env_.dir() + "/job.log");
}

// A job removed before it reached its site (the site never answers) leaves the queue at once; its
// gridmanager hears of it, stops retrying the submit, and exits like any with no jobs left.
TEST_F(GridE2E, AGridManagerDoesNotLingerForJobsRemovedBeforeTheyReachedASite) {
  int c = env_.Submit(
      "universe = grid\ngrid_resource = kite 127.0.0.1:1/fork\n"
      "executable = /bin/true\nqueue 3\n");
  auto gridmanager = [&] {
    return RunCommand({"pgrep", "-f", "kite-gridmanager --home " + env_.home()}).exit_code == 0;
  };
  ASSERT_TRUE(WaitUntil(gridmanager, 20)) << "no gridmanager started";
  std::this_thread::sleep_for(std::chrono::seconds(2));  // its submits fail and back off
  ASSERT_EQ(env_.Kite({"rm", std::to_string(c)}).exit_code, 0);
  EXPECT_TRUE(WaitUntil([&] { return !gridmanager(); }, 20))
      << ReadFileOr(env_.home() + "/gridmanager.log");
}

}  // namespace
}  // namespace kite::testing
