// The shadow's side of remote system calls: what a job may reach (and may not), and each call's
// answer as the job's library reads it. Real files in a temporary folder.
#include "rsc/shadow_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace kite::rsc {
namespace {

namespace fs = std::filesystem;

class ShadowIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kite-rsc-test-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    fs::create_directories(dir_ + "/iwd/sub");
    fs::create_directories(dir_ + "/secret");
    Write(dir_ + "/iwd/in.txt", "hello, remote world\n");
    Write(dir_ + "/secret/key", "not for the job\n");
    Write(dir_ + "/named.dat", "a file named alone\n");
    fs::create_symlink(dir_ + "/secret/key", dir_ + "/iwd/escape");
    fs::create_symlink("in.txt", dir_ + "/iwd/inside");
    io_ = std::make_unique<ShadowIo>(std::vector<std::string>{dir_ + "/iwd/", dir_ + "/named.dat"});
  }
  void TearDown() override {
    io_.reset();
    fs::remove_all(dir_);
  }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
  }
  static std::string Read(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  Reply Do(Request r) {
    r.seq = ++seq_;
    auto rep = DecodeReply(io_->Handle(Encode(r)));
    EXPECT_TRUE(rep.has_value());
    EXPECT_EQ(rep->seq, r.seq);
    return *rep;
  }
  int64_t Open(const std::string& path, int flags, uint32_t mode = 0644) {
    return Do({.op = Op::kOpen, .flags = flags, .mode = mode, .path = path}).result;
  }

  std::string dir_;
  std::unique_ptr<ShadowIo> io_;
  uint64_t seq_ = 0;
};

// The agent restarted: the run's new shadow knows none of the old one's handles. Each call on
// one is answered ESTALE (the job's library opens its files again and asks once more), and no
// handle the new one gives can be taken for an old one.
TEST_F(ShadowIoTest, AHandleOfAnEarlierShadowIsStaleNeverAnotherFile) {
  std::set<int64_t> old;
  for (int i = 0; i < 3; ++i) old.insert(Open(dir_ + "/iwd/in.txt", O_RDONLY));
  int64_t w = Open(dir_ + "/iwd/out.txt", O_WRONLY | O_CREAT, 0600);
  ASSERT_GT(w, 0);
  old.insert(w);
  io_ = std::make_unique<ShadowIo>(std::vector<std::string>{dir_ + "/iwd/", dir_ + "/named.dat"});
  std::set<int64_t> fresh;
  for (int i = 0; i < 4; ++i) fresh.insert(Open(dir_ + "/iwd/in.txt", O_RDONLY));
  for (int64_t h : fresh) {
    EXPECT_GT(h, 0);
    EXPECT_FALSE(old.contains(h)) << h;
  }
  for (int64_t h : old) {
    EXPECT_EQ(Do({.op = Op::kPread, .handle = h, .size = 5}).error, ESTALE);
    EXPECT_EQ(Do({.op = Op::kFstat, .handle = h}).error, ESTALE);
    EXPECT_EQ(Do({.op = Op::kClose, .handle = h}).error, ESTALE);
  }
  EXPECT_EQ(Do({.op = Op::kPwrite, .handle = w, .data = "x"}).error, ESTALE);
  EXPECT_EQ(Do({.op = Op::kAppend, .handle = w, .data = "x"}).error, ESTALE);
  EXPECT_EQ(Do({.op = Op::kFtruncate, .handle = w}).error, ESTALE);
  EXPECT_EQ(Do({.op = Op::kFsync, .handle = w}).error, ESTALE);
  EXPECT_EQ(Read(dir_ + "/iwd/out.txt"), "");
}

// Metadata for the file system through the kernel: done inside the job's paths as on a local
// disk, never through a link's last step, never to another user, never setuid, never outside.
TEST_F(ShadowIoTest, MetadataCallsActInsideTheJobsPathsOnlyAndNeverFollowALinkOut) {
  const std::string iwd = dir_ + "/iwd";
  EXPECT_EQ(Do({.op = Op::kChmod, .mode = 0640, .path = iwd + "/in.txt"}).error, 0);
  EXPECT_EQ(fs::status(iwd + "/in.txt").permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  EXPECT_EQ(Do({.op = Op::kChmod, .mode = 04755, .path = iwd + "/in.txt"}).error, EPERM);
  // The link's last step is not followed: the key outside keeps its mode.
  auto before = fs::status(dir_ + "/secret/key").permissions();
  EXPECT_NE(Do({.op = Op::kChmod, .mode = 0777, .path = iwd + "/escape"}).error, 0);
  EXPECT_EQ(fs::status(dir_ + "/secret/key").permissions(), before);
  EXPECT_EQ(Do({.op = Op::kChmod, .mode = 0777, .path = dir_ + "/secret/key"}).error, EACCES);

  std::string times;
  for (int64_t v : {int64_t{1577934245}, int64_t{0}, int64_t{1577934245}, int64_t{500}})
    wire::Put(times, static_cast<uint64_t>(v), 8);
  EXPECT_EQ(Do({.op = Op::kUtimens, .path = iwd + "/in.txt", .data = times}).error, 0);
  struct stat st {};
  ASSERT_EQ(::stat((iwd + "/in.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, 1577934245);
  EXPECT_EQ(st.st_mtim.tv_nsec, 500);
  EXPECT_EQ(Do({.op = Op::kUtimens, .path = iwd + "/in.txt", .data = "short"}).error, EINVAL);

  EXPECT_EQ(Do({.op = Op::kChown, .handle = -1, .offset = -1, .path = iwd + "/in.txt"}).error, 0);
  int64_t other = static_cast<int64_t>(::geteuid()) + 1;
  EXPECT_EQ(Do({.op = Op::kChown, .handle = -1, .offset = other, .path = iwd + "/in.txt"}).error,
            EPERM);

  // A link says anything; only its text is made, and reading it gives that text.
  EXPECT_EQ(Do({.op = Op::kSymlink, .path = iwd + "/to-etc", .path2 = "/etc/passwd"}).error, 0);
  auto link = Do({.op = Op::kReadlink, .path = iwd + "/to-etc"});
  EXPECT_EQ(link.error, 0);
  EXPECT_EQ(link.data, "/etc/passwd");
  EXPECT_EQ(Do({.op = Op::kStat, .path = iwd + "/to-etc"}).error, EACCES);  // never followed out
  EXPECT_EQ(Do({.op = Op::kSymlink, .path = dir_ + "/secret/l", .path2 = "x"}).error, EACCES);
  EXPECT_EQ(Do({.op = Op::kSymlink, .path = iwd + "/l", .path2 = std::string("a\0b", 3)}).error,
            EINVAL);

  EXPECT_EQ(Do({.op = Op::kLink, .path = iwd + "/in.txt", .path2 = iwd + "/sub/hard"}).error, 0);
  EXPECT_EQ(Read(iwd + "/sub/hard"), "hello, remote world\n");
  EXPECT_EQ(Do({.op = Op::kLink, .path = dir_ + "/secret/key", .path2 = iwd + "/stolen"}).error,
            EACCES);
  EXPECT_EQ(Do({.op = Op::kLink, .path = iwd + "/in.txt", .path2 = dir_ + "/secret/k2"}).error,
            EACCES);
  EXPECT_FALSE(fs::exists(iwd + "/stolen"));
  EXPECT_FALSE(fs::exists(dir_ + "/secret/k2"));
}

// The library tells of bytes it could not send (a bash builtin's redirection): kept for the
// agent, which holds the job, only for a path of the job's own; nothing is done to the file.
TEST_F(ShadowIoTest, WritesTheLibraryCouldNotSendAreKeptForTheAgentOnlyForTheJobsPaths) {
  Write(dir_ + "/iwd/out.txt", "as it was\n");
  EXPECT_EQ(Do({.op = Op::kUnseen, .path = dir_ + "/iwd/out.txt"}).result, 0);
  EXPECT_EQ(Do({.op = Op::kUnseen, .path = dir_ + "/secret/key"}).error, EACCES);
  EXPECT_EQ(Do({.op = Op::kUnseen, .path = "relative"}).error, EACCES);
  auto unseen = io_->TakeUnseen();
  ASSERT_EQ(unseen.size(), 1u);
  EXPECT_EQ(unseen[0], dir_ + "/iwd/out.txt");
  EXPECT_TRUE(io_->TakeUnseen().empty());
  EXPECT_EQ(Read(dir_ + "/iwd/out.txt"), "as it was\n");
}

TEST_F(ShadowIoTest, ReadsWritesAndStatsFilesUnderTheRoots) {
  int64_t h = Open(dir_ + "/iwd/in.txt", O_RDONLY);
  ASSERT_GT(h, 0);
  auto r = Do({.op = Op::kPread, .handle = h, .offset = 7, .size = 6});
  EXPECT_EQ(r.data, "remote");
  EXPECT_EQ(Do({.op = Op::kPread, .handle = h, .offset = 100, .size = 6}).result, 0);  // the end
  auto st = DecodeStat(Do({.op = Op::kFstat, .handle = h}).data);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->size, 20u);
  EXPECT_TRUE(S_ISREG(st->mode));
  EXPECT_EQ(Do({.op = Op::kClose, .handle = h}).result, 0);
  EXPECT_EQ(Do({.op = Op::kClose, .handle = h}).error, ESTALE);
  // Writing: a new file, at offsets, appended, truncated, synced.
  int64_t w = Open(dir_ + "/iwd/sub/out.txt", O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GT(w, 0);
  EXPECT_EQ(Do({.op = Op::kPwrite, .handle = w, .offset = 0, .data = "abc"}).result, 3);
  EXPECT_EQ(Do({.op = Op::kPwrite, .handle = w, .offset = 5, .data = "xyz"}).result, 3);
  EXPECT_EQ(Do({.op = Op::kAppend, .handle = w, .data = "!"}).result, 1);
  EXPECT_EQ(Do({.op = Op::kFsync, .handle = w}).result, 0);
  EXPECT_EQ(Read(dir_ + "/iwd/sub/out.txt"), std::string("abc\0\0xyz!", 9));
  EXPECT_EQ(Do({.op = Op::kFtruncate, .handle = w, .size = 2}).result, 0);
  EXPECT_EQ(Read(dir_ + "/iwd/sub/out.txt"), "ab");
  struct stat real {};
  ASSERT_EQ(::stat((dir_ + "/iwd/sub/out.txt").c_str(), &real), 0);
  EXPECT_EQ(real.st_mode & 0777, 0600u);
  EXPECT_EQ(io_->counts().bytes_written, 7u);
  EXPECT_EQ(io_->counts().bytes_read, 6u);
  // By path: stat, access, mkdir, rename, unlink, rmdir, truncate; a named file root.
  EXPECT_EQ(Do({.op = Op::kMkdir, .mode = 0755, .path = dir_ + "/iwd/new"}).result, 0);
  EXPECT_TRUE(fs::is_directory(dir_ + "/iwd/new"));
  EXPECT_EQ(Do({.op = Op::kRename,
                .path = dir_ + "/iwd/sub/out.txt",
                .path2 = dir_ + "/iwd/new/moved.txt"})
                .result,
            0);
  EXPECT_EQ(Read(dir_ + "/iwd/new/moved.txt"), "ab");
  EXPECT_EQ(Do({.op = Op::kTruncate, .size = 1, .path = dir_ + "/iwd/new/moved.txt"}).result, 0);
  EXPECT_EQ(Read(dir_ + "/iwd/new/moved.txt"), "a");
  EXPECT_EQ(Do({.op = Op::kAccess, .mode = R_OK, .path = dir_ + "/iwd/new/moved.txt"}).result, 0);
  EXPECT_EQ(Do({.op = Op::kUnlink, .path = dir_ + "/iwd/new/moved.txt"}).result, 0);
  EXPECT_EQ(Do({.op = Op::kStat, .path = dir_ + "/iwd/new/moved.txt"}).error, ENOENT);
  EXPECT_EQ(Do({.op = Op::kRmdir, .path = dir_ + "/iwd/new"}).result, 0);
  auto root = DecodeStat(Do({.op = Op::kStat, .path = dir_ + "/iwd"}).data);
  ASSERT_TRUE(root);
  EXPECT_TRUE(S_ISDIR(root->mode));
  int64_t n = Open(dir_ + "/named.dat", O_RDONLY);
  ASSERT_GT(n, 0);
  EXPECT_EQ(Do({.op = Op::kPread, .handle = n, .offset = 0, .size = 100}).data,
            "a file named alone\n");
  // A link that stays inside is followed; lstat sees the link itself.
  int64_t in = Open(dir_ + "/iwd/inside", O_RDONLY);
  EXPECT_GT(in, 0);
  auto link = DecodeStat(Do({.op = Op::kLstat, .path = dir_ + "/iwd/inside"}).data);
  ASSERT_TRUE(link);
  EXPECT_TRUE(S_ISLNK(link->mode));
  // A folder's entries.
  int64_t d = Open(dir_ + "/iwd", O_RDONLY | O_DIRECTORY);
  ASSERT_GT(d, 0);
  auto list = Do({.op = Op::kReaddir, .handle = d, .offset = 0});
  EXPECT_NE(list.data.find(std::string("in.txt\0", 7)), std::string::npos);
  EXPECT_NE(list.data.find(std::string("sub\0", 4)), std::string::npos);
}

TEST_F(ShadowIoTest, NothingOutsideTheRootsIsReachedAndEachRefusalIsNoted) {
  const std::string outside[] = {
      dir_ + "/secret/key",         // another folder
      dir_ + "/iwd/../secret/key",  // climbing (the library sends plain paths)
      dir_ + "/iwd//in.txt",        // not plain
      "iwd/in.txt",                 // relative
      dir_ + "/named.dat2",         // a named file's neighbour
      dir_ + "/iwdx/in.txt",        // a root's prefix is not a root
      "/etc/passwd",
  };
  for (const auto& p : outside) {
    EXPECT_EQ(Do({.op = Op::kOpen, .flags = O_RDONLY, .path = p}).error, EACCES) << p;
    EXPECT_EQ(Do({.op = Op::kStat, .path = p}).error, EACCES) << p;
    EXPECT_EQ(Do({.op = Op::kUnlink, .path = p}).error, EACCES) << p;
  }
  // A symbolic link that leads out is not followed.
  EXPECT_EQ(Do({.op = Op::kOpen, .flags = O_RDONLY, .path = dir_ + "/iwd/escape"}).error, EACCES);
  EXPECT_EQ(Do({.op = Op::kStat, .path = dir_ + "/iwd/escape"}).error, EACCES);
  EXPECT_EQ(
      Do({.op = Op::kRename, .path = dir_ + "/iwd/in.txt", .path2 = dir_ + "/secret/x"}).error,
      EACCES);
  EXPECT_EQ(Do({.op = Op::kUnlink, .path = dir_ + "/iwd"}).error, EACCES);  // the root itself
  auto notes = io_->TakeRefusals();
  EXPECT_GE(notes.size(), 20u);
  EXPECT_NE(notes[0].find("outside the paths this job may use"), std::string::npos) << notes[0];
  EXPECT_EQ(Read(dir_ + "/secret/key"), "not for the job\n");
  EXPECT_TRUE(fs::exists(dir_ + "/iwd/in.txt"));
  EXPECT_TRUE(io_->TakeRefusals().empty());
}

TEST_F(ShadowIoTest, ARepeatedRequestIsAnsweredAgainNotDoneTwice) {
  int64_t w = Open(dir_ + "/iwd/log", O_WRONLY | O_CREAT | O_APPEND);
  ASSERT_GT(w, 0);
  Request r{.seq = 1000, .op = Op::kAppend, .handle = w, .data = "once\n"};
  std::string first = io_->Handle(Encode(r));
  std::string again = io_->Handle(Encode(r));  // sent again after a lost connection
  EXPECT_EQ(first, again);
  EXPECT_EQ(Read(dir_ + "/iwd/log"), "once\n");
}

TEST_F(ShadowIoTest, MalformedRequestsAreAnsweredEinval) {
  Request ok{.seq = 7, .op = Op::kStat, .path = dir_ + "/iwd/in.txt"};
  std::string bytes = Encode(ok);
  for (std::string bad : {std::string(), bytes.substr(0, 20), bytes + "x", bytes.substr(1)}) {
    auto rep = DecodeReply(io_->Handle(bad));
    ASSERT_TRUE(rep);
    EXPECT_EQ(rep->error, EINVAL);
  }
  std::string bad_op = bytes;
  bad_op[8] = 99;  // no such operation
  EXPECT_EQ(DecodeReply(io_->Handle(bad_op))->error, EINVAL);
  std::string long_path = bytes;
  long_path[44] = 0x7f;  // a path length past the message
  long_path[45] = 0x7f;
  EXPECT_EQ(DecodeReply(io_->Handle(long_path))->error, EINVAL);
  // The wire's round trip.
  auto back = DecodeRequest(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->path, ok.path);
  EXPECT_EQ(back->seq, 7u);
  Stat s{.dev = 1, .ino = 2, .size = 3, .mode = 0100644, .mtime_ns = -5};
  auto s2 = DecodeStat(Encode(s));
  ASSERT_TRUE(s2);
  EXPECT_EQ(s2->mtime_ns, -5);
  EXPECT_EQ(s2->mode, 0100644u);
}

// Each open remote file holds one of the agent's descriptors: a run has at most max_handles,
// all runs together at most max_shared; past either the job gets EMFILE, and the first is noted.
TEST_F(ShadowIoTest, OpenFilesAreBoundedPerRunAndInAll) {
  auto shared = std::make_shared<size_t>(0);
  io_ = std::make_unique<ShadowIo>(
      std::vector<std::string>{dir_ + "/iwd/"},
      ShadowIo::Limits{.max_handles = 5, .shared_open = shared, .max_shared = 8});
  std::vector<int64_t> handles;
  for (int i = 0; i < 5; ++i) handles.push_back(Open(dir_ + "/iwd/in.txt", O_RDONLY));
  for (auto h : handles) EXPECT_GT(h, 0);
  EXPECT_EQ(*shared, 5u);
  auto r = Do({.op = Op::kOpen, .flags = O_RDONLY, .path = dir_ + "/iwd/in.txt"});
  EXPECT_EQ(r.error, EMFILE);
  auto noted = io_->TakeRefusals();
  ASSERT_EQ(noted.size(), 1u);
  EXPECT_NE(noted[0].find("EMFILE"), std::string::npos) << noted[0];
  // Closing one gives room again.
  EXPECT_EQ(Do({.op = Op::kClose, .handle = handles.back()}).result, 0);
  EXPECT_EQ(*shared, 4u);
  EXPECT_GT(Open(dir_ + "/iwd/in.txt", O_RDONLY), 0);
  // Another run shares the agent's budget: 3 more fit, then EMFILE.
  ShadowIo other({dir_ + "/iwd/"}, {.max_handles = 100, .shared_open = shared, .max_shared = 8});
  int opened = 0, emfile = 0;
  for (int i = 0; i < 5; ++i) {
    auto rep = DecodeReply(other.Handle(Encode(Request{.seq = static_cast<uint64_t>(100 + i),
                                                       .op = Op::kOpen,
                                                       .flags = O_RDONLY,
                                                       .path = dir_ + "/iwd/in.txt"})));
    ASSERT_TRUE(rep);
    opened += rep->result > 0;
    emfile += rep->error == EMFILE;
  }
  EXPECT_EQ(opened, 3);
  EXPECT_EQ(emfile, 2);
  EXPECT_EQ(*shared, 8u);
  io_.reset();  // a run that ends gives its files back
  EXPECT_EQ(*shared, 3u);
}

// Files and folders a job creates on the desktop get permission bits only: never setuid,
// setgid or sticky.
TEST_F(ShadowIoTest, CreatedFilesGetPermissionBitsOnly) {
  ::umask(0);
  int64_t h = Open(dir_ + "/iwd/suid", O_WRONLY | O_CREAT, 07755);
  ASSERT_GT(h, 0);
  EXPECT_EQ(Do({.op = Op::kMkdir, .mode = 07777, .path = dir_ + "/iwd/sgid"}).result, 0);
  ::umask(022);
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/iwd/suid").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ASSERT_EQ(::stat((dir_ + "/iwd/sgid").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0777u);
}

// A root named in the submit file that leads into a system folder (remote_io_paths = links/etc,
// a link to /etc) gives nothing; a file root that is a link (error = out.txt, a link to a
// sibling) is not followed; refusals are written safely for the log.
TEST_F(ShadowIoTest, RootsAreCheckedWhereTheyReallyAre) {
  fs::create_directories(dir_ + "/links");
  fs::create_symlink("/etc", dir_ + "/links/etc");
  fs::create_directories(dir_ + "/outdir");
  Write(dir_ + "/outdir/secret2", "a sibling\n");
  fs::create_symlink("secret2", dir_ + "/outdir/out.txt");
  io_ = std::make_unique<ShadowIo>(
      std::vector<std::string>{dir_ + "/iwd/", dir_ + "/links/etc/", dir_ + "/outdir/out.txt"});
  EXPECT_EQ(Do({.op = Op::kOpen, .flags = O_RDONLY, .path = dir_ + "/links/etc/passwd"}).error,
            EACCES);
  EXPECT_EQ(Do({.op = Op::kStat, .path = dir_ + "/links/etc/hostname"}).error, EACCES);
  EXPECT_EQ(Do({.op = Op::kOpen, .flags = O_RDONLY, .path = dir_ + "/outdir/out.txt"}).error,
            EACCES);
  EXPECT_EQ(Do({.op = Op::kStat, .path = dir_ + "/outdir/out.txt"}).error, EACCES);
  EXPECT_EQ(Do({.op = Op::kOpen, .flags = O_RDONLY, .path = dir_ + "/outdir/secret2"}).error,
            EACCES);
  auto why = io_->TakeRefusals();
  ASSERT_GE(why.size(), 3u);
  EXPECT_NE(why[0].find("system folder /etc"), std::string::npos) << why[0];
  EXPECT_NE(why[2].find("symbolic link"), std::string::npos) << why[2];
  // A path with a line break in it cannot make a line of its own in the log.
  EXPECT_EQ(Do({.op = Op::kOpen, .flags = O_RDONLY, .path = dir_ + "/nowhere\nFORGED"}).error,
            EACCES);
  auto injected = io_->TakeRefusals();
  ASSERT_EQ(injected.size(), 1u);
  EXPECT_EQ(injected[0].find('\n'), std::string::npos) << injected[0];
  EXPECT_NE(injected[0].find("\\x0aFORGED"), std::string::npos) << injected[0];
  // A file root that is a plain file is used as before.
  fs::remove(dir_ + "/outdir/out.txt");
  Write(dir_ + "/outdir/out.txt", "mine\n");
  EXPECT_GT(Open(dir_ + "/outdir/out.txt", O_RDONLY), 0);
}

}  // namespace
}  // namespace kite::rsc
