// Transparent checkpoints (docs/checkpoints.md) of real, unmodified C programs: libkite_rsc.so
// preloaded as a starter preloads it, the checkpoint signal sent as a starter sends it, the image
// carried to another sandbox as the agent carries checkpoint files, and the shadow's side served
// by this test, a new one for each launch as the agent makes one per run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/fixtures/kite_env.h"
#include "tests/integration/rsc/shadow_server.h"

namespace kite::testing {
namespace {

namespace fs = std::filesystem;

// Keeps its state in memory (heap, stack, bss), appends a line per step to a remote file ($1)
// with write(2) and to a file in its sandbox with stdio; prints its total at the end.
const char* kCounter = R"C(#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>
static long in_bss = VARIANT;
int main(int argc, char** argv) {
  int steps = atoi(argv[2]);
  long* heap = calloc(1 << 18, sizeof(long));  /* 2 MiB */
  /* An anonymous map of its own keeps a tally too; named "[anon:tally]" where the kernel
     allows naming maps (CONFIG_ANON_VMA_NAME; not this test machine's). */
  long* named = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  prctl(0x53564d41, 0, (unsigned long)named, 4096, (unsigned long)"tally");
  char on_stack[256];
  long sum = 0;
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND, 0644);
  FILE* local = fopen("local.txt", "a");
  if (fd < 0 || !local) { perror("open"); return 2; }
  for (int i = 1; i <= steps; ++i) {
    heap[i * 997 % (1 << 18)] = i;
    named[0] += i;
    sum += heap[i * 997 % (1 << 18)];
    in_bss += 3;
    snprintf(on_stack, sizeof on_stack, "step %d sum %ld bss %ld\n", i, sum, in_bss);
    if (write(fd, on_stack, strlen(on_stack)) < 0) { perror("write"); return 3; }
    fprintf(local, "%s", on_stack);
    fflush(local);
    usleep(40000);
  }
  printf("done: sum %ld named %ld\n", sum, named[0]);
  return 0;
}
)C";

std::string Expected(int steps) {
  std::string out;
  long sum = 0, bss = 0;
  for (int i = 1; i <= steps; ++i) {
    sum += i;
    bss += 3;
    out += "step " + std::to_string(i) + " sum " + std::to_string(sum) + " bss " +
           std::to_string(bss) + "\n";
  }
  return out;
}

size_t Lines(const std::string& path) {
  auto t = ReadFileOr(path);
  return static_cast<size_t>(std::count(t.begin(), t.end(), '\n'));
}

class Checkpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("ckpt");
    fs::create_directories(dir_ + "/remote");
    WriteFile(dir_ + "/counter.c", kCounter);
    ASSERT_TRUE(Compile("counter", "0"));
  }
  void TearDown() override {
    shadow_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }
  bool Compile(const std::string& name, const std::string& variant) {
    auto r = RunCommand({"/usr/bin/cc", "-O1", "-DVARIANT=" + variant, "-o", dir_ + "/" + name,
                         dir_ + "/counter.c"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0;
  }
  // A fresh sandbox `name` holding the program (as `counter`) and, when `from` is given, the
  // files a checkpoint carries: the image and what the program wrote there.
  std::string Sandbox(const std::string& name, const std::string& program = "counter",
                      const std::string& from = "") {
    std::string box = dir_ + "/" + name;
    fs::remove_all(box);
    fs::create_directories(box + "/.kite");
    fs::copy_file(dir_ + "/" + program, box + "/counter");
    if (!from.empty()) {
      for (const char* f : {"kite_ckpt.img", "local.txt"})
        if (fs::exists(from + "/" + f)) fs::copy_file(from + "/" + f, box + "/" + f);
    }
    return box;
  }
  // Starts the program in `box` as a starter does: preloaded, without address-space
  // randomisation (unless `aslr`), its own process group, and a new shadow.
  // `same_shadow`: the shadow of the launch before goes on (a start again in place, in the same
  // run).
  pid_t Launch(const std::string& box, int steps, bool aslr = false, bool same_shadow = false) {
    if (!same_shadow || !shadow_) {
      shadow_.reset();
      fs::remove(box + "/.kite/rsc.sock");
      shadow_ = std::make_unique<Shadow>(box + "/.kite/rsc.sock",
                                         std::vector<std::string>{dir_ + "/remote/"});
    }
    std::vector<std::string> env = {"LD_PRELOAD=" + std::string(KITE_BIN_DIR) + "/libkite_rsc.so",
                                    "KITE_RSC_SOCKET=" + box + "/.kite/rsc.sock",
                                    "KITE_RSC_PATHS=" + dir_ + "/remote",
                                    "KITE_RSC_SANDBOX=" + box,
                                    "KITE_RSC_STATE=" + box + "/.kite",
                                    "KITE_CKPT_IMAGE=" + box + "/kite_ckpt.img",
                                    "KITE_CKPT_PROGRAM=" + fs::canonical(box + "/counter").string(),
                                    "KITE_CKPT_EXIT=85",
                                    "PATH=/usr/bin:/bin"};
    std::vector<std::string> argv = {box + "/counter", dir_ + "/remote/steps.txt",
                                     std::to_string(steps)};
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      if (!aslr) ::personality(ADDR_NO_RANDOMIZE);
      if (::chdir(box.c_str()) != 0) ::_exit(126);
      int out = ::open((box + "/out").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      int err = ::open((box + "/err").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(out, 1);
      ::dup2(err, 2);
      for (int fd = 3; fd < 1024; ++fd) ::close(fd);
      std::vector<char*> a, e;
      for (auto& s : argv) a.push_back(s.data());
      for (auto& s : env) e.push_back(s.data());
      a.push_back(nullptr);
      e.push_back(nullptr);
      ::execve(a[0], a.data(), e.data());
      ::_exit(127);
    }
    return pid;
  }
  // The exit code of `pid` (or 128 + its signal), -1 if it did not end within `seconds`.
  int Wait(pid_t pid, double seconds = 30) {
    int status = 0;
    if (!WaitUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, seconds)) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Runs until the remote file has `lines` lines, then asks for a checkpoint: the exit code.
  int CheckpointAt(pid_t pid, size_t lines) {
    EXPECT_TRUE(WaitUntil([&] { return Lines(steps()) >= lines; }, 30)) << Lines(steps());
    ::kill(-pid, SIGUSR2);
    return Wait(pid);
  }
  std::string steps() const { return dir_ + "/remote/steps.txt"; }

  std::string dir_;
  std::unique_ptr<Shadow> shadow_;
};

// Checkpointed in one sandbox and restored in another (another path, another shadow), three
// times, once after a run that went on past its checkpoint and was lost: the memory (heap, stack,
// bss), the stdio stream of a local file and the remote file's end continue exactly, so the
// result is a run never interrupted.
TEST_F(Checkpoint, MemoryAndFileOffsetsContinueExactlyAfterEachRestore) {
  const int kSteps = 60;
  std::string a = Sandbox("a");
  EXPECT_EQ(CheckpointAt(Launch(a, kSteps), 10), 85);
  auto size = fs::file_size(a + "/kite_ckpt.img");
  EXPECT_GT(size, 2u << 20) << "the 2 MiB heap is in the image";
  size_t at_checkpoint = Lines(steps());
  // Restored in b; it goes on, past its checkpoint, and that run is lost (SIGKILL).
  std::string b = Sandbox("b", "counter", a);
  pid_t pid = Launch(b, kSteps);
  ASSERT_TRUE(WaitUntil([&] { return Lines(steps()) >= at_checkpoint + 8; }, 30))
      << ReadFileOr(b + "/err");
  ::kill(-pid, SIGKILL);
  Wait(pid);
  // Restored from the same image again: the lines the lost run appended are cut back first.
  EXPECT_EQ(CheckpointAt(Launch(b, kSteps), at_checkpoint + 12), 85) << ReadFileOr(b + "/err");
  // And a third time, in a sandbox of another name, to the end.
  std::string c = Sandbox("c-elsewhere", "counter", b);
  EXPECT_EQ(Wait(Launch(c, kSteps)), 0) << ReadFileOr(c + "/err");
  EXPECT_EQ(ReadFileOr(steps()), Expected(kSteps));
  EXPECT_EQ(ReadFileOr(c + "/local.txt"), Expected(kSteps));
  long sum = static_cast<long>(kSteps) * (kSteps + 1) / 2;
  EXPECT_EQ(ReadFileOr(c + "/out"),
            "done: sum " + std::to_string(sum) + " named " + std::to_string(sum) + "\n");
  EXPECT_EQ(ReadFileOr(c + "/err"), "");
}

// As a run does: checkpointed and started again in place (the same shadow) twice, then carried to
// another sandbox; each restored program's checkpoint restores again.
TEST_F(Checkpoint, TheCheckpointOfARestoredProgramRestoresInPlaceAndElsewhere) {
  const int kSteps = 50;
  std::string a = Sandbox("a");
  EXPECT_EQ(CheckpointAt(Launch(a, kSteps), 5), 85);
  std::string b = Sandbox("b", "counter", a);
  EXPECT_EQ(CheckpointAt(Launch(b, kSteps), 12), 85) << ReadFileOr(b + "/err");
  EXPECT_EQ(CheckpointAt(Launch(b, kSteps, false, /*same_shadow=*/true), 20), 85)
      << ReadFileOr(b + "/err");
  EXPECT_EQ(CheckpointAt(Launch(b, kSteps, false, /*same_shadow=*/true), 28), 85)
      << ReadFileOr(b + "/err");
  std::string c = Sandbox("c", "counter", b);
  EXPECT_EQ(Wait(Launch(c, kSteps)), 0) << ReadFileOr(c + "/err");
  EXPECT_EQ(ReadFileOr(steps()), Expected(kSteps));
  EXPECT_EQ(ReadFileOr(c + "/local.txt"), Expected(kSteps));
}

// A restore refuses, saying why on standard error and in IMAGE.failed: another executable than
// the checkpoint's, or address-space randomisation on.
TEST_F(Checkpoint, ARestoreRefusesAnotherExecutableOrRandomisedAddresses) {
  std::string a = Sandbox("a");
  EXPECT_EQ(CheckpointAt(Launch(a, 100), 3), 85);
  ASSERT_TRUE(Compile("other", "1"));
  std::string b = Sandbox("b", "other", a);
  EXPECT_EQ(Wait(Launch(b, 100)), 1);
  EXPECT_NE(ReadFileOr(b + "/err")
                .find("cannot restore the checkpoint: not the executable or "
                      "library of the checkpoint"),
            std::string::npos)
      << ReadFileOr(b + "/err");
  EXPECT_NE(ReadFileOr(b + "/kite_ckpt.img.failed").find("not the executable"), std::string::npos);
  std::string c = Sandbox("c", "counter", a);
  EXPECT_EQ(Wait(Launch(c, 100, /*aslr=*/true)), 1);
  EXPECT_NE(ReadFileOr(c + "/err").find("address-space randomisation"), std::string::npos)
      << ReadFileOr(c + "/err");
  // An image cut short (a disk that filled, a copy that broke off) is refused whole.
  std::string d = Sandbox("d", "counter", a);
  fs::resize_file(d + "/kite_ckpt.img", fs::file_size(d + "/kite_ckpt.img") - 1);
  EXPECT_EQ(Wait(Launch(d, 100)), 1);
  EXPECT_EQ(ReadFileOr(d + "/kite_ckpt.img.failed"),
            "the image is damaged (it is not as long as its tables say)");
}

// A file the program maps itself after it started (here a table in its sandbox) is mapped
// again on restore wherever the sandbox now is, when the file there has the same contents; one
// that differs refuses the restore, naming it.
TEST_F(Checkpoint, AFileTheProgramMappedIsMatchedByContentsWhereverTheSandboxIs) {
  WriteFile(dir_ + "/table.c",
            "#include <fcntl.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
            "#include <sys/mman.h>\n#include <unistd.h>\n"
            "int main(int argc, char** argv) { int steps = atoi(argv[2]);\n"
            "  int fd = open(\"table.dat\", O_RDONLY);\n"
            "  unsigned char* t = mmap(0, 65536, PROT_READ, MAP_PRIVATE, fd, 0); close(fd);\n"
            "  int out = open(argv[1], O_WRONLY | O_CREAT | O_APPEND, 0644);\n"
            "  if (t == MAP_FAILED || out < 0) return 2;\n"
            "  long sum = 0; char line[64];\n"
            "  for (int i = 1; i <= steps; ++i) { sum += t[i * 131 % 65536];\n"
            "    snprintf(line, sizeof line, \"step %d sum %ld\\n\", i, sum);\n"
            "    if (write(out, line, strlen(line)) < 0) return 3; usleep(40000); }\n"
            "  printf(\"sum %ld\\n\", sum); return 0; }\n");
  auto r = RunCommand({"/usr/bin/cc", "-O1", "-o", dir_ + "/table", dir_ + "/table.c"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string table(65536, '\0');
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<char>(i * 7 % 251);
  long sum = 0;
  for (int i = 1; i <= 40; ++i) sum += static_cast<unsigned char>(table[i * 131 % 65536]);
  std::string a = Sandbox("a", "table");
  WriteFile(a + "/table.dat", table);
  EXPECT_EQ(CheckpointAt(Launch(a, 40), 5), 85) << ReadFileOr(a + "/err");
  // Elsewhere, the same table: restored, and the answer of a run never interrupted.
  std::string b = Sandbox("the/sandbox/of/another/startd", "table", a);
  WriteFile(b + "/table.dat", table);
  EXPECT_EQ(Wait(Launch(b, 40)), 0) << ReadFileOr(b + "/err");
  EXPECT_EQ(ReadFileOr(b + "/out"), "sum " + std::to_string(sum) + "\n") << ReadFileOr(b + "/err");
  // Elsewhere again, a table that differs by one byte: refused, naming it.
  std::string c = Sandbox("c", "table", a);
  table[100] ^= 1;
  WriteFile(c + "/table.dat", table);
  EXPECT_EQ(Wait(Launch(c, 40)), 1);
  EXPECT_EQ(ReadFileOr(c + "/kite_ckpt.img.failed"),
            "a file mapped at the checkpoint is not the same here: " + c + "/table.dat");
}

// What a checkpoint cannot hold is refused, the reason said, and the program goes on: here a
// second thread.
TEST_F(Checkpoint, AProgramWithTwoThreadsIsNotCheckpointedAndGoesOn) {
  WriteFile(
      dir_ + "/threads.c",
      "#include <pthread.h>\n#include <stdio.h>\n#include <unistd.h>\n"
      "static void* idle(void* p) { sleep(100); return p; }\n"
      "int main(int argc, char** argv) { (void)argc; (void)argv; pthread_t t;\n"
      "  pthread_create(&t, 0, idle, 0);\n"
      "  FILE* f = fopen(argv[1], \"a\");\n"
      "  for (int i = 0; i < 25; ++i) { fprintf(f, \"%d\\n\", i); fflush(f); usleep(40000); }\n"
      "  printf(\"went on\\n\"); return 0; }\n");
  auto r =
      RunCommand({"/usr/bin/cc", "-O1", "-pthread", "-o", dir_ + "/threads", dir_ + "/threads.c"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string a = Sandbox("a", "threads");
  pid_t pid = Launch(a, 0);
  EXPECT_EQ(CheckpointAt(pid, 3), 0);
  EXPECT_EQ(ReadFileOr(a + "/out"), "went on\n");
  EXPECT_NE(ReadFileOr(a + "/err")
                .find("checkpoint not taken: the program has more than one "
                      "thread"),
            std::string::npos)
      << ReadFileOr(a + "/err");
  EXPECT_NE(ReadFileOr(a + "/kite_ckpt.img.refused").find("more than one thread"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(a + "/kite_ckpt.img"));
}

}  // namespace
}  // namespace kite::testing
