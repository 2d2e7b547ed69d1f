// Spawn: the child gets the environment, folder and files it is given, and nothing else of the
// parent's (no descriptor beyond 0-2, signals at their defaults).
#include "common/spawn.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "common/files.h"
#include "tests/fixtures/temp_dir.h"

namespace kite {
namespace {

using kite::testing::TempDir;

int WaitFor(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string Read(const std::string& path) {
  auto got = ReadFile(path);
  return got ? *got : "<unreadable: " + got.error().message() + ">";
}

TEST(Spawn, TheChildRunsInItsFolderWithItsEnvironmentAndBothStreamsInOneFile) {
  TempDir tmp("spawn");
  std::string out = tmp.path() + "/out.log";
  ASSERT_TRUE(WriteFileAtomic(out, "before\n", 0644));
  SpawnOptions o{.program = "/bin/sh",
                 .argv = {"sh", "-c", "pwd; echo \"$GREETING\"; echo oops >&2; exit 3"},
                 .env = {"GREETING=hello", "PATH=/usr/bin:/bin"},
                 .new_session = false,
                 .stdout_path = out,
                 .stderr_to_stdout = true,
                 .cwd = tmp.path()};
  auto pid = Spawn(o);
  ASSERT_TRUE(pid) << pid.error().message();
  EXPECT_EQ(WaitFor(*pid), 3);
  // Appended, in order, stderr in the same file.
  EXPECT_EQ(Read(out), "before\n" + tmp.path() + "\nhello\noops\n");
}

TEST(Spawn, AProgramWithoutASlashIsLookedForInPathOnlyWhenAsked) {
  TempDir tmp("spawn");
  std::string out = tmp.path() + "/out.log";
  SpawnOptions o{.program = "echo",
                 .argv = {"echo", "found"},
                 .env = {"PATH=/usr/bin:/bin"},
                 .stdout_path = out,
                 .cwd = tmp.path()};
  // Without search_path "echo" is a path relative to the folder, where there is none.
  auto missing = Spawn(o);
  if (missing) {  // glibc may report it from the child
    EXPECT_EQ(WaitFor(*missing), 127);
  }
  o.search_path = true;
  auto pid = Spawn(o);
  ASSERT_TRUE(pid) << pid.error().message();
  EXPECT_EQ(WaitFor(*pid), 0);
  EXPECT_EQ(Read(out), "found\n");
}

TEST(Spawn, NoDescriptorBeyondTheStandardOnesIsPassedOn) {
  TempDir tmp("spawn");
  // A descriptor the parent left open (not close-on-exec), at a number nothing else takes.
  int fd = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::dup2(fd, 57), 57);
  ::close(fd);
  std::string out = tmp.path() + "/fds";
  SpawnOptions o{.program = "/bin/sh",
                 .argv = {"sh", "-c", "test -e /proc/self/fd/57 && echo leaked || echo closed"},
                 .env = {"PATH=/usr/bin:/bin"},
                 .stdout_path = out};
  auto pid = Spawn(o);
  ::close(57);
  ASSERT_TRUE(pid) << pid.error().message();
  EXPECT_EQ(WaitFor(*pid), 0);
  EXPECT_EQ(Read(out), "closed\n");
}

}  // namespace
}  // namespace kite
