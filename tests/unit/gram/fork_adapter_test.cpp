// The fork adapter with the real kite-exec: outcomes, cancel, and recovery by a new adapter
// instance (a restarted job manager) of a live, a finished and a dead wrapper.
#include "gram/batch/fork_adapter.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/files.h"
#include "test_util.h"

namespace kite::gram::batch {
namespace {

class ForkAdapterTest : public ::testing::Test {
 protected:
  std::unique_ptr<BatchAdapter> NewAdapter() {
    return MakeForkAdapter({gram::testing::ExecPath()});
  }

  JobSpec Spec(const std::string& name, std::vector<std::string> args) {
    JobSpec s;
    s.control_dir = dir_ / name;
    EXPECT_TRUE(MakeDirs(s.control_dir, 0700));
    s.cwd = dir_.path();
    s.program = "/bin/sh";
    s.args = {"-c"};
    s.args.insert(s.args.end(), args.begin(), args.end());
    s.env = {"PATH=/usr/bin:/bin"};
    s.stdout_path = s.control_dir + "/stdout";
    s.stderr_path = s.control_dir + "/stderr";
    return s;
  }

  // Polls until the job is no longer queued/running, or 10 s.
  BatchOutcome WaitEnd(BatchAdapter& a, const std::string& id) {
    for (int i = 0; i < 1000; ++i) {
      auto o = a.Poll({id}).at(id);
      if (o.state == BatchState::kEnded || o.state == BatchState::kLost) return o;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return {};
  }

  gram::testing::TempDir dir_;
};

TEST_F(ForkAdapterTest, ReportsTheExitCodeAndOutput) {
  auto a = NewAdapter();
  auto id = a->Submit(Spec("j", {"echo hello; exit 7"}));
  ASSERT_TRUE(id) << id.error().ToString();
  auto o = WaitEnd(*a, *id);
  ASSERT_EQ(o.state, BatchState::kEnded);
  EXPECT_EQ(o.exit->kind, ExecStatus::Kind::kExited);
  EXPECT_EQ(o.exit->code, 7);
  EXPECT_EQ(*ReadFile(dir_ / "j/stdout"), "hello\n");
}

TEST_F(ForkAdapterTest, ReportsTheSignalAndCancelStopsAJob) {
  auto a = NewAdapter();
  std::string started = dir_ / "started";
  auto id = a->Submit(Spec("j", {"touch " + started + "; exec sleep 30"}));
  ASSERT_TRUE(id);
  EXPECT_EQ(a->Poll({*id}).at(*id).state, BatchState::kRunning);
  // (A cancel while kite-exec itself is still starting kills the wrapper: Poll then says kLost,
  // which the job manager records as the cancelled job's end all the same.)
  for (int i = 0; i < 500 && !FileExists(started); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // A signal that lands while kite-exec is still starting the job can be lost: like the job
  // manager, repeat the cancel until the job has ended.
  BatchOutcome o;
  for (int i = 0; i < 100 && o.state != BatchState::kEnded; ++i) {
    ASSERT_TRUE(a->Cancel(*id));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    o = a->Poll({*id}).at(*id);
  }
  ASSERT_EQ(o.state, BatchState::kEnded);
  EXPECT_EQ(o.exit->kind, ExecStatus::Kind::kSignaled);
  EXPECT_EQ(o.exit->code, SIGTERM);
}

TEST_F(ForkAdapterTest, AMissingProgramIsAnExecFailure) {
  auto a = NewAdapter();
  auto spec = Spec("j", {});
  spec.program = "/no/such/program";
  spec.args.clear();
  auto id = a->Submit(spec);
  ASSERT_TRUE(id);
  auto o = WaitEnd(*a, *id);
  ASSERT_EQ(o.state, BatchState::kEnded);
  EXPECT_EQ(o.exit->kind, ExecStatus::Kind::kExecFailed);
}

TEST_F(ForkAdapterTest, SubmitIsIdempotentPerControlDir) {
  auto a = NewAdapter();
  auto spec = Spec("j", {"echo run >> " + (dir_ / "count") + "; sleep 0.3"});
  auto first = a->Submit(spec);
  ASSERT_TRUE(first);
  auto again = NewAdapter()->Submit(spec);  // a restart that lost the stored id
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *first);
  WaitEnd(*a, *first);
  auto third = a->Submit(spec);  // after the end, too
  EXPECT_EQ(*third, *first);
  EXPECT_EQ(*ReadFile(dir_ / "count"), "run\n");
}

TEST_F(ForkAdapterTest, ANewAdapterRecoversLiveFinishedAndDeadWrappers) {
  std::string live, finished, dead;
  {
    auto a = NewAdapter();
    live = *a->Submit(Spec("live", {"sleep 0.5; exit 4"}));
    finished = *a->Submit(Spec("finished", {"exit 5"}));
    dead = *a->Submit(Spec("dead", {"sleep 30"}));
    WaitEnd(*a, finished);
    // Kill the dead one's wrapper itself (not the job): it can record nothing.
    pid_t pid = std::atoi(dead.substr(dead.rfind('#') + 1).c_str());
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    ::kill(-pid, SIGKILL);
  }
  auto b = NewAdapter();  // the restarted job manager
  auto now = b->Poll({live, finished, dead});
  EXPECT_EQ(now.at(live).state, BatchState::kRunning);
  EXPECT_EQ(now.at(finished).state, BatchState::kEnded);
  EXPECT_EQ(now.at(finished).exit->code, 5);
  auto d = WaitEnd(*b, dead);
  EXPECT_EQ(d.state, BatchState::kLost);
  auto l = WaitEnd(*b, live);
  ASSERT_EQ(l.state, BatchState::kEnded);
  EXPECT_EQ(l.exit->code, 4);
}

// A wrapper killed before it wrote its pid into the lock (a loaded machine): the job's id still
// carries the pid Submit saw, so it is lost, not queued for ever.
TEST_F(ForkAdapterTest, AWrapperKilledBeforeItSaidItsPidIsLost) {
  std::string dir = dir_ / "early";
  ASSERT_TRUE(MakeDirs(dir, 0700));
  ASSERT_TRUE(WriteFileAtomic(dir + "/lock", "owner x\n", 0600));  // as LaunchUnderExec leaves it
  auto a = NewAdapter();
  EXPECT_EQ(a->Poll({dir + "#424242"}).at(dir + "#424242").state, BatchState::kLost);
  EXPECT_EQ(a->Poll({dir + "#0"}).at(dir + "#0").state, BatchState::kQueued);
}

TEST(BatchRegistry, KnowsForkAndNamesTheKnownOnes) {
  EXPECT_TRUE(MakeAdapter("fork", {}));
  auto none = MakeAdapter("pbs", {});
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message().find("fork"), std::string::npos);
}

}  // namespace
}  // namespace kite::gram::batch
