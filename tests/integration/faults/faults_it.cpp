// The fault-injection suite (Condor-G's four failure types plus local crashes): real agent,
// gridmanager, gatekeeper, job managers and jobs on loopback, with processes killed (-9) by role,
// stopped (SIGSTOP) and a whole site crashed and brought back on the same port. Every scenario
// checks what a user cares about: each job ran exactly once (a side-effect counter per job), no
// job is lost, every output file holds exactly the bytes the job wrote, and the queue ends right.
// Each prints one summary line; the soak prints its seed (KITE_FAULT_SEED=N replays one).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// What a job of the suite writes to its output: "job P\n" repeated up to `bytes`.
std::string ExpectedOutput(int proc, int bytes) {
  std::string line = "job " + std::to_string(proc) + "\n", out;
  while (static_cast<int>(out.size()) < bytes) out += line;
  out.resize(static_cast<size_t>(bytes));
  return out;
}

struct Tally {
  int jobs = 0, faults = 0, exactly_once = 0, lost = 0, duplicated = 0;
  long bytes_checked = 0;
};

class Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.AddEnv("X509_USER_PROXY=" + env_.dir() + "/x509up");
    env_.AddEnv("X509_CERT_DIR=" + env_.home() + "/ca/certificates");
    auto r = env_.Kite({"testgrid", "up"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m, std::regex("grid_resource = kite [^\n]+"))) << r.out;
    resource_ = m[0];
    // A silent job manager is noticed within a few seconds (the gridmanager probes its jobs).
    WriteFile(env_.home() + "/config.toml", "[grid]\nprobe_interval = 2\n");
    env_.StartAgent();
  }
  void TearDown() override {
    ::kill(Pid("gatekeeper"), SIGCONT);
    env_.StopAgent();
    env_.Kite({"testgrid", "down"});
    RunCommand({"pkill", "-9", "-f", "kite-jobmanager --state-dir " + State()});
  }

  std::string State() const { return env_.home() + "/testgrid/state"; }

  // The pid of a Kite process by role; 0 when none runs.
  pid_t Pid(const std::string& role) const {
    std::string pattern;
    if (role == "agent") return env_.AgentPid();
    if (role == "gatekeeper") {
      return std::atoi(ReadFileOr(env_.home() + "/testgrid/gatekeeper.pid", "0").c_str());
    }
    if (role == "gridmanager") pattern = "kite-gridmanager --home " + env_.home();
    if (role == "jobmanager") pattern = "kite-jobmanager --state-dir " + State();
    auto r = RunCommand({"pgrep", "-o", "-f", pattern});
    return r.exit_code == 0 ? std::atoi(r.out.c_str()) : 0;
  }

  // kill -9 of one role; false when it was not running.
  bool Kill(const std::string& role) {
    if (role == "agent") {
      if (env_.AgentPid() == 0) return false;
      env_.KillAgent();
      return true;
    }
    pid_t pid = Pid(role);
    if (pid <= 0) return false;
    if (role == "gatekeeper")
      gatekeeper_cmd_ = ReadFileOr("/proc/" + std::to_string(pid) + "/cmdline");
    return ::kill(pid, SIGKILL) == 0;
  }

  // The site comes back: the gatekeeper starts again on its old port (the contacts of the jobs
  // there name it); it starts job managers as jobs are asked about.
  void RestartGatekeeper() {
    ASSERT_FALSE(gatekeeper_cmd_.empty());
    std::string port = Trimmed(ReadFileOr(env_.home() + "/testgrid/gatekeeper.port"));
    std::string cmd = "exec";
    for (size_t start = 0; start < gatekeeper_cmd_.size();) {
      size_t end = gatekeeper_cmd_.find('\0', start);
      std::string a = gatekeeper_cmd_.substr(start, end - start);
      if (a == "127.0.0.1:0") a = "127.0.0.1:" + port;
      cmd += " '" + a + "'";
      start = end + 1;
    }
    auto r = RunCommand({"/bin/sh", "-c",
                         "(" + cmd +
                             " >>\"$0/gatekeeper.out\" 2>&1 </dev/null &) ; sleep 0.2; pgrep -n -f "
                             "'kite-gatekeeper --listen 127.0.0.1:" +
                             port + "'",
                         env_.home() + "/testgrid"},
                        env_.Env());
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    WriteFile(env_.home() + "/testgrid/gatekeeper.pid", Trimmed(r.out) + "\n");
  }

  void Crash(const std::string& what) {
    if (what == "site") {
      ASSERT_TRUE(Kill("gatekeeper"));
      RunCommand({"pkill", "-9", "-f", "kite-jobmanager --state-dir " + State()});
    } else {
      Kill(what);
    }
  }
  void Recover(const std::string& what) {
    if (what == "site") {
      ASSERT_NO_FATAL_FAILURE(RestartGatekeeper());
    }
    if (what == "agent") env_.StartAgent();
    // gridmanager and job managers are started again by the agent and the gatekeeper.
  }

  // A cluster of `n` jobs that each note their start, run `secs` seconds and write `bytes` bytes.
  int SubmitJobs(int n, double secs, int bytes) {
    starts_ = env_.dir() + "/starts";
    return env_.Submit("universe = grid\n" + resource_ +
                       "\nexecutable = /bin/sh\ntransfer_executable = false\n"
                       "arguments = \"-c 'echo $(Process) >> " +
                       starts_ + "; sleep " + std::to_string(secs) +
                       "; yes job $(Process) | head -c " + std::to_string(bytes) +
                       "'\"\noutput = out.$(Process)\nlog = jobs.log\nqueue " + std::to_string(n) +
                       "\n");
  }

  void WaitDone(int cluster, int limit) const {
    auto r = env_.Kite({"wait", "--timeout", std::to_string(limit), std::to_string(cluster)});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << env_.Kite({"q", "-grid"}).out;
    // Completed jobs leave the queue once the site forgot them; wait for history to hold all.
    ASSERT_TRUE(WaitUntil(
        [&] {
          return env_.Kite({"q", std::to_string(cluster)}).out.find(" R ") == std::string::npos;
        },
        30));
  }

  Tally Check(const std::string& scenario, int cluster, int n, int bytes, int faults) {
    Tally t;
    t.jobs = n;
    t.faults = faults;
    std::map<int, int> starts;
    std::istringstream in(ReadFileOr(starts_));
    for (int p; in >> p;) ++starts[p];
    auto hist = env_.Kite({"history", "-json", std::to_string(cluster)});
    for (int p = 0; p < n; ++p) {
      std::string id = std::to_string(cluster) + "." + std::to_string(p);
      bool completed = env_.JobStatus(id) == 4;
      if (!completed) ++t.lost;
      if (starts[p] > 1) ++t.duplicated;
      if (starts[p] == 1 && completed) ++t.exactly_once;
      std::string out = ReadFileOr(env_.dir() + "/out." + std::to_string(p));
      EXPECT_EQ(out, ExpectedOutput(p, bytes))
          << "job " << id << " output (" << out.size() << " bytes)";
      if (out == ExpectedOutput(p, bytes)) t.bytes_checked += static_cast<long>(out.size());
      EXPECT_TRUE(completed) << "job " << id << " status " << env_.JobStatus(id);
      EXPECT_LE(starts[p], 1) << "job " << id << " ran " << starts[p] << " times";
    }
    std::cout << "faults: scenario=" << scenario << " jobs=" << t.jobs << " faults=" << t.faults
              << " exactly_once=" << t.exactly_once << " lost=" << t.lost
              << " duplicated=" << t.duplicated << " bytes_checked=" << t.bytes_checked
              << std::endl;
    EXPECT_EQ(t.exactly_once, n);
    EXPECT_EQ(t.lost, 0);
    EXPECT_EQ(t.duplicated, 0);
    return t;
  }

  bool Started(int at_least) const {
    std::istringstream in(ReadFileOr(starts_));
    int k = 0;
    for (int p; in >> p;) ++k;
    return k >= at_least;
  }

  KiteEnv env_{"faults"};
  std::string resource_, starts_, gatekeeper_cmd_;
};

// (1) The job manager dies while its jobs run: the gridmanager's probe goes unanswered by it, the
// gatekeeper starts a new one, which finds the jobs from its table and the jobs' own records.
TEST_F(Faults, JobManagerKilledWhileJobsRun) {
  constexpr int kJobs = 10, kBytes = 20000;
  int c = SubmitJobs(kJobs, 3, kBytes);
  ASSERT_TRUE(WaitUntil([&] { return Started(kJobs); }, 60));
  int faults = 0;
  faults += Kill("jobmanager");
  ASSERT_EQ(faults, 1) << "no job manager ran";
  std::this_thread::sleep_for(milliseconds(1500));
  faults += Kill("jobmanager");  // and the one started after it, if already there
  ASSERT_NO_FATAL_FAILURE(WaitDone(c, 120));
  Check("jobmanager-kill", c, kJobs, kBytes, faults);
}

// (2) The site crashes (gatekeeper and job manager together) and is back 6 s later on the same
// port; the jobs there finish meanwhile and their ends and output are collected afterwards.
TEST_F(Faults, SiteCrashedAndRestartedLater) {
  constexpr int kJobs = 10, kBytes = 20000;
  int c = SubmitJobs(kJobs, 2, kBytes);
  ASSERT_TRUE(WaitUntil([&] { return Started(kJobs); }, 60));
  ASSERT_NO_FATAL_FAILURE(Crash("site"));
  std::this_thread::sleep_for(seconds(6));
  // Nothing was held or failed while the site was away.
  auto q = env_.Kite({"q", "-nobatch", std::to_string(c)});
  EXPECT_EQ(q.out.find(" H "), std::string::npos) << q.out;
  ASSERT_NO_FATAL_FAILURE(Recover("site"));
  ASSERT_NO_FATAL_FAILURE(WaitDone(c, 120));
  Check("site-crash", c, kJobs, kBytes, 1);
}

// (3) The gridmanager is killed during submit and commit, then again while output streams, then
// the agent: nothing is submitted twice and nothing forgotten.
TEST_F(Faults, GridmanagerThenAgentKilledDuringSubmitCommitAndStageOut) {
  constexpr int kJobs = 30, kBytes = 200000;
  int c = SubmitJobs(kJobs, 1, kBytes);
  int faults = 0;
  std::this_thread::sleep_for(milliseconds(200));
  faults += Kill("gridmanager");  // submits and commits under way
  ASSERT_TRUE(WaitUntil([&] { return Started(1); }, 30));
  ASSERT_TRUE(WaitUntil([&] { return Pid("gridmanager") != 0; }, 30));
  faults += Kill("gridmanager");  // stage-out and commit-end under way
  faults += Kill("agent");
  std::this_thread::sleep_for(milliseconds(500));
  env_.StartAgent();
  ASSERT_NO_FATAL_FAILURE(WaitDone(c, 180));
  Check("gridmanager-agent-kill", c, kJobs, kBytes, faults);
}

// (5) A soak: 500 jobs while a fault of a random kind hits every few seconds for a bounded time.
TEST_F(Faults, SoakWithRandomFaults) {
  constexpr int kJobs = 500, kBytes = 3000;
  unsigned seed = std::random_device{}();
  if (const char* s = std::getenv("KITE_FAULT_SEED")) seed = static_cast<unsigned>(std::atol(s));
  std::cout << "faults: soak seed=" << seed << " (KITE_FAULT_SEED=" << seed << " replays it)"
            << std::endl;
  std::mt19937 rng(seed);
  int c = SubmitJobs(kJobs, 0.5, kBytes);
  const std::vector<std::string> kinds = {"gridmanager", "jobmanager", "agent", "site", "hang"};
  int faults = 0;
  auto until = std::chrono::steady_clock::now() + seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(std::uniform_int_distribution<int>(2000, 5000)(rng)));
    std::string kind = kinds[std::uniform_int_distribution<size_t>(0, kinds.size() - 1)(rng)];
    if (kind == "hang") {
      pid_t gk = Pid("gatekeeper");
      if (gk <= 0) continue;
      ::kill(gk, SIGSTOP);
      std::this_thread::sleep_for(seconds(3));
      ::kill(gk, SIGCONT);
    } else {
      ASSERT_NO_FATAL_FAILURE(Crash(kind));
      if (kind == "site") std::this_thread::sleep_for(seconds(2));
      ASSERT_NO_FATAL_FAILURE(Recover(kind));
    }
    std::cout << "faults: soak fault " << ++faults << ": " << kind << std::endl;
  }
  ASSERT_NO_FATAL_FAILURE(WaitDone(c, 600));
  Check("soak", c, kJobs, kBytes, faults);
}

}  // namespace
}  // namespace kite::testing
