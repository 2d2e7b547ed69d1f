#include "common/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "tests/fixtures/temp_dir.h"

namespace kite {
namespace {

using kite::testing::TempDir;

TEST(Files, WriteAtomicThenRead) {
  TempDir tmp("files");
  const std::string& dir = tmp.path();
  auto path = dir + "/a.txt";
  ASSERT_TRUE(WriteFileAtomic(path, "hello", 0600));
  auto got = ReadFile(path);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, "hello");
  struct stat sb;
  ASSERT_EQ(::stat(path.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0600u);
  EXPECT_TRUE(CheckPrivateFile(path));
  ::chmod(path.c_str(), 0644);
  auto st = CheckPrivateFile(path);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code(), ErrorCode::kPermission);
  EXPECT_NE(st.error().message().find("0644"), std::string::npos);
}

TEST(Files, APrivateFileThatIsAFifoIsRefusedWhateverItsMode) {
  TempDir tmp("files");
  std::string path = tmp / "fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  auto st = CheckPrivateFile(path);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("not a regular file"), std::string::npos);
}

TEST(Files, ReadMissingIsNotFound) {
  auto got = ReadFile("/nonexistent/kite/file");
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), ErrorCode::kNotFound);
}

TEST(Files, ReadRefusesAFifoWithoutBlocking) {
  TempDir tmp("files");
  const std::string& dir = tmp.path();
  std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto got = ReadFile(fifo);  // no writer: a blocking open would hang here
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(got.error().message().find("a FIFO, not a regular file"), std::string::npos)
      << got.error().message();
  auto d = ReadFile(dir);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message().find("a directory"), std::string::npos);
  auto dev = ReadFile("/dev/zero");  // endless: refused, not read until memory runs out
  ASSERT_FALSE(dev);
  EXPECT_NE(dev.error().message().find("a device"), std::string::npos);
}

TEST(Files, ReadStopsAtItsLimit) {
  TempDir tmp("files");
  const std::string& dir = tmp.path();
  ASSERT_TRUE(WriteFileAtomic(dir + "/big", std::string(5000, 'x'), 0600));
  auto got = ReadFile(dir + "/big", {.max_bytes = 4096});
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message().find("larger than 4096 bytes"), std::string::npos);
  EXPECT_TRUE(ReadFile(dir + "/big", {.max_bytes = 5000}));
}

TEST(Files, MakeDirsAndPaths) {
  TempDir tmp("files");
  const std::string& dir = tmp.path();
  ASSERT_TRUE(MakeDirs(dir + "/x/y/z"));
  EXPECT_TRUE(FileExists(dir + "/x/y/z"));
  EXPECT_EQ(DirName("a/b/c"), "a/b");
  EXPECT_EQ(BaseName("a/b/c"), "c");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(JoinPath("a", "/b"), "/b");
}

}  // namespace
}  // namespace kite
