// A run's launch, exit, inputs and output frames.
#include "glidein/run.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "classad/io.h"
#include "common/files.h"
#include "glidein/run_spec.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::glidein {
namespace {

struct RunTest : ::testing::Test {
  void SetUp() override {
    auto b = Sandbox::Create(tmp.path(), "3.1-r");
    ASSERT_TRUE(b);
    run.box = std::move(*b);
    run.ref = {"slot1@h", "3.1", "r"};
  }
  classad::ClassAd Ad(const std::string& text) {
    auto ad = classad::ParseNewAd(text);
    EXPECT_TRUE(ad) << text;
    return ad ? *ad : classad::ClassAd();
  }
  bool Has(const std::vector<std::string>& env, const std::string& entry) {
    return std::find(env.begin(), env.end(), entry) != env.end();
  }
  testing::TempDir tmp{"run"};
  glidein::Run run;
  RunPlace place{"/x/kite-exec", "slot2@h", 2, {"PATH=/bin", "HOME=/root"}};
};

TEST_F(RunTest, LaunchFromTheJobAd) {
  ASSERT_TRUE(run.box.Write("in.txt", 0, "x", 0644, true));
  auto l = BuildRunLaunch(
      Ad(R"([ Cmd = "job.sh"; Arguments = "a 'b c'"; Environment = "X=1 HOME=/h"; In = "in.txt" ])"),
      run.box, place);
  ASSERT_TRUE(l) << l.error().ToString();
  const std::string& s = run.box.path();
  EXPECT_EQ(l->program, s + "/job.sh");
  EXPECT_EQ(l->args, (std::vector<std::string>{"a", "b c"}));
  EXPECT_EQ(l->cwd, s);
  EXPECT_EQ(l->dir, s + "/.kite");
  EXPECT_EQ(l->in, s + "/in.txt");
  EXPECT_EQ(l->out, s + "/_kite_stdout");
  EXPECT_EQ(l->err, s + "/_kite_stderr");
  EXPECT_TRUE(Has(l->env, "X=1"));
  EXPECT_TRUE(Has(l->env, "HOME=/h"));  // the job's own wins
  EXPECT_FALSE(Has(l->env, "HOME=/root"));
  EXPECT_TRUE(Has(l->env, "PATH=/bin"));
  EXPECT_TRUE(Has(l->env, "_CONDOR_SCRATCH_DIR=" + s));
  EXPECT_TRUE(Has(l->env, "_CONDOR_SLOT=slot2"));
  EXPECT_TRUE(Has(l->env, "OMP_NUM_THREADS=2"));
}

TEST_F(RunTest, AbsoluteCmdOldArgsAndUntransferredInput) {
  auto l = BuildRunLaunch(Ad(R"([ Cmd = "/bin/echo"; Args = "x y"; In = "/etc/passwd" ])"), run.box,
                          place);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->program, "/bin/echo");
  EXPECT_EQ(l->args, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(l->in, "/dev/null");
  EXPECT_TRUE(Has(l->env, "HOME=" + run.box.path()));
}

TEST_F(RunTest, InPlaceTheJobsOwnFilesInItsIwdAndTheSandboxAsScratch) {
  RunPlace here = place;
  here.in_place = "/home/jane/work";
  auto l = BuildRunLaunch(
      Ad(R"([ Cmd = "bin/job.sh"; In = "in.txt"; Out = "out.0"; Err = "/tmp/err.0" ])"), run.box,
      here);
  ASSERT_TRUE(l) << l.error().ToString();
  EXPECT_EQ(l->cwd, "/home/jane/work");
  EXPECT_EQ(l->program, "/home/jane/work/bin/job.sh");
  EXPECT_EQ(l->in, "/home/jane/work/in.txt");
  EXPECT_EQ(l->out, "/home/jane/work/out.0");
  EXPECT_EQ(l->err, "/tmp/err.0");
  EXPECT_EQ(l->dir, run.box.path() + "/.kite");
  EXPECT_TRUE(Has(l->env, "_CONDOR_SCRATCH_DIR=" + run.box.path()));
  auto none = BuildRunLaunch(Ad(R"([ Cmd = "/bin/true" ])"), run.box, here);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->in, "/dev/null");
  EXPECT_EQ(none->out, "/dev/null");
}

TEST_F(RunTest, NoCmdOrBadArgumentsFail) {
  EXPECT_FALSE(BuildRunLaunch(Ad("[ Arguments = \"x\" ]"), run.box, place));
  EXPECT_FALSE(BuildRunLaunch(Ad(R"([ Cmd = "/bin/true"; Arguments = "'open" ])"), run.box, place));
}

TEST_F(RunTest, ExitFromTheWrappersStatus) {
  using K = pool::RunExit::Kind;
  ExecStatus s{.kind = ExecStatus::Kind::kSignaled,
               .code = 9,
               .utime = 1.5,
               .stime = 0.5,
               .start = 100,
               .end = 110};
  EXPECT_EQ(ExitOf(s), (pool::RunExit{K::kSignaled, 9, ""}));
  auto u = UsageOf(s);
  EXPECT_EQ(u.user_cpu, 1.5);
  EXPECT_EQ(u.sys_cpu, 0.5);
  EXPECT_EQ(u.start, 100);
  EXPECT_EQ(u.end, 110);
  s = {.kind = ExecStatus::Kind::kExecFailed, .code = 2, .message = "exec job.sh: No such file"};
  EXPECT_EQ(ExitOf(s).kind, K::kFailed);
  EXPECT_EQ(ExitOf(s).message, "exec job.sh: No such file");
}

TEST_F(RunTest, InputsMustBeCompleteAndEmptyOnesAreMade) {
  run.files = {{"a", 3, 0644}, {"empty", 0, 0600}};
  ASSERT_TRUE(run.box.Write("a", 0, "ab", 0644, false));
  EXPECT_FALSE(CheckInputs(run));
  ASSERT_TRUE(run.box.Write("a", 2, "c", 0644, true));
  EXPECT_TRUE(CheckInputs(run));
  EXPECT_TRUE(run.box.HasFile("empty"));
  run.files.push_back({"missing", 5, 0644});
  EXPECT_FALSE(CheckInputs(run));
}

TEST_F(RunTest, OutputFramesThenEnded) {
  std::string big(pool::kChunk + 10, 'b');
  ASSERT_TRUE(run.box.Write("_kite_stdout", 0, big, 0644, true));
  run.outputs = {{"_kite_stdout", "_kite_stdout"}, {"gone", "gone"}, {"sub/r", "r"}};
  ASSERT_TRUE(run.box.Write("sub/r", 0, "r", 0600, true));
  run.exit = {pool::RunExit::Kind::kExited, 3, ""};
  std::vector<std::pair<pool::Message, std::string>> frames;
  std::vector<std::string> skipped;
  while (auto f = NextOutputFrame(run, &skipped)) frames.push_back(*f);
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frames[0].first.type, pool::MsgType::kOutput);
  EXPECT_EQ(frames[0].first.offset, 0u);
  EXPECT_FALSE(frames[0].first.last);
  EXPECT_EQ(frames[0].second.size(), pool::kChunk);
  EXPECT_EQ(frames[1].first.offset, pool::kChunk);
  EXPECT_TRUE(frames[1].first.last);
  EXPECT_EQ(frames[2].first.path, "r");
  EXPECT_EQ(frames[2].first.mode, 0600u);
  EXPECT_EQ(frames[2].second, "r");
  EXPECT_EQ(frames[3].first.type, pool::MsgType::kEnded);
  EXPECT_EQ(frames[3].first.exit.code, 3);
  EXPECT_EQ(frames[3].first.slot, "slot1@h");
  EXPECT_EQ(skipped.size(), 1u);  // "gone"
  RewindOutput(run);
  EXPECT_EQ(NextOutputFrame(run, nullptr)->first.offset, 0u);
}

// A checkpoint: its files as checkpoint pieces, then `checkpointed`; stdout and stderr are not
// part of it, and TransferCheckpoint, when the job has it, says what is.
TEST_F(RunTest, CheckpointFramesThenCheckpointed) {
  Snapshot before;
  ASSERT_TRUE(run.box.Write("_kite_stdout", 0, "out", 0644, true));
  ASSERT_TRUE(run.box.Write("state", 0, "4", 0600, true));
  ASSERT_TRUE(run.box.Write("scratch", 0, "x", 0600, true));
  Snapshot after = TopLevelFiles(run.box.fd());
  auto named = Ad("[ CheckpointExitCode = 85; TransferCheckpoint = \"state\" ]");
  EXPECT_EQ(SelectCheckpoint(named, before, after, nullptr),
            (std::vector<OutputFile>{{"state", "state"}}));
  auto all = SelectCheckpoint(Ad("[ CheckpointExitCode = 85 ]"), before, after, nullptr);
  EXPECT_EQ(all, (std::vector<OutputFile>{{"scratch", "scratch"}, {"state", "state"}}));

  EXPECT_TRUE(IsCheckpointExit(named, {pool::RunExit::Kind::kExited, 85, ""}));
  EXPECT_FALSE(IsCheckpointExit(named, {pool::RunExit::Kind::kExited, 0, ""}));
  EXPECT_FALSE(IsCheckpointExit(named, {pool::RunExit::Kind::kSignaled, 85, ""}));
  EXPECT_FALSE(IsCheckpointExit(Ad("[ ]"), {pool::RunExit::Kind::kExited, 85, ""}));

  run.phase = RunPhase::kCheckpointing;
  run.outputs = SelectCheckpoint(named, before, after, nullptr);
  std::vector<std::pair<pool::Message, std::string>> frames;
  while (auto f = NextOutputFrame(run, nullptr)) frames.push_back(*f);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].first.type, pool::MsgType::kOutput);
  EXPECT_TRUE(frames[0].first.checkpoint);
  EXPECT_EQ(frames[0].second, "4");
  EXPECT_EQ(frames[1].first.type, pool::MsgType::kCheckpointed);
}

}  // namespace
}  // namespace kite::glidein
