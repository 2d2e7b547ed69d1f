// Remote system calls in real, unmodified programs: libkite_rsc.so preloaded into cat, cp, ls,
// stat, mkdir, mv, rm, sh and python3, with this test serving the shadow's side (rsc::ShadowIo)
// on the socket a starter would give the job. In the second test the programs run in a mount
// namespace where the remote folder is covered by an empty tmpfs, as on a cluster that cannot see
// the user's files: whatever they read or write there went through the shadow.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

#include "rsc/shadow_io.h"
#include "tests/fixtures/kite_env.h"
#include "tests/integration/rsc/shadow_server.h"

namespace kite::testing {
namespace {

namespace fs = std::filesystem;

class Preload : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("rsc");
    fs::create_directories(dir_ + "/remote/sub");
    fs::create_directories(dir_ + "/secret");
    fs::create_directories(dir_ + "/sandbox/.kite");
    // 1.5 MB: more than one request's worth (512 KiB each).
    data_.reserve(1500000);
    for (int i = 0; data_.size() < 1500000; ++i) data_ += "line " + std::to_string(i) + "\n";
    WriteFile(dir_ + "/remote/data.txt", data_);
    WriteFile(dir_ + "/secret/key", "not for the job\n");
    fs::create_symlink(dir_ + "/secret/key", dir_ + "/remote/escape");
    shadow_ = std::make_unique<Shadow>(dir_ + "/sandbox/rsc.sock",
                                       std::vector<std::string>{dir_ + "/remote/"});
  }
  void TearDown() override {
    shadow_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }
  // `sh -c SCRIPT` with the library preloaded, in the sandbox; `hidden`: in a mount namespace
  // where the remote folder is an empty tmpfs.
  CommandResult Run(const std::string& script, bool hidden = false) {
    std::vector<std::string> env = {"LD_PRELOAD=" + std::string(KITE_BIN_DIR) + "/libkite_rsc.so",
                                    "KITE_RSC_SOCKET=" + dir_ + "/sandbox/rsc.sock",
                                    "KITE_RSC_PATHS=" + dir_ + "/remote",
                                    "KITE_RSC_SANDBOX=" + dir_ + "/sandbox",
                                    "R=" + dir_ + "/remote",
                                    "PATH=/usr/bin:/bin"};
    std::string inner = "cd " + dir_ + "/sandbox && " + script;
    std::vector<std::string> argv = {"/usr/bin/env", "-i"};
    argv.insert(argv.end(), env.begin(), env.end());
    if (hidden) {
      // The preloaded library must not serve the mount itself: it starts after it.
      argv = {"/usr/bin/unshare",
              "-m",
              "/bin/sh",
              "-c",
              "mount -t tmpfs none " + dir_ + "/remote && exec \"$@\"",
              "sh",
              "/usr/bin/env",
              "-i"};
      argv.insert(argv.end(), env.begin(), env.end());
    }
    argv.insert(argv.end(), {"/bin/sh", "-c", inner});
    return RunCommand(argv);
  }

  std::string dir_, data_;
  std::unique_ptr<Shadow> shadow_;
};

TEST_F(Preload, RealProgramsReadAndWriteRemoteFilesThroughTheShadow) {
  auto r =
      Run("cat $R/data.txt > local.txt && wc -c < $R/data.txt && head -c 13 < $R/data.txt && wc -c "
          "< $R/data.txt > $R/count.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFileOr(dir_ + "/sandbox/local.txt"), data_);
  EXPECT_EQ(ReadFileOr(dir_ + "/remote/count.txt"), std::to_string(data_.size()) + "\n");
  EXPECT_EQ(r.out, std::to_string(data_.size()) + "\nline 0\nline 1");
  EXPECT_GE(shadow_->counts().bytes_read, data_.size() + 13);
  r =
      Run("echo one > $R/new.txt && echo two >> $R/new.txt && cp $R/data.txt $R/sub/copy.txt && "
          "stat -c %s $R/sub/copy.txt && ls $R && mkdir $R/made && mv $R/new.txt $R/made/ && "
          "rm $R/sub/copy.txt && ls $R/made");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::to_string(data_.size()) +
                       "\ncount.txt\ndata.txt\nescape\nnew.txt\nsub\nnew.txt\n");
  EXPECT_EQ(ReadFileOr(dir_ + "/remote/made/new.txt"), "one\ntwo\n");
  EXPECT_FALSE(fs::exists(dir_ + "/remote/sub/copy.txt"));
  // python3: open, seek, read, write, stat through its own I/O layer.
  r =
      Run("/usr/bin/python3 -c \"import os\n"
          "f = open(os.environ['R'] + '/data.txt', 'rb'); f.seek(7); print(f.read(6).decode())\n"
          "g = open(os.environ['R'] + '/py.txt', 'w'); g.write('from python\\n'); g.close()\n"
          "print(os.path.getsize(os.environ['R'] + '/py.txt'))\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "line 1\n12\n");
  EXPECT_EQ(ReadFileOr(dir_ + "/remote/py.txt"), "from python\n");
  // The link that leads out is refused, and nothing else outside is reachable through it.
  r = Run("cat $R/escape");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
  auto notes = shadow_->refusals();
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes.back().find("a symbolic link leads out"), std::string::npos) << notes.back();
}

// Small reads are served from a 64 KiB read-ahead block: dd's 512-byte reads of 1.5 MB make a
// round trip per block, not per read; and what the same process writes is read back, not the
// block fetched before it.
TEST_F(Preload, SmallReadsMakeARoundTripPerBlockAndSeeTheProcesssOwnWrites) {
  auto before = shadow_->counts().calls;
  auto r = Run("dd if=$R/data.txt of=/dev/null bs=512 2>&1 | tail -n 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(std::to_string(data_.size()) + " bytes"), std::string::npos) << r.out;
  auto calls = shadow_->counts().calls - before;
  size_t blocks = data_.size() / (64 * 1024) + 1;
  EXPECT_LE(calls, blocks + 10) << "one round trip per 512-byte read would be "
                                << data_.size() / 512;
  r =
      Run("/usr/bin/python3 -c \"import os\n"
          "f = open(os.environ['R'] + '/data.txt', 'r+b', buffering=0)\n"
          "a = f.read(6); f.seek(0); f.write(b'LINE 0'); f.seek(0); b = f.read(6)\n"
          "print(a.decode(), b.decode())\"");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "line 0 LINE 0\n");
}

TEST_F(Preload, AProgramThatCannotSeeTheUsersFilesStillWorksOnThem) {
  auto probe = RunCommand({"/usr/bin/unshare", "-m", "/bin/true"});
  if (probe.exit_code != 0)
    GTEST_SKIP() << "no mount namespaces here (unshare -m: " << probe.err
                 << "); the first test covers the same calls without hiding the files";
  // Without the library the folder is empty in the namespace...
  auto plain = RunCommand({"/usr/bin/unshare", "-m", "/bin/sh", "-c",
                           "mount -t tmpfs none " + dir_ + "/remote && ls " + dir_ + "/remote"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, "");
  // ... with it, the user's files are there, and what the program writes lands on the desktop.
  auto r = Run("wc -l < $R/data.txt && ls $R && echo written > $R/sub/result.txt", true);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::to_string(std::count(data_.begin(), data_.end(), '\n')) +
                       "\ndata.txt\nescape\nsub\n");
  EXPECT_EQ(ReadFileOr(dir_ + "/remote/sub/result.txt"), "written\n");
  // The programs, where only the shadow can read the data: coreutils, python3, and two
  // unmodified C programs (one on POSIX calls, one on stdio), built here into the sandbox.
  WriteFile(dir_ + "/sandbox/posix.c",
            "#include <fcntl.h>\n#include <unistd.h>\nint main(int c, char** v) {\n"
            "  (void)c; char b[4096]; long n, t = 0; int in = open(v[1], O_RDONLY);\n"
            "  int out = open(v[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);\n"
            "  while ((n = read(in, b, sizeof b)) > 0) { write(out, b, n); t += n; }\n"
            "  close(out); return t > 0 ? 0 : 1; }\n");
  WriteFile(dir_ + "/sandbox/stdio.c",
            "#include <stdio.h>\nint main(int c, char** v) {\n"
            "  (void)c; char line[256]; long lines = 0; FILE* in = fopen(v[1], \"r\");\n"
            "  while (fgets(line, sizeof line, in)) ++lines;\n"
            "  if (!freopen(v[2], \"w\", stdout)) return 3;\n"
            "  printf(\"%ld lines\\n\", lines); fclose(in); return 0; }\n");
  for (const char* p : {"posix", "stdio"}) {
    auto cc = RunCommand(
        {"/usr/bin/cc", "-O1", "-o", dir_ + "/sandbox/" + p, dir_ + "/sandbox/" + p + ".c"});
    ASSERT_EQ(cc.exit_code, 0) << cc.err;
  }
  auto want_sha = RunCommand({"/usr/bin/sha256sum", dir_ + "/remote/data.txt"});
  r = Run(
      "sha256sum $R/data.txt && sort -r $R/data.txt | head -n 1 && cat $R/data.txt | tail -n 1 "
      "&& ./posix $R/data.txt $R/copy.txt && ./stdio $R/data.txt $R/count.txt && "
      "/usr/bin/python3 -c \"import os; print(len(open(os.environ['R'] + '/copy.txt').read()))\"",
      true);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t lines = std::count(data_.begin(), data_.end(), '\n');
  std::string last = "line " + std::to_string(lines - 1);
  EXPECT_EQ(r.out,
            want_sha.out + "line 99999\n" + last + "\n" + std::to_string(data_.size()) + "\n")
      << r.err;
  EXPECT_EQ(ReadFileOr(dir_ + "/remote/copy.txt"), data_);
  EXPECT_EQ(ReadFileOr(dir_ + "/remote/count.txt"), std::to_string(lines) + " lines\n");
}

// Where the execute node cannot see the user's folders: modes, times and links are the desktop's
// through the shadow (never the execute node's), a mapping of a remote file holds its bytes,
// temporary files (sed -i's, sort -T's) are made in the remote folder, and
// what the library cannot do -- a remote folder as the working directory, which `mkdir -p` needs
// -- fails with the library's reason, not with "Not a directory".
TEST_F(Preload, MetadataIsTheDesktopsAndWhatCannotBeDoneIsRefusedWithAReason) {
  auto probe = RunCommand({"/usr/bin/unshare", "-m", "/bin/true"});
  if (probe.exit_code != 0)
    GTEST_SKIP() << "no mount namespaces here (unshare -m: " << probe.err
                 << "): nothing would hide the desktop's folders from the programs";
  auto r =
      Run("set -e; echo x | cat > $R/sub/f.txt; chmod 0640 $R/sub/f.txt; "
          "touch -d '2020-01-02 03:04:05 UTC' $R/sub/f.txt; ln -s f.txt $R/sub/link; "
          "ln $R/sub/f.txt $R/sub/hard; readlink $R/sub/link; stat -c '%a %s %h %Y' $R/sub/f.txt; "
          "/usr/bin/python3 -c \"import mmap, os; f = open(os.environ['R'] + '/data.txt', 'rb'); "
          "print(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)[:13].decode())\"; "
          "echo abc | cat > $R/sub/s.txt; sed -i s/b/B/ $R/sub/s.txt; "
          "seq 1 20000 | sort -rn -S 64K -T $R/sub | tail -n 1; "
          "if mkdir -p $R/a/b/c 2> mkdir.err; then echo made; else echo refused; fi",
          true);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "f.txt\n640 2 2 1577934245\nline 0\nline 1\n1\nrefused\n") << r.err;
  EXPECT_EQ(ReadFileOr(dir_ + "/remote/sub/s.txt"), "aBc\n");  // sed -i's file made there
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/remote/sub/f.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_mtime, 1577934245);
  EXPECT_EQ(st.st_nlink, 2u);
  EXPECT_EQ(fs::read_symlink(dir_ + "/remote/sub/link"), "f.txt");
  EXPECT_NE(
      ReadFileOr(dir_ + "/sandbox/mkdir.err")
          .find("kite-rsc: " + dir_ + "/remote: a remote folder cannot be the working directory"),
      std::string::npos)
      << ReadFileOr(dir_ + "/sandbox/mkdir.err");
  EXPECT_FALSE(fs::exists(dir_ + "/remote/a"));  // it went into each folder on the way
}

}  // namespace
}  // namespace kite::testing
