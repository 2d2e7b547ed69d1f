// Grid jobs into a real Slurm through the whole stack, as a user runs them: `kite testgrid up
// --batch slurm` against a private single-node cluster (tests/fixtures/slurm/), `kite agent
// start`, `kite submit` of universe = grid jobs, `kite rm`, `kite wait` — and the real kite-agent,
// kite-gridmanager, kite-gatekeeper, kite-jobmanager, sbatch/squeue/scancel, slurmctld, slurmd
// and kite-exec processes on loopback with real TLS. Each test starts its own cluster; one that
// cannot start fails the test with the reason. Wrappers named sbatch, squeue and scancel, first
// in the PATH the gatekeeper passes to its job managers, count every call before running the
// real one.
//
// Jobs that must not reach their end run `sleep 300 && touch MARKER`, not `sleep 300; touch
// MARKER`: Slurm sends its SIGTERM to the job's processes one at a time, and a shell whose sleep
// died first may run its next command before its own signal arrives.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "gram/client.h"
#include "tests/fixtures/kite_env.h"
#include "tests/fixtures/slurm/slurm_cluster.h"
#include "tests/fixtures/tool_calls.h"

namespace kite::testing {
namespace {

class SlurmStack : public ::testing::Test {
 protected:
  // A cluster whose node has `cpus` CPUs, a test grid with the slurm adapter in front of it, and
  // an agent whose gridmanagers probe quiet jobs every 2 s (so a killed job manager is noticed).
  void StartAll(int cpus = 8) {
    cluster_ = std::make_unique<SlurmCluster>(env_.dir() + "/cluster", cpus);
    ASSERT_TRUE(cluster_->ok()) << cluster_->error();
    tools_ = std::make_unique<ToolCalls>(env_.dir() + "/bin",
                                         std::vector<std::string>{"sbatch", "squeue", "scancel"});
    ASSERT_TRUE(tools_->ok());
    env_.AddEnv(cluster_->conf_env());
    env_.AddEnv("PATH=" + tools_->dir() + ":/usr/local/bin:/usr/bin:/bin");
    env_.AddEnv("X509_USER_PROXY=" + env_.dir() + "/x509up");
    env_.AddEnv("X509_CERT_DIR=" + env_.home() + "/ca/certificates");
    std::filesystem::create_directories(env_.home());
    WriteFile(env_.home() + "/config.toml", "[grid]\nprobe_interval = 2\n");
    auto r = env_.Kite({"testgrid", "up", "--batch", "slurm"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("with the slurm adapter"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("SLURM_CONF=" + cluster_->conf()), std::string::npos) << r.out;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m, std::regex("grid_resource = kite [^\n]+/slurm")))
        << r.out;
    resource_ = m[0];
    started_ = true;
    env_.StartAgent();
  }

  void TearDown() override {
    if (HasFailure()) {
      for (const char* log : {"gridmanager.log", "testgrid/gatekeeper.log"}) {
        std::string text = ReadFileOr(env_.home() + "/" + log);
        std::fprintf(stderr, "--- %s (tail):\n%s\n", log,
                     text.substr(text.size() > 3000 ? text.size() - 3000 : 0).c_str());
      }
      std::string jm = ReadFileOr(AccountDir() + "/jobmanager.log");
      std::fprintf(stderr, "--- jobmanager.log (tail):\n%s\n",
                   jm.substr(jm.size() > 4000 ? jm.size() - 4000 : 0).c_str());
    }
    if (started_) {
      env_.StopAgent();
      auto r = env_.Kite({"testgrid", "down"});  // the gatekeeper and its job managers
      EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
      EXPECT_EQ(JobManagerPid(), 0) << "testgrid down left the job manager running";
    }
    cluster_.reset();  // after the job managers: they must not see Slurm vanish first
  }

  std::string Sub(const std::string& body) const {
    return "universe = grid\n" + resource_ + "\nlog = job.log\n" + body;
  }
  // A job running `script` with /bin/sh at the site.
  std::string Shell(const std::string& script) const {
    return "executable = /bin/sh\ntransfer_executable = false\narguments = \"-c '" + script +
           "'\"\n";
  }
  // `kite wait` until every job of the cluster has left the queue.
  void WaitDone(int cluster, int seconds = 90) const {
    auto r = env_.Kite({"wait", "--timeout", std::to_string(seconds), std::to_string(cluster)});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err << env_.Kite({"q", "-nobatch"}).out;
  }
  std::string Attr(const std::string& id, const std::string& attr, bool history) const {
    return env_.JobAttr(id, attr, history);
  }

  int Calls(const std::string& tool) const { return tools_->Count(tool); }

  // Slurm's id of Kite job `id` (C.P) while it has a site job: by the name the adapter gives it
  // (kite-<site job id>); "" when there is none.
  std::string SlurmId(const std::string& id) const {
    std::string contact = Attr(id, "GridJobId", false);
    if (contact.size() < 2) return "";
    std::string site = gram::JobIdFromContact(contact.substr(1, contact.size() - 2));
    if (site.empty()) return "";
    return cluster_->JobId("kite-" + site);
  }
  // Every job Slurm knows, by id: its state.
  std::map<std::string, std::string> SlurmJobs() const {
    auto r = cluster_->Run({"squeue", "--noheader", "--states=all", "--format=%i %T"});
    std::map<std::string, std::string> out;
    std::istringstream in(r.out);
    for (std::string id, state; in >> id >> state;) out[id] = state;
    return out;
  }

  std::string AccountDir() const {
    const passwd* pw = ::getpwuid(::geteuid());
    std::string account = pw ? pw->pw_name : std::to_string(::geteuid());
    return env_.home() + "/testgrid/state/users/" + account;
  }
  // The job manager serving this account; 0 when none runs.
  pid_t JobManagerPid() const {
    int fd = ::open((AccountDir() + "/jm.lock").c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return 0;
    bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
    ::close(fd);
    if (!held) return 0;
    return static_cast<pid_t>(std::atoi(ReadFileOr(AccountDir() + "/jm.pid", "0").c_str()));
  }

  // The node takes no jobs / takes jobs again.
  void Drain() const {
    auto r = cluster_->HoldQueues();
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  void Resume() const {
    auto r = cluster_->ReleaseQueues();
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  KiteEnv env_{"slurm-stack"};
  std::unique_ptr<SlurmCluster> cluster_;
  std::unique_ptr<ToolCalls> tools_;
  std::string resource_;
  bool started_ = false;
};

TEST_F(SlurmStack, JobsRunInSlurmWithTheirRequestsAndTheirExactExitCodesAndOutputComeBack) {
  ASSERT_NO_FATAL_FAILURE(StartAll());
  // Two jobs, exiting 0 and 3; both print where they ran.
  int c = env_.Submit(Sub(Shell("echo slurm job $SLURM_JOB_ID on $SLURM_JOB_PARTITION with "
                                "$SLURM_CPUS_PER_TASK cpus; echo oops >&2; exit $(code)") +
                          "output = out.$(Process)\nerror = err.$(Process)\n"
                          "request_cpus = 2\nrequest_memory = 100 MB\n+MaxWallTime = 5\n"
                          "batch_queue = other\nqueue code in (0, 3)\n"));
  WaitDone(c);
  std::set<std::string> ran;  // the Slurm ids the jobs saw
  for (int p = 0; p < 2; ++p) {
    std::string id = std::to_string(c) + "." + std::to_string(p);
    EXPECT_EQ(Attr(id, "JobStatus", true), "4") << id;
    EXPECT_EQ(Attr(id, "ExitCode", true), std::to_string(p * 3)) << id;
    std::string out = ReadFileOr(env_.dir() + "/out." + std::to_string(p));
    std::smatch m;
    EXPECT_TRUE(std::regex_match(out, m, std::regex("slurm job ([0-9]+) on other with 2 cpus\n")))
        << out;
    if (!m.empty()) ran.insert(m[1]);
    EXPECT_EQ(ReadFileOr(env_.dir() + "/err." + std::to_string(p)), "oops\n");
  }
  // Slurm ran exactly these two, with what they asked for.
  auto jobs = SlurmJobs();
  ASSERT_EQ(jobs.size(), 2u);
  for (const auto& [sid, state] : jobs) {
    EXPECT_EQ(state, "COMPLETED") << sid;
    EXPECT_TRUE(ran.contains(sid)) << sid;
    auto show = cluster_->Run({"scontrol", "--oneliner", "show", "job", sid});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    for (const char* want : {"NumCPUs=2 ", "MinMemoryNode=100M ", "TimeLimit=00:05:00 ",
                             "Partition=other ", "JobName=kite-"}) {
      EXPECT_NE(show.out.find(want), std::string::npos) << want << " in " << show.out;
    }
  }
  EXPECT_EQ(Calls("sbatch"), 2);
  EXPECT_EQ(Calls("scancel"), 0);
  std::string log = ReadFileOr(env_.dir() + "/job.log");
  for (const char* code : {"000 (", "027 (", "001 (", "005 ("}) {
    EXPECT_NE(log.find(code), std::string::npos) << code << " missing in\n" << log;
  }
  EXPECT_NE(log.find("return value 3"), std::string::npos) << log;
}

TEST_F(SlurmStack, AJobPastItsWalltimeIsStoppedBySlurmAndHeldWithTheReason) {
  ASSERT_NO_FATAL_FAILURE(StartAll());
  std::string marker = env_.dir() + "/finished";
  // Slurm's smallest limit is a minute; it looks for jobs past theirs every 30 s.
  int c = env_.Submit(Sub(Shell("sleep 300 && touch " + marker) + "+MaxWallTime = 1\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  std::string sid;
  ASSERT_TRUE(WaitUntil([&] { return !(sid = SlurmId(id)).empty(); }, 60));
  auto show = cluster_->Run({"scontrol", "--oneliner", "show", "job", sid});
  EXPECT_NE(show.out.find("TimeLimit=00:01:00 "), std::string::npos) << show.out;
  ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(id) == 5; }, 150))
      << "state " << env_.JobStatus(id) << ", Slurm: " << cluster_->JobState(sid);
  std::string reason = Attr(id, "HoldReason", false);
  EXPECT_NE(reason.find("batch-limit-exceeded"), std::string::npos) << reason;
  EXPECT_NE(reason.find("TIMEOUT"), std::string::npos) << reason;
  EXPECT_EQ(Attr(id, "HoldReasonCode", false), "2");
  EXPECT_EQ(cluster_->JobState(sid), "TIMEOUT");
  EXPECT_EQ(Calls("sbatch"), 1) << "a job past its walltime must not be run again";
  EXPECT_FALSE(std::filesystem::exists(marker));
  std::string log = ReadFileOr(env_.dir() + "/job.log");
  EXPECT_NE(log.find("012 ("), std::string::npos) << log;
  // Removing the held job leaves nothing behind.
  ASSERT_EQ(env_.Kite({"rm", id}).exit_code, 0);
  WaitDone(c);
}

TEST_F(SlurmStack, RemoveWhilePendingTakesTheJobOutOfSlurmBeforeItRuns) {
  ASSERT_NO_FATAL_FAILURE(StartAll());
  ASSERT_NO_FATAL_FAILURE(Drain());
  std::string marker = env_.dir() + "/ran";
  int c = env_.Submit(Sub(Shell("touch " + marker) + "queue\n"));
  std::string id = std::to_string(c) + ".0";
  std::string sid;
  ASSERT_TRUE(WaitUntil([&] { return !(sid = SlurmId(id)).empty(); }, 60));
  EXPECT_EQ(cluster_->JobState(sid), "PENDING");
  EXPECT_EQ(env_.JobStatus(id), 1);  // idle in Kite too
  auto r = env_.Kite({"rm", id});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  WaitDone(c, 60);
  // It leaves the queue (for the history) once its site has confirmed the cancel.
  EXPECT_TRUE(WaitUntil([&] { return Attr(id, "JobStatus", true) == "3"; }, 60))
      << env_.Kite({"q", "-nobatch"}).out;
  EXPECT_TRUE(WaitUntil([&] { return cluster_->JobState(sid) == "CANCELLED"; }, 30))
      << cluster_->JobState(sid);
  EXPECT_TRUE(cluster_->Jobs("PENDING,RUNNING,COMPLETING").empty());
  ASSERT_NO_FATAL_FAILURE(Resume());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the removed job ran";
}

TEST_F(SlurmStack, RemoveWhileRunningStopsTheJobAndTheSlurmJobIsGone) {
  ASSERT_NO_FATAL_FAILURE(StartAll());
  std::string started = env_.dir() + "/started", finished = env_.dir() + "/finished";
  int c =
      env_.Submit(Sub(Shell("touch " + started + "; sleep 300 && touch " + finished) + "queue\n"));
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(started); }, 60));
  std::string sid = SlurmId(id);
  ASSERT_FALSE(sid.empty());
  EXPECT_EQ(cluster_->JobState(sid), "RUNNING");
  ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(id) == 2; }, 30));
  auto r = env_.Kite({"rm", id});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  WaitDone(c, 60);
  // It leaves the queue (for the history) once its site has confirmed the cancel.
  EXPECT_TRUE(WaitUntil([&] { return Attr(id, "JobStatus", true) == "3"; }, 60))
      << env_.Kite({"q", "-nobatch"}).out;
  EXPECT_TRUE(WaitUntil([&] { return cluster_->JobState(sid) == "CANCELLED"; }, 30))
      << cluster_->JobState(sid);
  EXPECT_TRUE(cluster_->Jobs("PENDING,RUNNING,COMPLETING").empty());
  EXPECT_FALSE(std::filesystem::exists(finished));
}

TEST_F(SlurmStack, AJobManagerKilledWhileJobsPendAndRunRecoversThemAllAndSubmitsNothingTwice) {
  ASSERT_NO_FATAL_FAILURE(StartAll());
  std::string count = env_.dir() + "/count";
  auto jobs = [&](const std::string& numbers) {
    // Each job appends its number once per run, then ends with it as its exit code.
    return Sub(Shell("echo $(n) >> " + count + "; sleep 8; exit $(n)") + "queue n in (" + numbers +
               ")\n");
  };
  int running = env_.Submit(jobs("0, 1"));
  ASSERT_TRUE(WaitUntil([&] { return cluster_->Jobs("RUNNING").size() == 2; }, 60))
      << cluster_->Jobs("all").size();
  ASSERT_NO_FATAL_FAILURE(Drain());  // the next two wait in Slurm's queue
  int pending = env_.Submit(jobs("2, 3"), "pending.sub");
  ASSERT_TRUE(WaitUntil([&] { return cluster_->Jobs("PENDING").size() == 2; }, 60))
      << Calls("sbatch");
  ASSERT_EQ(cluster_->Jobs("RUNNING").size(), 2u) << "the first jobs ended too soon";
  pid_t jm = JobManagerPid();
  ASSERT_GT(jm, 0);
  ASSERT_EQ(::kill(jm, SIGKILL), 0);
  ASSERT_TRUE(WaitUntil([&] { return JobManagerPid() != jm; }, 10));
  ASSERT_NO_FATAL_FAILURE(Resume());
  // The gridmanagers' next probe reaches the gatekeeper, which starts a new job manager; it
  // finds all four in Slurm by the ids it stored, and follows them to their ends.
  WaitDone(running);
  WaitDone(pending);
  EXPECT_NE(JobManagerPid(), 0);
  EXPECT_NE(JobManagerPid(), jm);
  std::map<int, int> runs;
  std::istringstream in(ReadFileOr(count));
  for (int p; in >> p;) ++runs[p];
  for (int n = 0; n < 4; ++n) {
    EXPECT_EQ(runs[n], 1) << "job " << n << " ran " << runs[n] << " times";
    std::string id = std::to_string(n < 2 ? running : pending) + "." + std::to_string(n % 2);
    EXPECT_EQ(Attr(id, "JobStatus", true), "4") << id;
    EXPECT_EQ(Attr(id, "ExitCode", true), std::to_string(n)) << id;
  }
  EXPECT_EQ(Calls("sbatch"), 4);
  auto all = SlurmJobs();
  EXPECT_EQ(all.size(), 4u);
  for (const auto& [sid, state] : all) EXPECT_EQ(state, "COMPLETED") << sid;
}

TEST_F(SlurmStack, ASlurmJobCancelledBehindKitesBackIsReportedAndRunAgain) {
  ASSERT_NO_FATAL_FAILURE(StartAll());
  std::string first = env_.dir() + "/first";
  // The first run waits to be cancelled; the second one finishes.
  int c =
      env_.Submit(Sub(Shell("if [ -e " + first + " ]; then echo second run; exit 4; fi; touch " +
                            first + "; sleep 300") +
                      "output = out.txt\nqueue\n"));
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(first); }, 60));
  std::string sid = SlurmId(id);
  ASSERT_FALSE(sid.empty());
  auto r = cluster_->Run({"scancel", sid});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  WaitDone(c, 90);
  EXPECT_EQ(Attr(id, "JobStatus", true), "4");
  EXPECT_EQ(Attr(id, "ExitCode", true), "4");
  EXPECT_EQ(ReadFileOr(env_.dir() + "/out.txt"), "second run\n");
  std::string log = ReadFileOr(env_.dir() + "/job.log");
  EXPECT_NE(log.find("batch-lost"), std::string::npos) << log;
  EXPECT_NE(log.find("CANCELLED"), std::string::npos) << log;
  EXPECT_NE(log.find("resubmitting (attempt 2 of 4)"), std::string::npos) << log;
  EXPECT_NE(log.find("return value 4"), std::string::npos) << log;
  EXPECT_EQ(Calls("sbatch"), 2);
  auto all = SlurmJobs();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[sid], "CANCELLED");
  for (const auto& [other, state] : all) {
    if (other != sid) {
      EXPECT_EQ(state, "COMPLETED") << other;
    }
  }
}

}  // namespace
}  // namespace kite::testing
