// kite-exec's record in its lock file: how a run ended, whose run it was, and the wrapper's pid;
// a record cut short by a crash counts as none; a directory reused for another run never shows
// the earlier run's end; an older Kite's status and pid files are still read.
#include "common/exec_status.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "common/exec_launch.h"
#include "common/files.h"
#include "tests/fixtures/temp_dir.h"

namespace kite {
namespace {

using kite::testing::TempDir;

ExecStatus Exited(int code) {
  ExecStatus s;
  s.kind = ExecStatus::Kind::kExited;
  s.code = code;
  s.start = 1764000000.5;
  s.end = 1764000001.25;
  s.message = "a message with spaces";
  s.max_rss_kb = 123456;
  return s;
}

TEST(ExecStatus, TheRecordInTheLockRoundTrips) {
  TempDir tmp("exec-status");
  ASSERT_TRUE(WriteFileAtomic(
      tmp.path() + "/lock", "owner 12.3 2\npid 4242\n" + FormatExecStatusRecord(Exited(7)), 0600));
  auto lock = ReadExecLock(tmp.path());
  EXPECT_EQ(lock.owner, "12.3 2");
  EXPECT_EQ(lock.pid, 4242);
  auto st = ReadExecStatus(tmp.path());
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ(st->kind, ExecStatus::Kind::kExited);
  EXPECT_EQ(st->code, 7);
  EXPECT_DOUBLE_EQ(st->end, 1764000001.25);
  EXPECT_EQ(st->message, "a message with spaces");
  EXPECT_EQ(st->max_rss_kb, 123456);
}

TEST(ExecStatus, ARecordCutShortCountsAsNone) {
  TempDir tmp("exec-status");
  std::string full = "pid 9\n" + FormatExecStatusRecord(Exited(0));
  // Every prefix that lacks the closing line (or its newline) is no outcome at all.
  for (size_t n = 0; n < full.size(); ++n) {
    ASSERT_TRUE(WriteFileAtomic(tmp.path() + "/lock", full.substr(0, n), 0600));
    EXPECT_FALSE(ReadExecStatus(tmp.path())) << "cut at " << n << ": " << full.substr(0, n);
  }
  ASSERT_TRUE(WriteFileAtomic(tmp.path() + "/lock", full, 0600));
  EXPECT_TRUE(ReadExecStatus(tmp.path()));
}

// A job that ends at once: its wrapper's record is whole however soon its starter looks, since
// nobody but the wrapper writes to the lock once it is spawned.
TEST(ExecStatus, AJobThatEndsAtOnceLeavesAWholeRecord) {
  TempDir tmp("exec-status");
  for (int i = 0; i < 50; ++i) {
    ExecLaunch l{.exec_path = std::string(KITE_BIN_DIR) + "/kite-exec",
                 .dir = tmp.path(),
                 .cwd = tmp.path(),
                 .program = "/bin/true",
                 .owner = "1.0 " + std::to_string(i)};
    auto pid = LaunchUnderExec(l);
    ASSERT_TRUE(pid) << pid.error().ToString();
    ASSERT_EQ(::waitpid(*pid, nullptr, 0), *pid);
    auto st = ReadExecStatus(tmp.path());
    ASSERT_TRUE(st) << "run " << i << ": " << ReadFile(tmp.path() + "/lock").value_or("");
    EXPECT_EQ(st->code, 0);
    EXPECT_GT(st->max_rss_kb, 0);  // the job's peak resident set, from wait4
    EXPECT_EQ(ExecWrapperPid(tmp.path()), *pid);
    EXPECT_EQ(ReadExecLock(tmp.path()).owner, "1.0 " + std::to_string(i));
  }
}

TEST(ExecStatus, AnOlderKitesStatusAndPidFilesAreRead) {
  TempDir tmp("exec-status");
  ASSERT_TRUE(WriteFileAtomic(tmp.path() + "/status", FormatExecStatus(Exited(5)), 0644));
  ASSERT_TRUE(WriteFileAtomic(tmp.path() + "/pid", "321\n", 0644));
  ASSERT_TRUE(WriteFileAtomic(tmp.path() + "/lock", "", 0600));
  EXPECT_EQ(ReadExecStatus(tmp.path())->code, 5);
  EXPECT_EQ(ExecWrapperPid(tmp.path()), 321);
}

// The real wrapper: it records the end of a run in the lock the starter named the run in; the
// next run in the same directory starts with the earlier end gone.
TEST(ExecStatus, AReusedDirectoryNeverShowsTheEarlierRunsEnd) {
  TempDir tmp("exec-status");
  auto launch = [&](const std::string& owner, const std::string& script) {
    ExecLaunch l{.exec_path = std::string(KITE_BIN_DIR) + "/kite-exec",
                 .dir = tmp.path(),
                 .cwd = tmp.path(),
                 .program = "/bin/sh",
                 .args = {"-c", script},
                 .owner = owner};
    return LaunchUnderExec(l);
  };
  auto first = launch("1.0 1", "exit 3");
  ASSERT_TRUE(first) << first.error().ToString();
  ASSERT_EQ(::waitpid(*first, nullptr, 0), *first);
  EXPECT_FALSE(ExecWrapperAlive(tmp.path()));
  EXPECT_EQ(ReadExecLock(tmp.path()).owner, "1.0 1");
  EXPECT_EQ(ExecWrapperPid(tmp.path()), *first);
  ASSERT_TRUE(ReadExecStatus(tmp.path()));
  EXPECT_EQ(ReadExecStatus(tmp.path())->code, 3);

  auto second = launch("2.0 1", "sleep 30");
  ASSERT_TRUE(second) << second.error().ToString();
  EXPECT_TRUE(ExecWrapperAlive(tmp.path()));
  EXPECT_EQ(ReadExecLock(tmp.path()).owner, "2.0 1");
  // The wrapper adds its pid as soon as it runs.
  for (int i = 0; i < 500 && ExecWrapperPid(tmp.path()) != *second; ++i) ::usleep(10000);
  EXPECT_EQ(ExecWrapperPid(tmp.path()), *second);
  EXPECT_FALSE(ReadExecStatus(tmp.path())) << ReadFile(tmp.path() + "/lock").value_or("");
  // A third start while the second's wrapper lives is refused and changes nothing.
  auto third = launch("3.0 1", "true");
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code(), ErrorCode::kConflict);
  EXPECT_EQ(ReadExecLock(tmp.path()).owner, "2.0 1");
  ::kill(-*second, SIGTERM);
  ASSERT_EQ(::waitpid(*second, nullptr, 0), *second);
  auto st = ReadExecStatus(tmp.path());
  ASSERT_TRUE(st);
  EXPECT_EQ(st->kind, ExecStatus::Kind::kSignaled);
  EXPECT_EQ(st->code, SIGTERM);
}

// A record may carry any double it parses (found by the fuzz target: "%.6f" of 1e300 is over 300
// characters and was cut short by a fixed buffer, so it did not read back the same).
TEST(ExecStatus, HugeValuesAreWrittenWhole) {
  ExecStatus s;
  s.utime = 1e300;
  s.end = -1e300;
  s.max_rss_kb = INT64_MIN;
  s.message = "still here";
  std::string text = FormatExecStatus(s);
  auto back = ParseExecStatus(text);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(back->utime, s.utime);
  EXPECT_EQ(back->end, s.end);
  EXPECT_EQ(back->max_rss_kb, INT64_MIN);
  EXPECT_EQ(back->message, "still here");
  EXPECT_EQ(FormatExecStatus(*back), text);
}

}  // namespace
}  // namespace kite
