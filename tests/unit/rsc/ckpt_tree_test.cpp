// The starter's side of a script's checkpoint (rsc/ckpt_tree.h), with real processes: which trees
// it takes and why it refuses the others, and how the processes' images are put together.
#include "rsc/ckpt_tree.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "rsc/ckpt_image.h"

namespace kite::rsc::ckpt {
namespace {

namespace fs = std::filesystem;

// A process group led by a stand-in for kite-exec, whose one child runs `script` with `env`;
// killed with its group at the end.
class Group {
 public:
  Group(const std::string& script, const std::vector<std::string>& env) {
    leader_ = ::fork();
    if (leader_ == 0) {
      ::setpgid(0, 0);
      pid_t child = ::fork();
      if (child == 0) {
        std::vector<char*> envp;
        for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
        envp.push_back(nullptr);
        ::execle("/bin/bash", "bash", "-c", script.c_str(), nullptr, envp.data());
        ::_exit(127);
      }
      int st;
      ::waitpid(child, &st, 0);
      ::_exit(0);
    }
    ::setpgid(leader_, leader_);
  }
  ~Group() {
    ::kill(-leader_, SIGKILL);
    ::waitpid(leader_, nullptr, 0);
  }
  pid_t leader() const { return leader_; }
  // Its processes once there are `n` (but the leader), within a few seconds.
  std::vector<TreeProcess> Processes(size_t n) const {
    std::vector<TreeProcess> p;
    for (int i = 0; i < 300 && p.size() != n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      p = GroupProcesses(leader_);
    }
    return p;
  }

 private:
  pid_t leader_ = -1;
};

std::string Library() {
  return std::string(KITE_BIN_DIR) + "/libkite_rsc.so";
}

// The environment a starter gives a script's processes: the library, armed for a tree.
std::vector<std::string> TreeEnv(const std::string& dir) {
  return {"LD_PRELOAD=" + Library(), "PATH=/usr/bin:/bin",
          "KITE_CKPT_TREE=1",        "KITE_CKPT_IMAGE=" + dir + "/kite_ckpt.img",
          "KITE_RSC_SANDBOX=" + dir, "KITE_RSC_STATE=" + dir};
}

std::string TempDir(const std::string& tag) {
  std::string dir = fs::temp_directory_path() / (tag + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

TEST(CkptTree, AScriptWithTwoChildrenUnderTheLibraryCanBeTaken) {
  std::string dir = TempDir("kite-ckpt-tree-ok-");
  Group g("sleep 30 & sleep 30 & wait", TreeEnv(dir));
  auto procs = g.Processes(3);
  ASSERT_EQ(procs.size(), 3u);
  // Once the sleeps have mapped the library too.
  std::string why;
  for (int i = 0; i < 300; ++i) {
    why = TreeRefusal(g.leader(), procs, "libkite_rsc.so");
    if (why.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(why, "");
  fs::remove_all(dir);
}

TEST(CkptTree, AProcessThatDoesNotTakeTheSignalIsNamed) {
  // The library without a checkpoint's environment: loaded, but no handler.
  Group g("sleep 30 & wait", {"LD_PRELOAD=" + Library(), "PATH=/usr/bin:/bin"});
  auto procs = g.Processes(2);
  ASSERT_EQ(procs.size(), 2u);
  std::string why;
  for (int i = 0; i < 300; ++i) {
    why = TreeRefusal(g.leader(), procs, "libkite_rsc.so");
    if (why.find("does not take the checkpoint signal") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(why.find("(bash) does not take the checkpoint signal"), std::string::npos) << why;
}

TEST(CkptTree, AProcessWithoutTheLibraryIsNamed) {
  Group g("sleep 30 & wait", {"PATH=/usr/bin:/bin"});
  auto procs = g.Processes(2);
  ASSERT_EQ(procs.size(), 2u);
  std::string why = TreeRefusal(g.leader(), procs, "libkite_rsc.so");
  EXPECT_NE(why.find("is not under the checkpoint library"), std::string::npos) << why;
  EXPECT_NE(why.find("(bash)"), std::string::npos) << why;
}

TEST(CkptTree, AGrandchildIsRefused) {
  std::string dir = TempDir("kite-ckpt-tree-deep-");
  Group g("bash -c 'sleep 30; true' & wait", TreeEnv(dir));
  auto procs = g.Processes(3);
  ASSERT_EQ(procs.size(), 3u);
  std::string why = TreeRefusal(g.leader(), procs, "libkite_rsc.so");
  EXPECT_NE(why.find("(sleep) is not the script's child but a grandchild"), std::string::npos)
      << why;
  fs::remove_all(dir);
}

TEST(CkptTree, NoProcessLeftIsSaid) {
  EXPECT_EQ(TreeRefusal(1, {}, "libkite_rsc.so"), "the job has no process left");
}

// A part as a process writes it: a header naming the process, then `bytes` of its own.
void WritePart(const std::string& path, int64_t pid, int64_t ppid, const std::string& bytes) {
  Header h;
  std::memset(&h, 0, sizeof h);
  std::memcpy(h.magic, kMagic, 8);
  h.pid = pid;
  h.ppid = ppid;
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&h), sizeof h);
  out << bytes;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(CkptTree, ThePartsArePutTogetherFirstProcessFirstAndRemoved) {
  std::string dir = fs::temp_directory_path() / ("kite-ckpt-tree-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string image = dir + "/kite_ckpt.img";
  // Real ids 501 (the child) and 500 (the shell); the ids the programs know are older ones.
  WritePart(image + ".501", 71, 70, "child's bytes");
  WritePart(image + ".500", 70, 9, "the shell's");
  std::vector<TreeProcess> procs = {{501, 500, 'T', "sim"}, {500, 1, 'T', "bash"}};
  ASSERT_EQ(ComposeTree(image, procs), "");
  EXPECT_FALSE(fs::exists(image + ".500"));
  EXPECT_FALSE(fs::exists(image + ".501"));
  std::string all = Slurp(image);
  TreeHeader t;
  ASSERT_GE(all.size(), sizeof t + 2 * sizeof(TreeEntry));
  std::memcpy(&t, all.data(), sizeof t);
  std::vector<TreeEntry> e(2);
  std::memcpy(e.data(), all.data() + sizeof t, 2 * sizeof(TreeEntry));
  EXPECT_EQ(CheckTree(t, e.data(), all.size()), nullptr);
  EXPECT_EQ(e[0].pid, 70);
  EXPECT_EQ(e[1].pid, 71);
  EXPECT_EQ(e[1].ppid, 70);
  EXPECT_EQ(all.substr(e[0].offset + sizeof(Header), e[0].length - sizeof(Header)), "the shell's");
  EXPECT_EQ(all.substr(e[1].offset + sizeof(Header), e[1].length - sizeof(Header)),
            "child's bytes");
  fs::remove_all(dir);
}

TEST(CkptTree, AMissingPartOrPartsOfNoTreeAreRefusedAndNothingIsWritten) {
  std::string dir = fs::temp_directory_path() / ("kite-ckpt-tree2-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string image = dir + "/kite_ckpt.img";
  WritePart(image + ".500", 70, 9, "x");
  std::vector<TreeProcess> procs = {{500, 1, 'T', "bash"}, {501, 500, 'T', "sim"}};
  EXPECT_NE(ComposeTree(image, procs).find("the image of process 501 (sim) cannot be read"),
            std::string::npos);
  WritePart(image + ".501", 71, 8, "y");  // its parent is not the shell
  EXPECT_NE(ComposeTree(image, procs).find("do not make a tree"), std::string::npos);
  EXPECT_FALSE(fs::exists(image));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kite::rsc::ckpt
