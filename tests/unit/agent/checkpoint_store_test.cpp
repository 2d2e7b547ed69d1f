// What a job's checkpoint may hold (agent/checkpoint_store.h): only for jobs that checkpoint,
// only allowed names, never an input's place; the digest that binds stored files to their job;
// stored files read without following links.
#include "agent/checkpoint_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "classad/io.h"
#include "common/files.h"
#include "tests/fixtures/temp_dir.h"

namespace kite::agent {
namespace {

classad::ClassAd Ad(const std::string& text) {
  auto ad = classad::ParseNewAd(text);
  EXPECT_TRUE(ad) << text;
  return ad ? std::move(*ad) : classad::ClassAd();
}

TEST(CheckpointPolicy, OnlyJobsThatCheckpointMayHaveOne) {
  auto plain = CheckpointPolicyOf(Ad("[Cmd = \"run.sh\"]"), {"run.sh"});
  EXPECT_FALSE(plain.checkpoints);
  EXPECT_NE(CheckpointFileRefusal(plain, "state.dat").find("takes no checkpoints"),
            std::string::npos);
  auto self = CheckpointPolicyOf(Ad("[CheckpointExitCode = 85]"), {"run.sh"});
  EXPECT_TRUE(self.checkpoints);
  EXPECT_EQ(CheckpointFileRefusal(self, "state.dat"), "");
  auto transparent = CheckpointPolicyOf(Ad("[TransparentCheckpoint = true]"), {"sim"});
  EXPECT_TRUE(transparent.checkpoints);
  EXPECT_EQ(CheckpointFileRefusal(transparent, "kite_ckpt.img"), "");
}

// The executable and the inputs are never a checkpoint's: a file of one would take their place
// at the next start, wherever that is (the desktop's own slot included).
TEST(CheckpointPolicy, NeverTheExecutableOrAnInput) {
  auto p = CheckpointPolicyOf(Ad("[CheckpointExitCode = 85]"),
                              {"myprog.sh", "in.dat", "data/a.txt", "data/b.txt"});
  for (std::string bad : {"myprog.sh", "in.dat", "data/a.txt", "in.dat/x"}) {
    std::string why = CheckpointFileRefusal(p, bad);
    EXPECT_NE(why.find("take the place of the job's executable or an input"), std::string::npos)
        << bad << ": " << why;
  }
  // A checkpoint file beside the inputs (in a folder of them, too) is fine.
  for (std::string ok : {"state.dat", "data/c.txt", "myprog.sh.ckpt"})
    EXPECT_EQ(CheckpointFileRefusal(p, ok), "") << ok;
}

TEST(CheckpointPolicy, OnlyTheNamesTransferCheckpointFilesGives) {
  auto p = CheckpointPolicyOf(
      Ad("[CheckpointExitCode = 85; TransferCheckpoint = \"state.dat, ckpt/\"]"), {"run.sh"});
  EXPECT_EQ(CheckpointFileRefusal(p, "state.dat"), "");
  EXPECT_EQ(CheckpointFileRefusal(p, "ckpt/part.1"), "");
  EXPECT_EQ(CheckpointFileRefusal(p, "ckpt"), "");
  for (std::string bad : {"other.dat", "ckptx", "state.dat.old", "kite_ckpt.img"})
    EXPECT_NE(CheckpointFileRefusal(p, bad).find("not among the job's transfer_checkpoint_files"),
              std::string::npos)
        << bad;
  // A transparent job's image is always allowed besides the names it gives.
  auto t = CheckpointPolicyOf(
      Ad("[TransparentCheckpoint = true; TransferCheckpoint = \"state.dat\"]"), {"sim"});
  EXPECT_EQ(CheckpointFileRefusal(t, "kite_ckpt.img"), "");
  // A name is written safely in the reason, whatever it holds.
  std::string why = CheckpointFileRefusal(p, "a\nforged line");
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
}

TEST(StreamHash, PiecesInOrderOnly) {
  StreamHash a, b;
  EXPECT_TRUE(a.Update(0, "hello "));
  EXPECT_TRUE(a.Update(6, "world"));
  EXPECT_TRUE(b.Update(0, "hello world"));
  EXPECT_EQ(a.Hex(), b.Hex());
  EXPECT_EQ(a.size(), 11u);
  EXPECT_EQ(a.Hex(), "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
  EXPECT_FALSE(a.Update(3, "gap"));  // not where it ends
  EXPECT_TRUE(a.Update(0, "x"));     // offset 0 starts over
  EXPECT_EQ(a.size(), 1u);
}

TEST(CheckpointDigest, SameFilesSameDigestAnyChangeAnother) {
  std::vector<CheckpointFileSum> files = {{"b", 2, "bb"}, {"a", 1, "aa"}};
  std::string d = CheckpointDigest(files);
  EXPECT_EQ(d.size(), 64u);
  EXPECT_EQ(CheckpointDigest({{"a", 1, "aa"}, {"b", 2, "bb"}}), d) << "order does not matter";
  EXPECT_NE(CheckpointDigest({{"a", 1, "aa"}, {"b", 2, "bc"}}), d);
  EXPECT_NE(CheckpointDigest({{"a", 1, "aa"}, {"b", 3, "bb"}}), d);
  EXPECT_NE(CheckpointDigest({{"a", 1, "aa"}, {"c", 2, "bb"}}), d);
  EXPECT_NE(CheckpointDigest({{"a", 1, "aa"}}), d);
  EXPECT_NE(CheckpointDigest({{"ab", 1, "aa"}}), CheckpointDigest({{"a", 1, "baa"}}));
}

TEST(StoredCheckpointFiles, RegularFilesOnlyNothingFollowed) {
  kite::testing::TempDir tmp{"ckpt-store"};
  std::string dir = tmp.path() + "/ckpt.1";
  ASSERT_TRUE(MakeDirs(dir + "/sub", 0700));
  ASSERT_TRUE(WriteFileAtomic(dir + "/state.dat", "12345", 0600));
  ASSERT_TRUE(WriteFileAtomic(dir + "/sub/part", "ab", 0640));
  auto files = StoredCheckpointFiles(dir);
  ASSERT_TRUE(files) << files.error().ToString();
  ASSERT_EQ(files->size(), 2u);
  std::sort(files->begin(), files->end(), [](auto& a, auto& b) { return a.path < b.path; });
  EXPECT_EQ((*files)[0].path, "state.dat");
  EXPECT_EQ((*files)[0].size, 5u);
  EXPECT_EQ((*files)[0].mode, 0600u);
  EXPECT_EQ((*files)[1].path, "sub/part");
  // A link in the store (to a secret elsewhere) is refused, not followed.
  ASSERT_EQ(::symlink("/etc/shadow", (dir + "/kite_ckpt.img").c_str()), 0);
  auto refused = StoredCheckpointFiles(dir);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("not a regular file"), std::string::npos)
      << refused.error().message();
}

}  // namespace
}  // namespace kite::agent
