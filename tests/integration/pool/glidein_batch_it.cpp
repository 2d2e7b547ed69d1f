// Glide-ins through the real batch systems of the test fixtures: `kite testgrid up --batch slurm`
// (or sge) in front of a private single-node Slurm cluster (Grid Engine cell), an agent with no
// local slots, `kite glidein submit` there. Each glide-in is a batch job whose startd dials the
// agent over mutual TLS; vanilla jobs run in its slots with their files sent and brought back
// byte for byte, and it leaves by itself — when idle, when its lifetime ends (vacating a job that
// then finishes on the next glide-in), or when the batch system sends it SIGTERM — so the batch
// job ends long before its walltime. A cluster that cannot start fails the test with the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <regex>
#include <string>

#include "tests/fixtures/batch_cluster.h"
#include "tests/fixtures/kite_env.h"

namespace kite::testing {
namespace {

class GlideinBatch : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(env_.home());
    cluster_ = StartBatchCluster(batch(), env_.dir() + "/cluster", 4);
    ASSERT_TRUE(cluster_ && cluster_->ok()) << (cluster_ ? cluster_->error() : "no fixture");
    for (const auto& e : cluster_->env()) env_.AddEnv(e);
    resource_ = env_.TestgridUp({"--batch", batch()});
    ASSERT_NE(resource_.find("/" + batch()), std::string::npos) << resource_;
    WriteFile(env_.home() + "/config.toml", "[pool]\nlocal_slots = 0\n");
    env_.StartAgent();
    ASSERT_TRUE(WaitUntil([&] { return !ReadFileOr(env_.home() + "/pool.address").empty(); }, 30));
  }
  void TearDown() override {
    if (HasFailure()) {
      for (const char* log : {"agent.log", "gridmanager.log"}) {
        std::string text = ReadFileOr(env_.home() + "/" + log);
        std::fprintf(stderr, "--- %s (tail):\n%s\n", log,
                     text.substr(text.size() > 3000 ? text.size() - 3000 : 0).c_str());
      }
    }
    env_.Kite({"glidein", "rm", "-all"});
    env_.StopAgent();
    env_.Kite({"testgrid", "down"});
    cluster_.reset();  // after the job managers: they must not see the batch system vanish first
  }

  const std::string& batch() const { return GetParam(); }

  // Submits glide-ins; the cluster id of their grid jobs.
  std::string SubmitGlideins(const std::vector<std::string>& flags) {
    std::vector<std::string> args = {"glidein", "submit", "--resource", resource_};
    args.insert(args.end(), flags.begin(), flags.end());
    auto r = env_.Kite(args);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::smatch m;
    if (!std::regex_search(r.out, m, std::regex("glide-in\\(s\\) submitted to cluster (\\d+)\\.")))
      return "";
    return m[1];
  }
  // Slots of glide-ins in `kite status`.
  int Slots() const {
    auto r = env_.Kite({"status", "-constraint", "GlideinResource =!= undefined", "-af", "Name"});
    int n = 0;
    for (char c : r.out) n += c == '\n';
    return r.exit_code == 0 ? n : -1;
  }
  std::string Attr(const std::string& id, const std::string& attr, bool history) const {
    auto r = env_.Kite({history ? "history" : "q", id, "-af", attr});
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  // The batch system's jobs that are still pending or running.
  size_t BatchJobsLeft() const { return cluster_->Jobs(JobSet::kLive).size(); }
  std::string Why(const std::string& glidein) const {
    return env_.Kite({"glidein", "q"}).out + env_.Kite({"q", "-grid"}).out +
           ReadFileOr(env_.home() + "/glidein/" + glidein + ".err");
  }

  KiteEnv env_{"glidein-batch"};
  std::unique_ptr<BatchCluster> cluster_;
  std::string resource_;
};

std::string InputOf(int p) {
  std::string s;
  for (int i = 0; s.size() < 200 * 1024; ++i)
    s += "line " + std::to_string(i) + " of job " + std::to_string(p) + ": the quick brown fox\n";
  return s;
}

TEST_P(GlideinBatch, GlideinsRunVanillaJobsWithTheirFilesThenLeaveWhenIdle) {
  std::string cluster = SubmitGlideins({"--count", "2", "--cpus", "1", "--idle-timeout", "10s"});
  ASSERT_FALSE(cluster.empty());
  ASSERT_TRUE(WaitUntil([&] { return Slots() == 2; }, 120)) << Why(cluster + ".0");
  for (int p = 0; p < 4; ++p) env_.Write("in." + std::to_string(p), InputOf(p));
  env_.Write("rev.sh", "#!/bin/sh\nrev < in.$1 > rev.txt\nwc -l < in.$1\necho err $1 >&2\n", 0755);
  int c = env_.Submit(
      "universe = vanilla\nexecutable = rev.sh\narguments = $(Process)\n"
      "transfer_input_files = in.$(Process)\ntransfer_output_files = rev.txt\n"
      "transfer_output_remaps = \"rev.txt = rev.$(Process)\"\n"
      "output = out.$(Process)\nerror = err.$(Process)\nlog = vanilla.log\nqueue 4\n");
  auto w = env_.Kite({"wait", "--timeout", "120", std::to_string(c)});
  ASSERT_EQ(w.exit_code, 0) << w.out << w.err << env_.Kite({"q", "-nobatch"}).out;
  // The same program run here by hand is the reference: what came back is byte-identical.
  for (int p = 0; p < 4; ++p) {
    std::string ps = std::to_string(p), id = std::to_string(c) + "." + ps;
    auto ref = RunCommand({"/bin/sh", "-c", "rev < in." + ps + " && wc -l < in." + ps},
                          {"PATH=/usr/bin:/bin"}, env_.dir());
    std::string input = InputOf(p);
    std::string lines = std::to_string(std::count(input.begin(), input.end(), '\n'));
    EXPECT_EQ(ReadFileOr(env_.dir() + "/rev." + ps) + lines + "\n", ref.out) << id;
    EXPECT_EQ(ReadFileOr(env_.dir() + "/out." + ps), lines + "\n") << id;
    EXPECT_EQ(ReadFileOr(env_.dir() + "/err." + ps), "err " + ps + "\n") << id;
    EXPECT_EQ(Attr(id, "ExitCode", true), "0") << id;
    EXPECT_NE(Attr(id, "LastRemoteHost", true).find("@glidein-" + cluster + "."), std::string::npos)
        << Attr(id, "LastRemoteHost", true);
  }
  // Idle for 10 s, both leave: their grid jobs complete and the batch system has none left.
  for (const char* p : {".0", ".1"}) {
    ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(cluster + p) == 4; }, 120))
        << Why(cluster + p);
    EXPECT_EQ(Attr(cluster + p, "ExitCode", true), "0") << Why(cluster + p);
    // Each ran once, as one batch job: one that left on its idle timeout is not submitted again.
    EXPECT_EQ(Attr(cluster + p, "NumJobStarts", true), "1") << Why(cluster + p);
    EXPECT_EQ(Attr(cluster + p, "GridAttempt", true), "1") << Why(cluster + p);
  }
  EXPECT_TRUE(WaitUntil([&] { return BatchJobsLeft() == 0; }, 30));
  EXPECT_EQ(Slots(), 0);
}

// A glide-in whose lifetime ends while a job runs: the job is vacated (not failed), the glide-in
// leaves at once — its batch job ends minutes before the walltime asked — and the job finishes
// on the next glide-in. With Slurm, the next one is then stopped the way Slurm stops a job at its
// walltime (SIGTERM), and leaves as promptly.
TEST_P(GlideinBatch, AGlideinThatMustGoVacatesItsJobWhichFinishesOnTheNext) {
  std::string marks = env_.dir() + "/marks";
  env_.Write("job.sh",
             "#!/bin/sh\necho run >> " + marks +
                 "\ni=0\nwhile [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done\necho done\n",
             0755);
  std::string first = SubmitGlideins({"--cpus", "1", "--lifetime", "12s"});
  ASSERT_FALSE(first.empty());
  ASSERT_TRUE(WaitUntil([&] { return Slots() == 1; }, 120)) << Why(first + ".0");
  int c =
      env_.Submit("universe = vanilla\nexecutable = job.sh\noutput = out\nlog = job.log\nqueue\n");
  std::string id = std::to_string(c) + ".0";
  ASSERT_TRUE(WaitUntil([&] { return ReadFileOr(marks) == "run\n"; }, 60));
  // The lifetime (12 s) ends before the job's 15 s: vacated, Idle again, nothing counted failed.
  ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(id) == 1; }, 60)) << Why(first + ".0");
  ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(first + ".0") == 4; }, 60))
      << Why(first + ".0");
  EXPECT_EQ(Attr(first + ".0", "ExitCode", true), "0");
  // Its walltime was the lifetime and 300 s more; it ended long before.
  double ran = std::atof(Attr(first + ".0", "RemoteWallClockTime", true).c_str());
  EXPECT_LT(ran, 120) << "the glide-in's grid job ran " << ran << " s";

  std::string second = SubmitGlideins({"--cpus", "1", "--idle-timeout", "600s"});
  ASSERT_FALSE(second.empty());
  auto w = env_.Kite({"wait", "--timeout", "180", std::to_string(c)});
  ASSERT_EQ(w.exit_code, 0) << w.out << Why(second + ".0");
  EXPECT_EQ(ReadFileOr(marks), "run\nrun\n");
  EXPECT_EQ(ReadFileOr(env_.dir() + "/out"), "done\n");
  EXPECT_EQ(Attr(id, "NumJobStarts", true), "2");
  EXPECT_NE(Attr(id, "LastRemoteHost", true).find("@glidein-" + second + ".0"), std::string::npos);
  auto log = ReadFileOr(env_.dir() + "/job.log");
  EXPECT_NE(log.find("004 ("), std::string::npos) << log;  // evicted, not terminated
  EXPECT_EQ(log.find("005 ("), log.rfind("005 (")) << log;

  if (batch() == "slurm") {
    // What Slurm does at a job's walltime, by hand: SIGTERM to the batch job's processes.
    ASSERT_TRUE(WaitUntil([&] { return BatchJobsLeft() == 1; }, 30));
    std::string sid = cluster_->Jobs(JobSet::kLive).front();
    auto r = cluster_->Run({"scancel", "--signal=TERM", "--full", sid});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(WaitUntil([&] { return env_.JobStatus(second + ".0") == 4; }, 60))
        << Why(second + ".0");
    EXPECT_EQ(Attr(second + ".0", "ExitCode", true), "0") << Why(second + ".0");
    EXPECT_TRUE(WaitUntil([&] { return BatchJobsLeft() == 0; }, 30));
  }
}

INSTANTIATE_TEST_SUITE_P(Batch, GlideinBatch, ::testing::Values("slurm", "sge"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace kite::testing
