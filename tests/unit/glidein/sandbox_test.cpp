// Sandboxes: input writes and output reads never leave the sandbox, output selection, removal.
#include "glidein/sandbox.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "common/files.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::glidein {
namespace {

namespace fs = std::filesystem;

struct SandboxTest : ::testing::Test {
  void SetUp() override {
    MakeDirs(tmp / "work", 0700);
    MakeDirs(tmp / "outside", 0700);
    auto b = Sandbox::Create(tmp / "work", "1.0-r1");
    ASSERT_TRUE(b) << b.error().ToString();
    box = std::move(*b);
  }
  testing::TempDir tmp{"sandbox"};
  Sandbox box;
};

TEST_F(SandboxTest, IsPrivateWithAControlDir) {
  struct stat st;
  ASSERT_EQ(::stat(box.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(fs::is_directory(box.control_dir()));
}

TEST_F(SandboxTest, WritesPiecesAtOffsetsIntoNewDirectories) {
  ASSERT_TRUE(box.Write("data/in.txt", 0, "hello ", 0640, false));
  ASSERT_TRUE(box.Write("data/in.txt", 6, "world", 0640, true));
  EXPECT_EQ(ReadFile(box.path() + "/data/in.txt").value_or(""), "hello world");
  struct stat st;
  ASSERT_EQ(::stat((box.path() + "/data/in.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  // A resend from offset 0 replaces the file, and `last` cuts it.
  ASSERT_TRUE(box.Write("data/in.txt", 0, "bye", 0755, true));
  EXPECT_EQ(ReadFile(box.path() + "/data/in.txt").value_or(""), "bye");
  EXPECT_TRUE(box.HasFile("data/in.txt"));
  EXPECT_FALSE(box.HasFile("data"));
}

TEST_F(SandboxTest, RefusesPathsThatEscape) {
  for (const char* bad : {"../x", "/etc/passwd", "a/../../x", "", "./x"}) {
    EXPECT_FALSE(box.Write(bad, 0, "x", 0644, true)) << bad;
  }
  EXPECT_TRUE(fs::is_empty(tmp / "outside"));
}

TEST_F(SandboxTest, NeverFollowsAPlantedLink) {
  fs::create_directory_symlink(tmp / "outside", box.path() + "/dir");
  fs::create_symlink(tmp / "outside/file", box.path() + "/file");
  auto through_dir = box.Write("dir/x", 0, "x", 0644, true);
  ASSERT_FALSE(through_dir);
  EXPECT_EQ(through_dir.error().code(), ErrorCode::kPermission);
  auto onto_link = box.Write("file", 0, "x", 0644, true);
  ASSERT_FALSE(onto_link);
  EXPECT_EQ(onto_link.error().code(), ErrorCode::kPermission);
  EXPECT_TRUE(fs::is_empty(tmp / "outside"));
  // Nor for reading: a link to a file outside is not output.
  ASSERT_TRUE(WriteFileAtomic(tmp / "outside/secret", "secret"));
  fs::create_symlink(tmp / "outside/secret", box.path() + "/secret");
  EXPECT_FALSE(FileReader::Open(box.fd(), "secret"));
  EXPECT_FALSE(FileReader::Open(box.fd(), "dir/secret"));
  EXPECT_FALSE(box.HasFile("secret"));
}

TEST_F(SandboxTest, RemovalDoesNotFollowLinks) {
  ASSERT_TRUE(WriteFileAtomic(tmp / "outside/keep", "keep"));
  fs::create_directory_symlink(tmp / "outside", box.path() + "/dir");
  ASSERT_TRUE(box.Write("sub/deeper/f", 0, "x", 0644, true));
  ASSERT_TRUE(box.Remove());
  EXPECT_FALSE(fs::exists(tmp / "work/1.0-r1"));
  EXPECT_EQ(ReadFile(tmp / "outside/keep").value_or(""), "keep");
}

TEST_F(SandboxTest, CreateReplacesALeftover) {
  ASSERT_TRUE(box.Write("old", 0, "x", 0644, true));
  auto again = Sandbox::Create(tmp / "work", "1.0-r1");
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->HasFile("old"));
}

TEST_F(SandboxTest, ReadsOutputInPieces) {
  std::string big(10, 'a');
  ASSERT_TRUE(box.Write("out", 0, big, 0600, true));
  auto r = FileReader::Open(box.fd(), "out");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->mode(), 0600u);
  auto p1 = r->Next(4), p2 = r->Next(4), p3 = r->Next(4);
  ASSERT_TRUE(p1 && p2 && p3);
  EXPECT_EQ(p1->bytes, "aaaa");
  EXPECT_EQ(p1->offset, 0u);
  EXPECT_FALSE(p1->last);
  EXPECT_EQ(p3->bytes, "aa");
  EXPECT_EQ(p3->offset, 8u);
  EXPECT_TRUE(p3->last);
  ASSERT_TRUE(box.Write("empty", 0, "", 0644, true));
  auto e = FileReader::Open(box.fd(), "empty");
  ASSERT_TRUE(e);
  auto only = e->Next(4);
  ASSERT_TRUE(only);
  EXPECT_TRUE(only->last);
  EXPECT_EQ(only->bytes, "");
}

TEST_F(SandboxTest, OutputIsWhatTheRunCreatedOrChanged) {
  ASSERT_TRUE(box.Write("job.sh", 0, "#!/bin/sh\n", 0755, true));
  ASSERT_TRUE(box.Write("input.dat", 0, "in", 0644, true));
  Snapshot before = TopLevelFiles(box.fd());
  ASSERT_TRUE(box.Write("input.dat", 0, "changed", 0644, true));
  ASSERT_TRUE(box.Write("result.txt", 0, "r", 0644, true));
  ASSERT_TRUE(box.Write("sub/deep.txt", 0, "d", 0644, true));  // not at the top: not sent
  ASSERT_TRUE(box.Write("_kite_stdout", 0, "o", 0644, true));
  ASSERT_TRUE(box.Write("_kite_stderr", 0, "", 0644, true));
  ASSERT_TRUE(box.Write(".kite/status", 0, "s", 0644, true));
  fs::create_symlink("/etc/passwd", box.path() + "/link");
  std::vector<std::string> links, skipped;
  Snapshot after = TopLevelFiles(box.fd(), &links);
  EXPECT_EQ(links, std::vector<std::string>{"link"});
  auto out = SelectOutputs(std::nullopt, before, after, &skipped);
  std::vector<OutputFile> want = {{"_kite_stdout", "_kite_stdout"},
                                  {"_kite_stderr", "_kite_stderr"},
                                  {"input.dat", "input.dat"},
                                  {"result.txt", "result.txt"}};
  EXPECT_EQ(out, want);
  EXPECT_TRUE(skipped.empty());
}

TEST_F(SandboxTest, TransferOutputNamesTheFiles) {
  Snapshot none;
  ASSERT_TRUE(box.Write("_kite_stdout", 0, "o", 0644, true));
  Snapshot after = TopLevelFiles(box.fd());
  std::vector<std::string> skipped;
  auto out = SelectOutputs("a.txt, sub/b.txt, ../etc/passwd", none, after, &skipped);
  std::vector<OutputFile> want = {
      {"_kite_stdout", "_kite_stdout"}, {"a.txt", "a.txt"}, {"sub/b.txt", "b.txt"}};
  EXPECT_EQ(out, want);
  EXPECT_EQ(skipped.size(), 1u);
}

TEST(SandboxName, OnlySafeIds) {
  EXPECT_EQ(SandboxName("12.0", "1700000000-12.0-1").value_or(""), "12.0-1700000000-12.0-1");
  EXPECT_FALSE(SandboxName("..", "r"));
  EXPECT_FALSE(SandboxName("1.0", "a/b"));
  EXPECT_FALSE(SandboxName("", "r"));
  EXPECT_FALSE(SandboxName("1.0", "r r"));
}

}  // namespace
}  // namespace kite::glidein
