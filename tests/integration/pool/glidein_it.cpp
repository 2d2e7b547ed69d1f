// A personal pool from a glide-in, end to end, as a user builds one: `kite testgrid up`, an agent
// with no local slots, `kite glidein submit` to the test grid; the glide-in's kite-startd dials
// the agent's pool listener over mutual TLS, its two slots appear in `kite status`, four vanilla
// jobs run there with their input sent and their output brought back byte for byte, and the
// glide-in leaves by itself when idle, its grid job completing.
//
// Needs the agent's TLS pool listener ($KITE_HOME/pool.address) and kite-startd's
// --agent tls:HOST:PORT --agent-identity: registered in CMakeLists.txt once those are in.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <string>

#include "common/strings.h"
#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

class GlideinPool : public ::testing::Test {
 protected:
  void SetUp() override {
    // The test grid's CA, user certificate and proxy (kite testgrid up makes the proxy when
    // there is none, as `kite proxy init` would from the user's certificate).
    resource_ = env_.TestgridUp();
    ASSERT_FALSE(resource_.empty());
    auto info = env_.Kite({"proxy", "info"});
    ASSERT_EQ(info.exit_code, 0) << info.out << info.err;
    WriteFile(env_.home() + "/config.toml", "[pool]\nlocal_slots = 0\n");
    env_.StartAgent();
    ASSERT_TRUE(WaitUntil([&] { return !ReadFileOr(env_.home() + "/pool.address").empty(); }, 30))
        << "the agent wrote no pool.address: is its TLS pool listener in?";
  }
  void TearDown() override {
    env_.Kite({"glidein", "rm", "-all"});
    env_.StopAgent();
    env_.Kite({"testgrid", "down"});
  }

  // Slot ads of glide-ins in `kite status -json`.
  int GlideinSlots() const {
    auto r = env_.Kite(
        {"status", "-constraint", "GlideinResource == \"" + resource_ + "\"", "-af", "Name"});
    if (r.exit_code != 0) return -1;
    int n = 0;
    for (char c : r.out) n += c == '\n';
    return n;
  }
  std::string Attr(const std::string& id, const std::string& attr, bool history) const {
    auto r = env_.Kite({history ? "history" : "q", "-json", id});
    std::smatch m;
    std::regex re("\"" + attr + "\": ([^\n]+?),?\n");
    return std::regex_search(r.out, m, re) ? std::string(m[1]) : "";
  }

  // The user's identity, as the glide-ins are told the agent's (kite proxy info --identity).
  std::string Identity() const {
    auto r = env_.Kite({"proxy", "info", "--identity"});
    return std::string(Trim(r.out));
  }

  // One glide-in of CPUS slots that leaves after IDLE without a job: its job id ("C.0"), once its
  // slots are in the pool.
  std::string SubmitGlidein(int cpus, const std::string& idle) {
    auto r = env_.Kite({"glidein", "submit", "--resource", resource_, "--count", "1", "--cpus",
                        std::to_string(cpus), "--idle-timeout", idle});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::smatch m;
    if (!std::regex_search(r.out, m, std::regex("submitted to cluster (\\d+)\\."))) {
      ADD_FAILURE() << r.out;
      return "";
    }
    std::string glidein = std::string(m[1]) + ".0";
    EXPECT_TRUE(WaitUntil([&] { return GlideinSlots() == cpus; }, 90))
        << env_.Kite({"status", "-json"}).out << env_.Kite({"q", "-grid"}).out
        << ReadFileOr(env_.home() + "/glidein/" + glidein + ".err");
    return glidein;
  }
  // COUNT jobs of six seconds, each marking its run in MARKS and saying it is done in out.P;
  // their cluster, once every one has started.
  int SubmitMarkingJobs(int count, const std::string& marks, const std::string& extra = "") {
    env_.Write("job.sh", "#!/bin/sh\necho \"run of $1\" >> \"$2\"\nsleep 6\necho \"job $1 done\"\n",
               0755);
    int c = env_.Submit("universe = vanilla\nexecutable = job.sh\narguments = $(Process) " + marks +
                        "\noutput = out.$(Process)\n" + extra + "queue " + std::to_string(count) +
                        "\n");
    EXPECT_TRUE(WaitUntil([&] { return Runs(marks) == count; }, 60))
        << ReadFileOr(marks) << env_.Kite({"q", "-nobatch"}).out;
    return c;
  }
  static int Runs(const std::string& marks) {
    auto text = ReadFileOr(marks);
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }
  // Each of those jobs ran once, ended well and said so.
  void ExpectEachRanOnce(int cluster, int count, const std::string& marks) {
    auto runs = ReadFileOr(marks);
    for (int p = 0; p < count; ++p) {
      std::string ps = std::to_string(p), id = std::to_string(cluster) + "." + ps;
      std::string line = "run of " + ps + "\n";
      EXPECT_EQ(runs.find(line), runs.rfind(line)) << "job " << ps << " ran twice:\n" << runs;
      EXPECT_EQ(Attr(id, "NumJobStarts", true), "1") << id;
      EXPECT_EQ(Attr(id, "ExitCode", true), "0") << id;
      EXPECT_EQ(ReadFileOr(env_.dir() + "/out." + ps), "job " + ps + " done\n");
    }
    EXPECT_EQ(Runs(marks), count);
  }

  KiteEnv env_{"glidein-pool"};
  std::string resource_;
};

// Input of job P: about 300 KiB of lines that say whose they are.
std::string InputOf(int p) {
  std::string s;
  for (int i = 0; s.size() < 300 * 1024; ++i)
    s += "line " + std::to_string(i) + " of job " + std::to_string(p) +
         ": abcdefghijklmnopqrstuvwxyz\n";
  return s;
}

std::string Upper(std::string s) {
  for (auto& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return s;
}

TEST_F(GlideinPool, GlideinSlotsRunVanillaJobsThenTheGlideinLeavesWhenIdle) {
  auto r = env_.Kite({"glidein", "submit", "--resource", resource_, "--count", "1", "--cpus", "2",
                      "--idle-timeout", "15s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(r.out, m, std::regex("1 glide-in\\(s\\) submitted to cluster (\\d+)\\.")))
      << r.out;
  std::string glidein = std::string(m[1]) + ".0";

  // Its two slots join the pool.
  ASSERT_TRUE(WaitUntil([&] { return GlideinSlots() == 2; }, 90))
      << env_.Kite({"status", "-json"}).out << env_.Kite({"q", "-grid"}).out
      << ReadFileOr(env_.home() + "/glidein/" + glidein + ".err");
  auto q = env_.Kite({"glidein", "q"});
  EXPECT_NE(q.out.find(glidein), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("1 glide-in(s), 2 slot(s)"), std::string::npos) << q.out;

  // Four vanilla jobs, two at a time on its slots.
  for (int p = 0; p < 4; ++p) env_.Write("in." + std::to_string(p), InputOf(p));
  env_.Write("upper.sh",
             "#!/bin/sh\ntr a-z A-Z < in.$1 > result.txt\necho \"job $1 read $(wc -c < in.$1) "
             "bytes\"\necho \"to stderr $1\" >&2\n",
             0755);
  int c = env_.Submit(
      "universe = vanilla\nexecutable = upper.sh\narguments = $(Process)\n"
      "transfer_input_files = in.$(Process)\nshould_transfer_files = YES\n"
      "when_to_transfer_output = ON_EXIT\ntransfer_output_files = result.txt\n"
      "transfer_output_remaps = \"result.txt = result.$(Process)\"\n"
      "output = out.$(Process)\nerror = err.$(Process)\nlog = vanilla.log\nqueue 4\n");
  auto w = env_.Kite({"wait", "--timeout", "120", std::to_string(c)});
  ASSERT_EQ(w.exit_code, 0) << w.out << w.err << env_.Kite({"q", "-nobatch"}).out
                            << env_.Kite({"q", "-better-analyze"}).out;
  for (int p = 0; p < 4; ++p) {
    std::string ps = std::to_string(p), id = std::to_string(c) + "." + ps;
    EXPECT_EQ(Attr(id, "JobStatus", true), "4") << id;
    EXPECT_EQ(Attr(id, "ExitCode", true), "0") << id;
    EXPECT_NE(Attr(id, "LastRemoteHost", true).find("@glidein-" + glidein), std::string::npos)
        << Attr(id, "LastRemoteHost", true);
    EXPECT_TRUE(ReadFileOr(env_.dir() + "/result." + ps) == Upper(InputOf(p)))
        << "result." << ps << " differs from the upper-cased input";
    EXPECT_EQ(ReadFileOr(env_.dir() + "/out." + ps),
              "job " + ps + " read " + std::to_string(InputOf(p).size()) + " bytes\n");
    EXPECT_EQ(ReadFileOr(env_.dir() + "/err." + ps), "to stderr " + ps + "\n");
  }

  // Idle for 15 s, the glide-in leaves: its slots go and its grid job completes.
  ASSERT_TRUE(WaitUntil([&] { return Attr(glidein, "JobStatus", true) == "4"; }, 120))
      << env_.Kite({"glidein", "q"}).out
      << ReadFileOr(env_.home() + "/glidein/" + glidein + ".err");
  EXPECT_EQ(Attr(glidein, "ExitCode", true), "0")
      << ReadFileOr(env_.home() + "/glidein/" + glidein + ".err");
  // It ran once: a glide-in that left on its idle timeout is not submitted again.
  EXPECT_EQ(Attr(glidein, "NumJobStarts", true), "1");
  EXPECT_EQ(Attr(glidein, "GridAttempt", true), "1") << "one attempt, ended";
  EXPECT_TRUE(WaitUntil([&] { return GlideinSlots() == 0; }, 30))
      << env_.Kite({"status", "-json"}).out;
}

// A glide-in joins with the pool credential it took along (docs/pool.md, "Trust"); `kite glidein
// rm` revokes it: its startd is shown out at once, and the same credential presented again (by a
// startd started by hand with the glide-in's credential file) is refused.
TEST_F(GlideinPool, KiteGlideinRmRevokesTheGlideinsCredential) {
  auto r = env_.Kite({"glidein", "submit", "--resource", resource_, "--count", "1", "--cpus", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(r.out, m, std::regex("1 glide-in\\(s\\) submitted to cluster (\\d+)\\.")));
  std::string glidein = std::string(m[1]) + ".0";
  std::string credential = env_.home() + "/glidein/" + glidein + ".credential";
  struct stat st {};
  ASSERT_EQ(::stat(credential.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_TRUE(WaitUntil([&] { return GlideinSlots() == 1; }, 90))
      << ReadFileOr(env_.home() + "/glidein/" + glidein + ".err");
  auto log = [&] { return ReadFileOr(env_.home() + "/agent.log"); };
  EXPECT_NE(log().find("startd 'glidein-" + glidein +
                       "' joined with 1 slot(s), 0 run(s) going on "
                       "(glidein "),
            std::string::npos)
      << log();
  auto rm = env_.Kite({"glidein", "rm", glidein});
  ASSERT_EQ(rm.exit_code, 0) << rm.out << rm.err;
  EXPECT_TRUE(WaitUntil(
      [&] { return log().find("showing startd 'glidein-" + glidein + "'") != std::string::npos; },
      30))
      << log();
  EXPECT_TRUE(WaitUntil([&] { return GlideinSlots() == 0; }, 30));
  // Its credential, presented again: refused.
  std::string address(Trim(ReadFileOr(env_.home() + "/pool.address")));
  std::string work = env_.dir() + "/again";
  auto again = RunCommand(
      {"timeout", "30", BinDir() + "/kite-startd", "--agent", "tls:" + address, "--agent-identity",
       Identity(), "--name", "glidein-" + glidein, "--credential", credential, "--work", work},
      env_.Env(), env_.dir());
  EXPECT_EQ(again.exit_code, 2) << again.out << again.err;
  EXPECT_NE(again.err.find("the agent refused this startd"), std::string::npos) << again.err;
  EXPECT_TRUE(log().find("refused startd 'glidein-" + glidein + "'") != std::string::npos) << log();
}

// want_remote_io in a glide-in: the file system's server (and the library) are staged with the
// startd, and the program's calls on the job's files -- through the kernel, from a sandbox whose
// socket path is too long for a socket address -- cross the glide-in's TLS connection to the
// agent's shadow.
TEST_F(GlideinPool, RemoteIoInAGlideinReachesTheUsersFilesThroughTheAgent) {
  auto r = env_.Kite({"glidein", "submit", "--resource", resource_, "--count", "1", "--cpus", "1",
                      "--idle-timeout", "60s"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_TRUE(WaitUntil([&] { return GlideinSlots() == 1; }, 90)) << env_.Kite({"q", "-grid"}).out;
  env_.Write("data.txt", InputOf(0));
  env_.Write("io.sh", "#!/bin/sh\ntr a-z A-Z < $1/data.txt > $1/upper.txt\n", 0755);
  int c = env_.Submit("universe = vanilla\nexecutable = io.sh\narguments = " + env_.dir() +
                      "\nwant_remote_io = true\nerror = io.err\nqueue\n");
  auto w = env_.Kite({"wait", "--timeout", "120", std::to_string(c)});
  ASSERT_EQ(w.exit_code, 0) << w.out << env_.Kite({"q", "-nobatch"}).out
                            << env_.Kite({"q", "-af", "HoldReason"}).out;
  std::string id = std::to_string(c) + ".0";
  EXPECT_EQ(Attr(id, "ExitCode", true), "0") << ReadFileOr(env_.dir() + "/io.err");
  EXPECT_NE(Attr(id, "LastRemoteHost", true).find("@glidein-"), std::string::npos);
  EXPECT_EQ(Attr(id, "RemoteIOMethod", true), "\"fuse\"");
  EXPECT_TRUE(ReadFileOr(env_.dir() + "/upper.txt") == Upper(InputOf(0)));
  EXPECT_EQ(Attr(id, "BytesRead", true), std::to_string(InputOf(0).size()));
  EXPECT_EQ(Attr(id, "BytesWritten", true), std::to_string(InputOf(0).size()));
}

// kill -9 of the agent while ten jobs run in a glide-in: they go on; the restarted agent listens
// on the port it had (the glide-in knows no other), the startd dials it again, and every result
// is collected once, none run twice.
TEST_F(GlideinPool, TenJobsInAGlideinOutliveAKilledAgentAndEachResultIsCollectedOnce) {
  std::string glidein = SubmitGlidein(10, "20s");
  ASSERT_FALSE(HasFailure());
  std::string address = ReadFileOr(env_.home() + "/pool.address");

  std::string marks = env_.dir() + "/marks";
  int c = SubmitMarkingJobs(10, marks, "log = ten.log\n");
  ASSERT_FALSE(HasFailure());
  // kite q -run names each job's slot in the glide-in (condor_q's HOST(S)), not this machine.
  auto run = env_.Kite({"q", "-run"}).out;
  for (int p = 0; p < 10; ++p) {
    std::string row = std::to_string(c) + "." + std::to_string(p);
    auto at = run.find(row);
    ASSERT_NE(at, std::string::npos) << run;
    auto line = run.substr(at, run.find('\n', at) - at);
    EXPECT_NE(line.find("@glidein-" + glidein), std::string::npos) << line;
    EXPECT_EQ(line.find(" local"), std::string::npos) << line;
  }
  env_.KillAgent();
  env_.StartAgent();
  ASSERT_TRUE(WaitUntil([&] { return !ReadFileOr(env_.home() + "/pool.address").empty(); }, 30));
  EXPECT_EQ(ReadFileOr(env_.home() + "/pool.address"), address) << "a new port after the restart";

  auto w = env_.Kite({"wait", "--timeout", "120", std::to_string(c)});
  ASSERT_EQ(w.exit_code, 0) << w.out << w.err << env_.Kite({"q", "-nobatch"}).out
                            << ReadFileOr(env_.home() + "/glidein/" + glidein + ".err");
  ExpectEachRanOnce(c, 10, marks);
  for (int p = 0; p < 10; ++p) {
    std::string id = std::to_string(c) + "." + std::to_string(p);
    EXPECT_NE(Attr(id, "LastRemoteHost", true).find("@glidein-" + glidein), std::string::npos)
        << Attr(id, "LastRemoteHost", true);
    // Its program ran about 6 s, counted once (not twice, as before).
    double wall = std::atof(Attr(id, "RemoteWallClockTime", true).c_str());
    EXPECT_GE(wall, 5.5) << id;
    EXPECT_LT(wall, 10.0) << id;
  }
}

// The desktop loses power while a glide-in runs jobs at a site: the agent and its gridmanager die
// at once (kill -9 of both), the glide-in and its jobs go on. The agent started again finds the
// glide-in as the grid job it was (nothing submitted anew), its startd dials in again, and each
// job ends once, its output whole.
TEST_F(GlideinPool, AfterTheDesktopGoesDownTheGlideinAndItsJobsGoOnAndEachEndsOnce) {
  std::string glidein = SubmitGlidein(4, "30s");
  ASSERT_FALSE(HasFailure());
  std::string grid_id = Attr(glidein, "GridJobId", false);
  ASSERT_FALSE(grid_id.empty());

  std::string marks = env_.dir() + "/marks";
  int c = SubmitMarkingJobs(4, marks);
  ASSERT_FALSE(HasFailure());
  // The power cut: the gridmanager and at once the agent (which would otherwise start another
  // after a pause; a gridmanager whose agent is gone leaves by itself), neither told.
  auto gm = RunCommand({"pkill", "-9", "-f", "kite-gridmanager .*" + env_.home()});
  env_.KillAgent();
  EXPECT_EQ(gm.exit_code, 0) << "no gridmanager of this agent was running";
  env_.StartAgent();

  auto w = env_.Kite({"wait", "--timeout", "120", std::to_string(c)});
  ASSERT_EQ(w.exit_code, 0) << w.out << w.err << env_.Kite({"q", "-nobatch"}).out;
  ExpectEachRanOnce(c, 4, marks);
  std::string now_id = Attr(glidein, "GridJobId", false);  // in the queue, or gone since
  if (now_id.empty()) now_id = Attr(glidein, "GridJobId", true);
  EXPECT_EQ(now_id, grid_id) << "the glide-in was submitted again";
}

// universe = standard in glide-ins: an unmodified C program with its state in memory runs in one
// glide-in, is vacated there — its transparent checkpoint taken first and sent home over the
// glide-in's TLS connection — and goes on in a second glide-in (whose START takes only jobs with
// a checkpoint) from exactly where it was, appending to the user's file through remote I/O.
TEST_F(GlideinPool, AStandardUniverseJobMovesBetweenGlideinsWithItsMemory) {
  auto a = env_.Kite({"glidein", "submit", "--resource", resource_, "--count", "1", "--cpus", "1",
                      "--idle-timeout", "60s", "--start", "TARGET.NumCheckpoints =?= undefined"});
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  auto b = env_.Kite({"glidein", "submit", "--resource", resource_, "--count", "1", "--cpus", "1",
                      "--idle-timeout", "60s", "--start", "TARGET.NumCheckpoints >= 1"});
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  ASSERT_TRUE(WaitUntil([&] { return GlideinSlots() == 2; }, 90)) << env_.Kite({"q", "-grid"}).out;
  env_.Write("tally.c",
             "#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n"
             "int main(int argc, char** argv) {\n"
             "  long* seen = calloc(100000, sizeof(long)); long total = 0;\n"
             "  FILE* f = fopen(argv[1], \"a\");\n"
             "  for (int i = 1; i <= 60; ++i) {\n"
             "    seen[i] = seen[i - 1] + i * i; total += seen[i];\n"
             "    fprintf(f, \"%d %ld %ld\\n\", i, seen[i], total); fflush(f); usleep(100000);\n"
             "  }\n  printf(\"total %ld\\n\", total); return 0;\n}\n");
  auto cc =
      RunCommand({"/usr/bin/cc", "-O1", "-o", env_.dir() + "/tally", env_.dir() + "/tally.c"});
  ASSERT_EQ(cc.exit_code, 0) << cc.err;
  int c = env_.Submit("universe = standard\nexecutable = tally\narguments = " + env_.dir() +
                      "/tally.txt\noutput = tally.out\nerror = tally.err\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  auto lines = [&] {
    auto t = ReadFileOr(env_.dir() + "/tally.txt");
    return std::count(t.begin(), t.end(), '\n');
  };
  ASSERT_TRUE(WaitUntil([&] { return lines() >= 15; }, 60)) << env_.Kite({"q", "-nobatch"}).out;
  std::string first = Attr(id, "RemoteHost", false);
  ASSERT_EQ(env_.Kite({"vacate", id}).exit_code, 0);
  auto w = env_.Kite({"wait", "--timeout", "120", std::to_string(c)});
  ASSERT_EQ(w.exit_code, 0) << w.out << env_.Kite({"q", "-nobatch"}).out;
  std::string expected;
  long seen = 0, total = 0;
  for (int i = 1; i <= 60; ++i) {
    seen += static_cast<long>(i) * i;
    total += seen;
    expected += std::to_string(i) + " " + std::to_string(seen) + " " + std::to_string(total) + "\n";
  }
  EXPECT_EQ(ReadFileOr(env_.dir() + "/tally.txt"), expected);
  EXPECT_EQ(ReadFileOr(env_.dir() + "/tally.out"), "total " + std::to_string(total) + "\n");
  EXPECT_EQ(Attr(id, "NumCheckpoints", true), "1");
  EXPECT_EQ(Attr(id, "NumJobStarts", true), "2");
  std::string last = Attr(id, "LastRemoteHost", true);
  EXPECT_NE(last, first) << "it went on in the other glide-in";
  EXPECT_NE(last.find("@glidein-"), std::string::npos) << last;
}

}  // namespace
}  // namespace kite::testing
