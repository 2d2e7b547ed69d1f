// libkite_rsc.so: remote system calls for unmodified, dynamically linked programs
// (docs/remote-io.md). Preloaded into a job with `want_remote_io` by its starter, it sends the
// file calls a program makes on remote paths (KITE_RSC_PATHS) to the shadow in the user's agent,
// through the starter's socket (KITE_RSC_SOCKET), and does every other call as usual.
//
// A remote file has a local stand-in descriptor, so that its number is the program's to keep: an
// empty file made in the sandbox's `.kite-rsc/` folder, named by the shadow's handle, holding the
// open flags and the remote path, and unlinked at once. Its own file offset is the remote file's
// offset, so the kernel shares it as it shares any: between dup'ed descriptors, with forked
// children, and across exec — a new program finds its inherited remote files by looking at its
// descriptors (a shell's `prog < remote-file` works). Every read and write names its offset, so it
// may safely be sent again. A remote handle is closed when the process that opened it closes it
// before any fork; ones that were shared are closed by the shadow when the run ends.
// stdio: fopen/fdopen of a remote file give a FILE whose reads and writes come back here
// (fopencookie); glibc's own stdio never calls the wrapped functions; freopen of a remote file
// onto stdin, stdout or stderr replaces that stream. Modes, owners, times and links are sent too;
// temporary files from a remote template are made remotely; a mapping of a remote file is a copy
// of its bytes. Not remote, and refused with a reason on standard error: a shared writable
// mapping, a remote folder as the working directory where this machine does not have the same
// folder, freopen onto a stream other than the standard three. Locks: accepted, not forwarded.
//
// Everything the library needs for itself goes to the real functions (dlsym(RTLD_NEXT)) or the
// raw system calls, never to its own wrappers.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <utime.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "rsc/checkpoint.h"
#include "rsc/ckpt_image.h"
#include "rsc/paths.h"
#include "rsc/wire.h"

namespace {

using kite::rsc::Op;
using kite::rsc::Reply;
using kite::rsc::Request;
using kite::rsc::WireId;

template <typename F>
F Real(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}
#define REAL(name) static auto real = Real<decltype(&::name)>(#name)

struct File : std::enable_shared_from_this<File> {
  // Replaced when the file is opened again at a new shadow (Reopen), possibly while another
  // thread reads it under `mu`.
  std::atomic<int64_t> handle{0};
  int flags = 0;
  std::string path;
  bool shared = false;  // inherited, or open at a fork: another process may use it
  // Read-ahead: bytes [ahead_at, ahead_at + ahead.size()) of the file, fetched when
  // `ahead_writes` changes were made; `ahead_end`: the block reached the end of the file.
  std::mutex mu;
  std::string ahead;
  int64_t ahead_at = -1;
  uint64_t ahead_writes = 0;
  bool ahead_end = false;
  // Its stand-in holds "FLAGS PATH" at kStandInIdAt and nothing else (the library never writes
  // there): bytes before it, or a size other than `stand_in_size`, were written by calls the
  // library did not see (Unseen). `watch`: the stand-in's file system tells holes from data.
  bool watch = false;
  bool reported = false;
  int64_t stand_in_size = 0;
  // Open for appending: where this process's last write left the file's end (-1: none yet).
  // After a restore the file is cut back to it, so the stretch run again does not write twice.
  int64_t append_end = -1;
};

// Reads shorter than this fetch this much and keep it for the next reads.
constexpr size_t kReadAhead = 64 * 1024;

struct State {
  std::mutex mu;
  int sock = -1;
  pid_t pid = 0;
  uint64_t seq = 0;
  std::vector<std::string> roots;
  // Fixed arrays, not strings: a restored process sets them from a signal handler.
  char sandbox[4096] = "", socket_path[4096] = "";
  char state[4096] = "";  // where the stand-in files are made (KITE_RSC_STATE, else the sandbox)
  // Restored from a checkpoint: the shadow knows none of the remote files open; they are opened
  // there again before the next call.
  std::atomic<bool> reopen{false};
  // Sequential reading: the next read-ahead block, asked for before the program needs it so that
  // it comes while the program works on the one before. At most one on its way; its reply is
  // taken before any other call's. Under `mu`.
  struct Prefetch {
    bool out = false;   // asked for
    bool done = false;  // its reply is in `reply`
    pid_t pid = 0;      // of the process that asked, on its connection
    std::weak_ptr<File> file;
    int64_t at = 0;
    uint64_t writes = 0, seq = 0;
    Reply reply;
  } pre;
  std::atomic<bool> pre_stale{false};  // set after a restore: the connection it came on is gone
  std::map<int, std::shared_ptr<File>> files;
  std::atomic<size_t> count{0};  // files.size(), read without the lock
  // Remote changes this process made to each path (writes, truncations, renames, removals): a
  // read-ahead block of a file fetched before its latest change is not used.
  std::mutex changes_mu;
  std::map<std::string, uint64_t> changes;
  bool enabled = false;
};

State& S() {
  static State* s = new State;  // never destroyed: calls may come during exit
  return *s;
}

void Changed(const std::string& path) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.changes_mu);
  ++s.changes[path];
}
uint64_t Changes(const std::string& path) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.changes_mu);
  auto it = s.changes.find(path);
  return it == s.changes.end() ? 0 : it->second;
}

// ---- paths ----

std::string Normal(const std::string& path) {
  std::string cwd;
  if (path.empty() || path[0] != '/') {
    char buf[4096];
    if (!::getcwd(buf, sizeof buf)) return "";
    cwd = buf;
  }
  return kite::rsc::LexicalPath(cwd, path, /*clamp=*/true);
}

// True (with the normal path) when `path` is one the shadow serves.
bool Remote(const char* path, std::string* normal) {
  State& s = S();
  if (!s.enabled || path == nullptr || *path == '\0') return false;
  std::string n = Normal(path);
  if (n.empty() || (s.sandbox[0] && kite::rsc::PathUnder(n, s.sandbox))) return false;
  for (const auto& r : s.roots) {
    if (kite::rsc::PathUnder(n, r)) {
      *normal = n;
      return true;
    }
  }
  return false;
}

// ---- the starter's socket ----

bool WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::syscall(SYS_write, fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, char* buf, size_t len) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::syscall(SYS_read, fd, buf + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool Connect(State& s) {
  if (s.sock >= 0 && s.pid == ::getpid()) return true;
  if (s.sock >= 0) ::syscall(SYS_close, s.sock);  // a forked child: its own connection
  s.sock = -1;
  int fd = static_cast<int>(::syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd < 0) return false;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  // A sandbox deep in a batch job's folder gives a path longer than sun_path holds: it is then
  // reached through its folder, opened, as /proc/self/fd/N/NAME.
  std::string address = s.socket_path;
  int dir = -1;
  if (address.size() >= sizeof a.sun_path) {
    size_t slash = address.rfind('/');
    dir = static_cast<int>(::syscall(SYS_openat, AT_FDCWD, address.substr(0, slash).c_str(),
                                     O_PATH | O_DIRECTORY | O_CLOEXEC, 0));
    if (dir < 0) {
      ::syscall(SYS_close, fd);
      return false;
    }
    address = "/proc/self/fd/" + std::to_string(dir) + address.substr(slash);
  }
  bool ok = address.size() < sizeof a.sun_path;
  if (ok) {
    std::memcpy(a.sun_path, address.c_str(), address.size() + 1);
    ok = ::syscall(SYS_connect, fd, &a, sizeof a) == 0;
  }
  if (dir >= 0) ::syscall(SYS_close, dir);
  if (!ok) {
    ::syscall(SYS_close, fd);
    return false;
  }
  s.sock = fd;
  s.pid = ::getpid();
  kite::rsc::ckpt::g_socket_fd = fd;
  return true;
}

void SetText(char* to, const char* from, size_t cap) {
  size_t i = 0;
  for (; from[i] && i + 1 < cap; ++i) to[i] = from[i];
  to[i] = '\0';
}

bool Call(Request& req, Reply* rep);

// Opens remote files again at the shadow (never created or emptied) and gives each old handle's
// new one. After a restore (`restored`) every file is, and one open for appending is cut back to
// where this process's writes had reached. After the agent restarted (a call answered ESTALE)
// only the files whose handle the shadow no longer knows are, and nothing is cut: the process
// itself went on.
std::map<int64_t, int64_t> Reopen(bool restored) {
  std::map<int64_t, int64_t> renamed;
  State& s = S();
  std::vector<std::shared_ptr<File>> files;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    std::set<File*> seen;  // dup'ed descriptors share one
    for (auto& [fd, f] : s.files) {
      if (seen.insert(f.get()).second) files.push_back(f);
    }
  }
  for (auto& f : files) {
    Reply rep;
    if (!restored) {
      Request probe;
      probe.op = Op::kFstat;
      probe.handle = f->handle;
      if (Call(probe, &rep) || errno != ESTALE) continue;  // still known (or gone for good)
    }
    Request req;
    req.op = Op::kOpen;
    req.path = f->path;
    req.flags = f->flags & ~(O_CREAT | O_TRUNC | O_EXCL | O_CLOEXEC);
    if (!Call(req, &rep)) continue;  // its calls fail with the shadow's reason
    renamed[f->handle] = rep.result;
    f->handle = rep.result;
    if (!restored) continue;  // the file is as it was: its read-ahead block holds
    // (Not under the file's lock when the call that met the stale handle holds it.)
    std::lock_guard<std::mutex> lock(f->mu);
    f->ahead_at = -1;
    if ((f->flags & O_APPEND) && f->append_end >= 0) {
      Request cut;
      cut.op = Op::kFtruncate;
      cut.handle = f->handle;
      cut.size = static_cast<uint64_t>(f->append_end);
      Call(cut, &rep);
    }
  }
  return renamed;
}

// The agent restarted (docs/remote-io.md, "Across agent restarts"): the run's new shadow answers
// ESTALE to a handle the old one gave. The handle that replaced `old`, opening the stale files
// again the first time one is met (once for all the threads that meet it); 0 when it could not
// be opened again (errno: why).
int64_t Renewed(int64_t old) {
  static std::mutex reopening;
  static std::map<int64_t, int64_t> renewed;  // under `reopening`
  std::lock_guard<std::mutex> lock(reopening);
  if (auto it = renewed.find(old); it != renewed.end()) return it->second;
  for (auto [from, to] : Reopen(/*restored=*/false)) renewed[from] = to;
  if (auto it = renewed.find(old); it != renewed.end()) return it->second;
  errno = ESTALE;
  return 0;
}

// One request and its reply; false (errno set) when the starter cannot be reached.
bool CallLocked(Request& req, Reply* rep);

// Calls made while Renewed opens files again are not retried themselves.
thread_local bool t_renewing = false;

bool CallOnce(Request& req, Reply* rep) {
  State& s = S();
  if (s.reopen.exchange(false)) {
    // The request in hand was made with a handle of the shadow before the restore.
    auto renamed = Reopen(/*restored=*/true);
    if (auto it = renamed.find(req.handle); req.handle != 0 && it != renamed.end())
      req.handle = it->second;
  }
  kite::rsc::ckpt::EnterCall();
  bool ok;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    ok = CallLocked(req, rep);
  }
  int e = errno;
  kite::rsc::ckpt::LeaveCall();
  errno = e;
  return ok;
}

// A call on a handle of a shadow that is gone is asked again with the handle that replaced it
// (an append, whose reply may have been lost after it was done, is RemoteWrite's to check
// first; a close has nothing left to close).
bool Call(Request& req, Reply* rep) {
  for (int tries = 0;; ++tries) {
    if (CallOnce(req, rep)) return true;
    if (errno != ESTALE || req.handle == 0 || req.op == Op::kClose || req.op == Op::kAppend ||
        t_renewing || tries == 3)
      return false;
    t_renewing = true;
    int64_t fresh = Renewed(req.handle);
    t_renewing = false;
    if (fresh == 0) return false;
    req.handle = fresh;
  }
}

bool SendLocked(State& s, Request& req) {
  if (!Connect(s)) return false;
  req.seq = ++s.seq;
  std::string body = kite::rsc::Encode(req);
  std::string frame;
  kite::rsc::wire::Put(frame, body.size(), 4);
  frame += body;
  return WriteAll(s.sock, frame);
}

bool ReceiveLocked(State& s, Reply* rep);

// The prefetch on its way is received (or dropped: another process's, or from before a
// restore); false when the connection failed.
bool DrainLocked(State& s) {
  if (s.pre_stale.exchange(false)) s.pre = State::Prefetch{};
  if (!s.pre.out || s.pre.done) return true;
  if (s.pre.pid != ::getpid() || s.sock < 0 || s.pid != s.pre.pid) {
    s.pre = State::Prefetch{};
    return true;
  }
  if (!ReceiveLocked(s, &s.pre.reply) || s.pre.reply.seq != s.pre.seq) {
    s.pre = State::Prefetch{};
    return false;
  }
  s.pre.done = true;
  return true;
}

bool CallLocked(Request& req, Reply* rep) {
  State& s = S();
  if (!DrainLocked(s) || !SendLocked(s, req)) {
    errno = EIO;
    return false;
  }
  if (!ReceiveLocked(s, rep)) {
    errno = EIO;
    return false;
  }
  if (rep->result < 0) errno = rep->error ? rep->error : EIO;
  return rep->result >= 0;
}

bool ReceiveLocked(State& s, Reply* rep) {
  char len[4];
  if (!ReadAll(s.sock, len, 4)) {
    errno = EIO;
    return false;
  }
  size_t n = kite::rsc::wire::Get(std::string_view(len, 4), 0, 4);
  if (n > kite::rsc::kMaxMessage) {
    errno = EIO;
    return false;
  }
  std::string bytes(n, '\0');
  if (!ReadAll(s.sock, bytes.data(), n)) {
    errno = EIO;
    return false;
  }
  auto r = kite::rsc::DecodeReply(bytes);
  if (!r) {
    errno = EIO;
    return false;
  }
  *rep = std::move(*r);
  return true;
}

int64_t CallSimple(Op op, const std::string& path, int flags = 0, uint32_t mode = 0,
                   const std::string& path2 = "", uint64_t size = 0) {
  if (op != Op::kStat && op != Op::kLstat && op != Op::kAccess) {
    Changed(path);
    if (!path2.empty()) Changed(path2);
  }
  Request req;
  req.op = op;
  req.path = path;
  req.path2 = path2;
  req.flags = flags;
  req.mode = mode;
  req.size = size;
  Reply rep;
  if (!Call(req, &rep)) return -1;
  return rep.result;
}

std::shared_ptr<File> Find(int fd) {
  State& s = S();
  // Most calls are on local files: no lock unless some remote file is open.
  if (!s.enabled || fd < 0 || s.count.load(std::memory_order_relaxed) == 0) return nullptr;
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.files.find(fd);
  return it == s.files.end() ? nullptr : it->second;
}

// Where the first data of the file open on `fd` is (lseek's SEEK_DATA from 0; -1 when it cannot
// be told) and, in `size`, its size; through a descriptor of its own, so that the offset the
// program shares with its other processes is not moved.
int64_t DataStart(int fd, int64_t* size = nullptr) {
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  int own = static_cast<int>(::syscall(SYS_openat, AT_FDCWD, link, O_RDONLY | O_CLOEXEC));
  if (own < 0) return -1;
  int64_t data = ::syscall(SYS_lseek, own, 0, SEEK_DATA);
  struct stat st {};
  if (size && ::syscall(SYS_fstat, own, &st) == 0) *size = st.st_size;
  ::syscall(SYS_close, own);
  return data;
}

// Whether the program wrote to descriptor `fd` of remote file `f` through calls this library
// does not see (glibc's internal ones: a bash builtin's `echo > FILE`): those bytes are in its
// stand-in, never sent. Told to the shadow, once per file and process, which holds the job: such
// a loss is never silent.
void Unseen(int fd, File& f) {
  if (!f.watch || f.reported) return;
  int64_t size = -1;
  int64_t data = DataStart(fd, &size);
  if (!((data >= 0 && data < kite::rsc::ckpt::kStandInIdAt) ||
        (size >= 0 && size != f.stand_in_size)))
    return;
  f.reported = true;
  Request req;
  req.op = Op::kUnseen;
  req.path = f.path;
  Reply rep;
  Call(req, &rep);
}

void Forget(int fd) {
  State& s = S();
  std::shared_ptr<File> f;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.files.find(fd);
    if (it == s.files.end()) return;
    f = it->second;
    s.files.erase(it);
    s.count = s.files.size();
  }
  Unseen(fd, *f);
  if (f.use_count() == 1 && !f->shared) {
    Request req;
    req.op = Op::kClose;
    req.handle = f->handle;
    Reply rep;
    Call(req, &rep);
  }
}

void Bind(int fd, std::shared_ptr<File> f) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.files[fd] = std::move(f);
  s.count = s.files.size();
}

int RemoteOpen(const std::string& path, int flags, mode_t mode) {
  if (flags & (O_TRUNC | O_CREAT)) Changed(path);
  Request req;
  req.op = Op::kOpen;
  req.path = path;
  req.flags = flags & ~O_CLOEXEC;
  req.mode = mode;
  Reply rep;
  if (!Call(req, &rep)) return -1;
  REAL(open);
  State& s = S();
  int fd;
  bool watch = false;
  int64_t stand_in_size = 0;
  if (!s.state[0]) {
    fd = real("/dev/null", O_RDWR | (flags & O_CLOEXEC));
  } else {
    std::string stand_in = std::string(s.state) + "/.kite-rsc/" + std::to_string(rep.result);
    fd = real(stand_in.c_str(), O_RDWR | O_CREAT | O_TRUNC | (flags & O_CLOEXEC), 0600);
    if (fd >= 0) {
      std::string what = std::to_string(flags) + " " + path;
      int64_t at = kite::rsc::ckpt::kStandInIdAt;
      if (::syscall(SYS_pwrite64, fd, what.data(), what.size(), at) ==
          static_cast<int64_t>(what.size())) {
        // Holes told from data: only then is a write the library did not see noticed (Unseen).
        watch = ::syscall(SYS_lseek, fd, 0, SEEK_DATA) == at;
        ::syscall(SYS_lseek, fd, 0, SEEK_SET);
        stand_in_size = at + static_cast<int64_t>(what.size());
      } else {
        ::syscall(SYS_pwrite64, fd, what.data(), what.size(), 0);  // a file system without room
      }
      ::syscall(SYS_unlink, stand_in.c_str());
    }
  }
  if (fd < 0) {
    int e = errno;
    Request close_req;
    close_req.op = Op::kClose;
    close_req.handle = rep.result;
    Call(close_req, &rep);
    errno = e;
    return -1;
  }
  auto f = std::make_shared<File>();
  f->handle = rep.result;
  f->flags = flags;
  f->path = path;
  f->watch = watch;
  f->stand_in_size = stand_in_size;
  Bind(fd, f);
  return fd;
}

// The offset of a remote file: its stand-in's own.
int64_t Tell(int fd) {
  return ::syscall(SYS_lseek, fd, 0, SEEK_CUR);
}
void Seek(int fd, int64_t offset) {
  ::syscall(SYS_lseek, fd, offset, SEEK_SET);
}

// A short read is served from the file's read-ahead block, fetched (64 KiB from the offset) when
// it does not hold the bytes asked for; so a program reading a line or a record at a time makes a
// round trip per block, not per call.
// The block at `at` of `f` if it was prefetched (waiting for it if it is on its way).
bool TakePrefetch(File& f, int64_t at, uint64_t writes) {
  State& s = S();
  kite::rsc::ckpt::EnterCall();
  bool used = false;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.pre_stale.exchange(false)) s.pre = State::Prefetch{};
    if (s.pre.out && s.pre.file.lock().get() == &f) {
      if (s.pre.at == at && s.pre.writes == writes && DrainLocked(s) && s.pre.done &&
          s.pre.reply.result >= 0) {
        f.ahead = std::move(s.pre.reply.data);
        f.ahead_at = at;
        f.ahead_writes = writes;
        f.ahead_end = f.ahead.size() < kReadAhead;
        used = true;
      }
      if (s.pre.done || !s.pre.out) s.pre = State::Prefetch{};
    }
  }
  kite::rsc::ckpt::LeaveCall();
  return used;
}

// Asks for the block of `f` at `at` without waiting for it.
void Prefetch(File& f, int64_t at, uint64_t writes) {
  State& s = S();
  kite::rsc::ckpt::EnterCall();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.pre_stale.exchange(false)) s.pre = State::Prefetch{};
    if (s.pre.out && s.pre.done) s.pre = State::Prefetch{};  // had and never used
    if (!s.pre.out) {
      Request req;
      req.op = Op::kPread;
      req.handle = f.handle;
      req.offset = at;
      req.size = kReadAhead;
      if (SendLocked(s, req)) {
        s.pre.out = true;
        s.pre.done = false;
        s.pre.pid = ::getpid();
        s.pre.file = f.weak_from_this();
        s.pre.at = at;
        s.pre.writes = writes;
        s.pre.seq = req.seq;
      }
    }
  }
  kite::rsc::ckpt::LeaveCall();
}

ssize_t ReadAhead(File& f, void* buf, size_t n, int64_t* offset) {
  std::lock_guard<std::mutex> lock(f.mu);
  uint64_t writes = Changes(f.path);
  int64_t end = f.ahead_at + static_cast<int64_t>(f.ahead.size());
  bool held = f.ahead_at >= 0 && f.ahead_writes == writes && *offset >= f.ahead_at &&
              (*offset + static_cast<int64_t>(n) <= end || (f.ahead_end && *offset <= end));
  // Reading on from where the last block ended (or from the start): the next one is asked for as
  // soon as this one is had.
  bool sequential = !held && (*offset == 0 || (f.ahead_at >= 0 && *offset == end && !f.ahead_end));
  if (!held && TakePrefetch(f, *offset, writes)) held = true;
  if (!held) {
    Request req;
    req.op = Op::kPread;
    req.handle = f.handle;
    req.offset = *offset;
    req.size = kReadAhead;
    Reply rep;
    if (!Call(req, &rep)) return -1;
    f.ahead = std::move(rep.data);
    f.ahead_at = *offset;
    f.ahead_writes = writes;
    f.ahead_end = f.ahead.size() < kReadAhead;
  }
  if (sequential && !f.ahead_end)
    Prefetch(f, f.ahead_at + static_cast<int64_t>(f.ahead.size()), writes);
  size_t from = static_cast<size_t>(*offset - f.ahead_at);
  size_t got = std::min(n, f.ahead.size() - from);
  std::memcpy(buf, f.ahead.data() + from, got);
  *offset += static_cast<int64_t>(got);
  return static_cast<ssize_t>(got);
}

ssize_t RemoteRead(File& f, void* buf, size_t n, int64_t* offset) {
  if (n < kReadAhead) return ReadAhead(f, buf, n, offset);
  size_t done = 0;
  while (done < n) {
    Request req;
    req.op = Op::kPread;
    req.handle = f.handle;
    req.offset = *offset;
    req.size = std::min(n - done, kite::rsc::kMaxData);
    Reply rep;
    if (!Call(req, &rep)) return done ? static_cast<ssize_t>(done) : -1;
    std::memcpy(static_cast<char*>(buf) + done, rep.data.data(), rep.data.size());
    done += rep.data.size();
    *offset += static_cast<int64_t>(rep.data.size());
    if (rep.data.size() < req.size) break;  // the end of the file
  }
  return static_cast<ssize_t>(done);
}

// An append answered ESTALE: the agent restarted, and the old shadow may have done it before its
// reply was lost. The file is opened again; when this process's appends are known to have left the
// file's end at `append_end` and the bytes there are this append's, it was done (its reply is
// made up here); otherwise it is asked again.
bool AppendAgain(File& f, Request& req, Reply* rep) {
  t_renewing = true;
  int64_t fresh = Renewed(req.handle);
  t_renewing = false;
  if (fresh == 0) return false;
  req.handle = fresh;
  int64_t end = f.append_end;
  if (end >= 0) {
    Request look;
    look.op = Op::kPread;
    look.handle = fresh;
    look.offset = end;
    look.size = req.data.size();
    Reply there;
    if (Call(look, &there) && there.data == req.data) {
      rep->seq = req.seq;
      rep->result = static_cast<int64_t>(req.data.size());
      rep->error = 0;
      rep->data.clear();
      kite::rsc::wire::Put(rep->data, static_cast<uint64_t>(end) + req.data.size(), 8);
      return true;
    }
  }
  return Call(req, rep);
}

ssize_t RemoteWrite(File& f, const void* buf, size_t n, int64_t* offset, bool append) {
  Changed(f.path);
  size_t done = 0;
  while (done < n) {
    Request req;
    req.op = append ? Op::kAppend : Op::kPwrite;
    req.handle = f.handle;
    req.offset = *offset;
    req.data.assign(static_cast<const char*>(buf) + done, std::min(n - done, kite::rsc::kMaxData));
    Reply rep;
    bool ok = Call(req, &rep);
    if (!ok && append && errno == ESTALE && !t_renewing) ok = AppendAgain(f, req, &rep);
    if (!ok) return done ? static_cast<ssize_t>(done) : -1;
    done += static_cast<size_t>(rep.result);
    if (!append) *offset += rep.result;
    if (append && rep.data.size() == 8)
      f.append_end = static_cast<int64_t>(kite::rsc::wire::Get(rep.data, 0, 8));
    if (rep.result == 0) break;
  }
  return static_cast<ssize_t>(done);
}

bool RemoteStat(Op op, const std::string& path, int64_t handle, kite::rsc::Stat* out) {
  Request req;
  req.op = op;
  req.path = path;
  req.handle = handle;
  Reply rep;
  if (!Call(req, &rep)) return false;
  auto st = kite::rsc::DecodeStat(rep.data);
  if (!st) {
    errno = EIO;
    return false;
  }
  *out = *st;
  return true;
}

void Fill(const kite::rsc::Stat& s, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_dev = s.dev;
  st->st_ino = s.ino;
  st->st_size = static_cast<off_t>(s.size);
  st->st_blocks = static_cast<blkcnt_t>(s.blocks);
  st->st_mode = s.mode;
  st->st_nlink = s.nlink;
  st->st_uid = s.uid;
  st->st_gid = s.gid;
  st->st_blksize = static_cast<blksize_t>(s.blksize);
  auto ts = [](int64_t ns) {
    return timespec{static_cast<time_t>(ns / 1000000000), ns % 1000000000};
  };
  st->st_atim = ts(s.atime_ns);
  st->st_mtim = ts(s.mtime_ns);
  st->st_ctim = ts(s.ctime_ns);
}

// An *at() call's path is "" or, since Linux 6.11, NULL (with AT_EMPTY_PATH): the folder itself.
// Apart, because glibc declares those arguments non-null.
__attribute__((noinline)) bool EmptyPath(const char* path) {
  return path == nullptr || *path == '\0';
}

// The path an *at() call names: relative ones start at `dirfd` (a remote folder's path, or the
// real one's through /proc).
bool RemoteAt(int dirfd, const char* path, std::string* normal) {
  if (path == nullptr) return false;
  if (path[0] == '/' || dirfd == AT_FDCWD) return Remote(path, normal);
  if (auto f = Find(dirfd)) return Remote((f->path + "/" + path).c_str(), normal);
  return false;
}

FILE* CookieFile(int fd, const char* mode);

// After a fork both processes hold every remote file: neither closes it at the shadow.
void MarkShared() {
  for (auto& [fd, f] : S().files) f->shared = true;
}
void ChildAfterFork() {
  MarkShared();
  ::syscall(SYS_getrandom, &S().seq, sizeof S().seq, 0);
  S().seq &= ~(uint64_t{1} << 63);
}

// At exit: the remote files the program never closed (the kernel closes them, unseen) are looked
// at for writes the library did not see (Unseen).
__attribute__((destructor)) void Fini() {
  State& s = S();
  if (!s.enabled || s.count.load() == 0) return;
  std::vector<std::pair<int, std::shared_ptr<File>>> files;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    for (auto& [fd, f] : s.files) files.emplace_back(fd, f);
  }
  for (auto& [fd, f] : files) Unseen(fd, *f);
}

__attribute__((constructor)) void Init() {
  kite::rsc::ckpt::Init();  // a restore never comes back
  State& s = S();
  const char* sock = ::getenv("KITE_RSC_SOCKET");
  const char* paths = ::getenv("KITE_RSC_PATHS");
  if (!sock || !paths) return;
  SetText(s.socket_path, sock, sizeof s.socket_path);
  if (const char* sb = ::getenv("KITE_RSC_SANDBOX")) SetText(s.sandbox, sb, sizeof s.sandbox);
  std::string p = paths;
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find(':', i);
    if (j == std::string::npos) j = p.size();
    if (j > i && p[i] == '/') s.roots.push_back(p.substr(i, j - i));
    i = j + 1;
  }
  s.enabled = !s.roots.empty();
  // Request numbers start at random in each program, so that no two processes of a run (a fork,
  // the same process after an exec) send the same one: the shadow answers a repeated number from
  // its last reply.
  ::syscall(SYS_getrandom, &s.seq, sizeof s.seq, 0);
  s.seq &= ~(uint64_t{1} << 63);
  if (!s.enabled) return;
  ::pthread_atfork(nullptr, MarkShared, ChildAfterFork);
  const char* state = ::getenv("KITE_RSC_STATE");
  SetText(s.state, state ? state : s.sandbox, sizeof s.state);
  if (!s.state[0]) return;
  std::string stand_ins = std::string(s.state) + "/.kite-rsc";
  ::syscall(SYS_mkdir, stand_ins.c_str(), 0700);
  // Remote files this program inherited (from its parent, or from itself before an exec).
  std::string prefix = stand_ins + "/";
  for (int fd = 0; fd < 1024; ++fd) {
    char link[64], target[4096];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = ::syscall(SYS_readlink, link, target, sizeof target - 1);
    if (n <= 0) continue;
    std::string t(target, static_cast<size_t>(n));
    if (t.compare(0, prefix.size(), prefix) != 0) continue;
    char what[4200];
    int64_t at = kite::rsc::ckpt::kStandInIdAt;
    ssize_t m = ::syscall(SYS_pread64, fd, what, sizeof what - 1, at);
    bool far = m > 0;
    if (!far) m = ::syscall(SYS_pread64, fd, what, sizeof what - 1, 0);  // see RemoteOpen
    if (m <= 0) continue;
    std::string w(what, static_cast<size_t>(m));
    size_t space = w.find(' ');
    if (space == std::string::npos) continue;
    auto f = std::make_shared<File>();
    f->handle = std::atoll(t.c_str() + prefix.size());
    f->flags = std::atoi(w.substr(0, space).c_str());
    f->path = w.substr(space + 1);
    f->shared = true;
    f->watch = far && DataStart(fd) == at;  // see Unseen
    f->stand_in_size = at + m;
    s.files[fd] = f;
  }
  s.count = s.files.size();
  // glibc's stdin, stdout and stderr write with its internal calls, never the wrapped ones: one on
  // a remote file is replaced by a stream that goes through them.
  if (s.files.count(0)) {
    if (FILE* f = CookieFile(0, "r")) stdin = f;
  }
  if (s.files.count(1)) {
    if (FILE* f = CookieFile(1, "w")) stdout = f;
  }
  if (s.files.count(2)) {
    if (FILE* f = CookieFile(2, "w")) {
      ::setvbuf(f, nullptr, _IONBF, 0);
      stderr = f;
    }
  }
}

// ---- stdio over a remote descriptor ----

ssize_t CookieRead(void* c, char* buf, size_t n) {
  return ::read(static_cast<int>(reinterpret_cast<intptr_t>(c)), buf, n);
}
ssize_t CookieWrite(void* c, const char* buf, size_t n) {
  return ::write(static_cast<int>(reinterpret_cast<intptr_t>(c)), buf, n);
}
int CookieSeek(void* c, off64_t* pos, int whence) {
  off_t r = ::lseek(static_cast<int>(reinterpret_cast<intptr_t>(c)), *pos, whence);
  if (r < 0) return -1;
  *pos = r;
  return 0;
}
// The descriptor under each stream made here: fileno() of a fopencookie stream is -1, and
// programs fstat it (coreutils' sort sizes its buffer so).
std::mutex& CookieMu() {
  static std::mutex* m = new std::mutex;
  return *m;
}
std::map<FILE*, int>& CookieFds() {
  static auto* m = new std::map<FILE*, int>;
  return *m;
}
std::atomic<size_t> g_cookies{0};

int CookieClose(void* c) {
  int fd = static_cast<int>(reinterpret_cast<intptr_t>(c));
  {
    std::lock_guard<std::mutex> lock(CookieMu());
    std::erase_if(CookieFds(), [fd](const auto& e) { return e.second == fd; });
    g_cookies = CookieFds().size();
  }
  return ::close(fd);
}

FILE* CookieFile(int fd, const char* mode) {
  cookie_io_functions_t io{CookieRead, CookieWrite, CookieSeek, CookieClose};
  FILE* f = ::fopencookie(reinterpret_cast<void*>(static_cast<intptr_t>(fd)), mode, io);
  if (f) {
    std::lock_guard<std::mutex> lock(CookieMu());
    CookieFds()[f] = fd;
    g_cookies = CookieFds().size();
  }
  return f;
}

// The descriptor of a stream made here, or -1.
int CookieFd(FILE* f) {
  if (g_cookies.load(std::memory_order_relaxed) == 0) return -1;
  std::lock_guard<std::mutex> lock(CookieMu());
  auto it = CookieFds().find(f);
  return it == CookieFds().end() ? -1 : it->second;
}

int ModeFlags(const char* mode) {
  int flags = 0;
  switch (mode[0]) {
    case 'r':
      flags = O_RDONLY;
      break;
    case 'w':
      flags = O_WRONLY | O_CREAT | O_TRUNC;
      break;
    case 'a':
      flags = O_WRONLY | O_CREAT | O_APPEND;
      break;
    default:
      return -1;
  }
  for (const char* m = mode + 1; *m; ++m) {
    if (*m == '+') flags = (flags & ~O_ACCMODE) | O_RDWR;
    if (*m == 'x') flags |= O_EXCL;
    if (*m == 'e') flags |= O_CLOEXEC;
  }
  return flags;
}

// ---- folders ----

struct RemoteDir {
  int fd = -1;
  std::vector<std::string> names;
  size_t pos = 0;
  bool loaded = false;
  struct dirent entry {};
};
std::set<void*>& Dirs() {
  static auto* d = new std::set<void*>;
  return *d;
}
std::mutex& DirsMu() {
  static auto* m = new std::mutex;
  return *m;
}
std::atomic<size_t>& DirCount() {
  static std::atomic<size_t> n{0};
  return n;
}
RemoteDir* OurDir(DIR* d) {
  if (DirCount().load(std::memory_order_relaxed) == 0) return nullptr;  // local folders only
  std::lock_guard<std::mutex> lock(DirsMu());
  return Dirs().count(d) ? reinterpret_cast<RemoteDir*>(d) : nullptr;
}
DIR* NewDir(int fd) {
  auto* d = new RemoteDir;
  d->fd = fd;
  std::lock_guard<std::mutex> lock(DirsMu());
  Dirs().insert(d);
  DirCount() = Dirs().size();
  return reinterpret_cast<DIR*>(d);
}

// ---- modes, owners, times and links ----
// The desktop's, through the shadow, which acts on the last name itself and never through a link:
// the calls that follow one have it followed here, a readlink at a time as the kernel would, and
// a link that leads out of the job's paths is refused as the shadow refuses to follow it.

// `n` (a remote path) made the path its links lead to; false (errno set) when one leads out of
// the job's paths, or past 40 of them.
bool Follow(std::string* n) {
  for (int hops = 0; hops < 40; ++hops) {
    kite::rsc::Stat s;
    if (!RemoteStat(Op::kLstat, *n, 0, &s)) return false;
    if (!S_ISLNK(s.mode)) return true;
    Request req;
    req.op = Op::kReadlink;
    req.path = *n;
    Reply rep;
    if (!Call(req, &rep)) return false;
    std::string next = kite::rsc::LexicalPath(n->substr(0, n->rfind('/') + 1), rep.data, true);
    if (!Remote(next.c_str(), n)) {
      errno = EACCES;
      return false;
    }
  }
  errno = ELOOP;
  return false;
}

// One metadata call on remote path `n` (its links followed first when `follow`); 0 or -1.
int Meta(Op op, std::string n, bool follow, uint32_t mode = 0, int64_t offset = 0,
         int64_t handle = 0, const std::string& data = "") {
  if (follow && !Follow(&n)) return -1;
  Request req;
  req.op = op;
  req.path = n;
  req.mode = mode;
  req.offset = offset;
  req.handle = handle;
  req.data = data;
  Reply rep;
  return Call(req, &rep) ? 0 : -1;
}

// The remote path an *at() call acts on: `path` from `dirfd`, or with AT_EMPTY_PATH (or, for
// utimensat, no path at all) the file open on `dirfd`, whose path it was opened by.
bool RemoteTarget(int dirfd, const char* path, bool empty_is_fd, std::string* n) {
  if (empty_is_fd && EmptyPath(path)) {
    auto f = Find(dirfd);
    if (f) *n = f->path;
    return f != nullptr;
  }
  return RemoteAt(dirfd, path, n);
}

int NoXattr() {
  errno = ENOTSUP;
  return -1;
}

// utimes(2)'s times as kUtimens's data (none: both now).
std::string EncodeTimevals(const struct timeval* tv) {
  if (!tv) return kite::rsc::EncodeTimes(nullptr);
  struct timespec ts[2] = {{tv[0].tv_sec, tv[0].tv_usec * 1000},
                           {tv[1].tv_sec, tv[1].tv_usec * 1000}};
  return kite::rsc::EncodeTimes(ts);
}

// A remote folder cannot be the working directory (its descriptor is a stand-in file), except
// where this machine has the very same folder (the desktop's own slot: the same device and inode
// as the shadow sees): there it becomes it by its path. Elsewhere refused, and said, so that `cd`,
// `mkdir -p` and the like fail with a reason rather than "Not a directory" or "No such file".
int NotAWorkingDirectory(const std::string& path) {
  std::string msg = "kite-rsc: " + path +
                    ": a remote folder cannot be the working directory with remote I/O through "
                    "the preloaded library (remote_io_method = preload); through the kernel it "
                    "can\n";
  ::syscall(SYS_write, 2, msg.data(), msg.size());
  errno = ENOTSUP;
  return -1;
}
// 0 when remote folder `n` is this machine's own too and is now the working directory; -1 with
// errno when it is a remote folder that cannot be; 1 when `n` is no remote folder (errno kept).
int ChdirRemote(const std::string& n) {
  int e = errno;
  kite::rsc::Stat remote;
  if (!RemoteStat(Op::kStat, n, 0, &remote) || !S_ISDIR(remote.mode)) {
    errno = e;
    return 1;
  }
  struct stat here {};
  REAL(chdir);
  if (::syscall(SYS_stat, n.c_str(), &here) == 0 && here.st_dev == remote.dev &&
      here.st_ino == remote.ino && real(n.c_str()) == 0)
    return 0;
  return NotAWorkingDirectory(n);
}

// Temporary files in a remote folder (sed -i's, sort -T's) are made there, through the shadow:
// glibc's own would make them with its internal calls, on the execute node. The template's six
// X's (before `suffix` more characters) become random letters until a name is free. False when
// the template is not remote; else true with the descriptor (0 for a folder) or -1 in `*out`.
bool RemoteTemp(char* tmpl, int suffix, int flags, bool folder, int* out) {
  std::string n;
  size_t len = std::strlen(tmpl);
  if (!Remote(tmpl, &n)) return false;
  *out = -1;
  if (suffix < 0 || len < 6 + static_cast<size_t>(suffix) ||
      std::memcmp(tmpl + len - suffix - 6, "XXXXXX", 6) != 0) {
    errno = EINVAL;
    return true;
  }
  static const char kLetters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  char* x = tmpl + len - suffix - 6;
  for (int tries = 0; tries < 100; ++tries) {
    unsigned char r[6];
    if (::syscall(SYS_getrandom, r, sizeof r, 0) != static_cast<long>(sizeof r)) return true;
    for (int i = 0; i < 6; ++i) x[i] = kLetters[r[i] % (sizeof kLetters - 1)];
    if (!Remote(tmpl, &n)) break;
    int rc = folder ? (CallSimple(Op::kMkdir, n, 0, 0700) < 0 ? -1 : 0)
                    : RemoteOpen(n, O_RDWR | O_CREAT | O_EXCL | flags, 0600);
    if (rc >= 0 || errno != EEXIST) {
      *out = rc;
      return true;
    }
  }
  errno = EEXIST;
  return true;
}

}  // namespace

namespace kite::rsc {

void AfterRestore(const char* socket, const char* state, const char* sandbox) {
  State& s = S();
  SetText(s.socket_path, socket, sizeof s.socket_path);
  SetText(s.state, state, sizeof s.state);
  SetText(s.sandbox, sandbox, sizeof s.sandbox);
  s.sock = -1;
  s.pid = 0;
  s.pre_stale = true;
  if (s.enabled) s.reopen = true;
}

}  // namespace kite::rsc

extern "C" {

// ---- opening ----

#define MODE_ARG(flags)                               \
  mode_t mode = 0;                                    \
  if ((flags) & (O_CREAT | __O_TMPFILE)) {            \
    va_list ap;                                       \
    va_start(ap, flags);                              \
    mode = static_cast<mode_t>(va_arg(ap, unsigned)); \
    va_end(ap);                                       \
  }

int open(const char* path, int flags, ...) {
  MODE_ARG(flags);
  std::string n;
  if (Remote(path, &n)) return RemoteOpen(n, flags, mode);
  REAL(open);
  return real(path, flags, mode);
}
int open64(const char* path, int flags, ...) {
  MODE_ARG(flags);
  std::string n;
  if (Remote(path, &n)) return RemoteOpen(n, flags, mode);
  REAL(open64);
  return real(path, flags, mode);
}
int openat(int dirfd, const char* path, int flags, ...) {
  MODE_ARG(flags);
  std::string n;
  if (RemoteAt(dirfd, path, &n)) return RemoteOpen(n, flags, mode);
  REAL(openat);
  return real(dirfd, path, flags, mode);
}
int openat64(int dirfd, const char* path, int flags, ...) {
  MODE_ARG(flags);
  std::string n;
  if (RemoteAt(dirfd, path, &n)) return RemoteOpen(n, flags, mode);
  REAL(openat64);
  return real(dirfd, path, flags, mode);
}
int __open_2(const char* path, int flags) {
  return open(path, flags);
}
int __open64_2(const char* path, int flags) {
  return open64(path, flags);
}
int __openat_2(int dirfd, const char* path, int flags) {
  return openat(dirfd, path, flags);
}
int __openat64_2(int dirfd, const char* path, int flags) {
  return openat64(dirfd, path, flags);
}
int creat(const char* path, mode_t mode) {
  return open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}
int creat64(const char* path, mode_t mode) {
  return open64(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

// ---- reading and writing ----

ssize_t read(int fd, void* buf, size_t n) {
  if (auto f = Find(fd)) {
    int64_t o = Tell(fd);
    ssize_t r = RemoteRead(*f, buf, n, &o);
    Seek(fd, o);
    return r;
  }
  REAL(read);
  return real(fd, buf, n);
}
ssize_t write(int fd, const void* buf, size_t n) {
  if (auto f = Find(fd)) {
    int64_t o = Tell(fd);
    ssize_t r = RemoteWrite(*f, buf, n, &o, f->flags & O_APPEND);
    Seek(fd, o);
    return r;
  }
  REAL(write);
  return real(fd, buf, n);
}
ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  if (auto f = Find(fd)) {
    int64_t o = off;
    return RemoteRead(*f, buf, n, &o);
  }
  REAL(pread);
  return real(fd, buf, n, off);
}
ssize_t pread64(int fd, void* buf, size_t n, off64_t off) {
  return pread(fd, buf, n, off);
}
ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  if (auto f = Find(fd)) {
    int64_t o = off;
    return RemoteWrite(*f, buf, n, &o, false);
  }
  REAL(pwrite);
  return real(fd, buf, n, off);
}
ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  return pwrite(fd, buf, n, off);
}
ssize_t readv(int fd, const struct iovec* iov, int cnt) {
  if (!Find(fd)) {
    REAL(readv);
    return real(fd, iov, cnt);
  }
  ssize_t total = 0;
  for (int i = 0; i < cnt; ++i) {
    ssize_t n = read(fd, iov[i].iov_base, iov[i].iov_len);
    if (n < 0) return total ? total : -1;
    total += n;
    if (static_cast<size_t>(n) < iov[i].iov_len) break;
  }
  return total;
}
ssize_t writev(int fd, const struct iovec* iov, int cnt) {
  if (!Find(fd)) {
    REAL(writev);
    return real(fd, iov, cnt);
  }
  ssize_t total = 0;
  for (int i = 0; i < cnt; ++i) {
    ssize_t n = write(fd, iov[i].iov_base, iov[i].iov_len);
    if (n < 0) return total ? total : -1;
    total += n;
  }
  return total;
}
off_t lseek(int fd, off_t off, int whence) {
  auto f = Find(fd);
  if (!f) {
    REAL(lseek);
    return real(fd, off, whence);
  }
  int64_t base = 0;
  if (whence == SEEK_CUR) {
    base = Tell(fd);
  } else if (whence == SEEK_END) {
    kite::rsc::Stat st;
    if (!RemoteStat(Op::kFstat, "", f->handle, &st)) return -1;
    base = static_cast<int64_t>(st.size);
  } else if (whence != SEEK_SET) {
    errno = EINVAL;
    return -1;
  }
  if (base + off < 0) {
    errno = EINVAL;
    return -1;
  }
  Seek(fd, base + off);
  return base + off;
}
off64_t lseek64(int fd, off64_t off, int whence) {
  return lseek(fd, off, whence);
}
int close(int fd) {
  Forget(fd);
  REAL(close);
  return real(fd);
}
ssize_t copy_file_range(int in, off64_t* in_off, int out, off64_t* out_off, size_t len,
                        unsigned flags) {
  if (!Find(in) && !Find(out)) {
    REAL(copy_file_range);
    return real(in, in_off, out, out_off, len, flags);
  }
  // A remote side: a plain copy through a buffer, honouring the offsets given.
  std::string buf(std::min<size_t>(len, 1 << 20), '\0');
  ssize_t n =
      in_off ? pread(in, buf.data(), buf.size(), *in_off) : read(in, buf.data(), buf.size());
  if (n <= 0) return n;
  ssize_t w = out_off ? pwrite(out, buf.data(), static_cast<size_t>(n), *out_off)
                      : write(out, buf.data(), static_cast<size_t>(n));
  if (w < 0) return -1;
  if (in_off) *in_off += w;
  if (out_off) *out_off += w;
  return w;
}
ssize_t sendfile(int out, int in, off_t* offset, size_t count) {
  if (!Find(in) && !Find(out)) {
    REAL(sendfile);
    return real(out, in, offset, count);
  }
  off64_t o = offset ? *offset : 0;
  ssize_t n = copy_file_range(in, offset ? &o : nullptr, out, nullptr, count, 0);
  if (offset && n > 0) *offset = o;
  return n;
}
ssize_t sendfile64(int out, int in, off64_t* offset, size_t count) {
  return sendfile(out, in, offset, count);
}

// ---- what a file is ----

int fstat(int fd, struct stat* st) {
  if (auto f = Find(fd)) {
    kite::rsc::Stat s;
    if (!RemoteStat(Op::kFstat, "", f->handle, &s)) return -1;
    Fill(s, st);
    return 0;
  }
  REAL(fstat);
  return real(fd, st);
}
int fstat64(int fd, struct stat64* st) {
  return fstat(fd, reinterpret_cast<struct stat*>(st));
}
int stat(const char* path, struct stat* st) {
  std::string n;
  if (Remote(path, &n)) {
    kite::rsc::Stat s;
    if (!RemoteStat(Op::kStat, n, 0, &s)) return -1;
    Fill(s, st);
    return 0;
  }
  REAL(stat);
  return real(path, st);
}
int stat64(const char* path, struct stat64* st) {
  return stat(path, reinterpret_cast<struct stat*>(st));
}
int lstat(const char* path, struct stat* st) {
  std::string n;
  if (Remote(path, &n)) {
    kite::rsc::Stat s;
    if (!RemoteStat(Op::kLstat, n, 0, &s)) return -1;
    Fill(s, st);
    return 0;
  }
  REAL(lstat);
  return real(path, st);
}
int lstat64(const char* path, struct stat64* st) {
  return lstat(path, reinterpret_cast<struct stat*>(st));
}
int fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  if ((flags & AT_EMPTY_PATH) && EmptyPath(path)) return fstat(dirfd, st);
  std::string n;
  if (RemoteAt(dirfd, path, &n)) {
    kite::rsc::Stat s;
    if (!RemoteStat(flags & AT_SYMLINK_NOFOLLOW ? Op::kLstat : Op::kStat, n, 0, &s)) return -1;
    Fill(s, st);
    return 0;
  }
  REAL(fstatat);
  return real(dirfd, path, st, flags);
}
int fstatat64(int dirfd, const char* path, struct stat64* st, int flags) {
  return fstatat(dirfd, path, reinterpret_cast<struct stat*>(st), flags);
}
int statx(int dirfd, const char* path, int flags, unsigned mask, struct statx* sx) {
  std::string n;
  std::shared_ptr<File> f;
  bool empty = (flags & AT_EMPTY_PATH) && EmptyPath(path);
  if (empty ? (f = Find(dirfd)) != nullptr : RemoteAt(dirfd, path, &n)) {
    kite::rsc::Stat s;
    Op op = empty ? Op::kFstat : flags & AT_SYMLINK_NOFOLLOW ? Op::kLstat : Op::kStat;
    if (!RemoteStat(op, n, f ? f->handle.load() : 0, &s)) return -1;
    std::memset(sx, 0, sizeof *sx);
    sx->stx_mask = STATX_BASIC_STATS;
    sx->stx_blksize = s.blksize;
    sx->stx_nlink = s.nlink;
    sx->stx_uid = s.uid;
    sx->stx_gid = s.gid;
    sx->stx_mode = static_cast<uint16_t>(s.mode);
    sx->stx_ino = s.ino;
    sx->stx_size = s.size;
    sx->stx_blocks = s.blocks;
    auto ts = [](int64_t ns) {
      return statx_timestamp{ns / 1000000000, static_cast<uint32_t>(ns % 1000000000), 0};
    };
    sx->stx_atime = ts(s.atime_ns);
    sx->stx_mtime = ts(s.mtime_ns);
    sx->stx_ctime = ts(s.ctime_ns);
    sx->stx_dev_major = static_cast<uint32_t>(s.dev >> 8);
    sx->stx_dev_minor = static_cast<uint32_t>(s.dev & 0xff);
    return 0;
  }
  REAL(statx);
  return real(dirfd, path, flags, mask, sx);
}
int access(const char* path, int mode) {
  std::string n;
  if (Remote(path, &n))
    return CallSimple(Op::kAccess, n, 0, static_cast<uint32_t>(mode)) < 0 ? -1 : 0;
  REAL(access);
  return real(path, mode);
}
int faccessat(int dirfd, const char* path, int mode, int flags) {
  std::string n;
  if (RemoteAt(dirfd, path, &n))
    return CallSimple(Op::kAccess, n, 0, static_cast<uint32_t>(mode)) < 0 ? -1 : 0;
  REAL(faccessat);
  return real(dirfd, path, mode, flags);
}
// glibc's own (coreutils' sort asks it of every input) reaches the kernel by internal calls.
int euidaccess(const char* path, int mode) {
  std::string n;
  if (Remote(path, &n))
    return CallSimple(Op::kAccess, n, 0, static_cast<uint32_t>(mode)) < 0 ? -1 : 0;
  REAL(euidaccess);
  return real(path, mode);
}
int eaccess(const char* path, int mode) {
  return euidaccess(path, mode);
}

// ---- changing the file system ----

int unlink(const char* path) {
  std::string n;
  if (Remote(path, &n)) return CallSimple(Op::kUnlink, n) < 0 ? -1 : 0;
  REAL(unlink);
  return real(path);
}
int unlinkat(int dirfd, const char* path, int flags) {
  std::string n;
  if (RemoteAt(dirfd, path, &n))
    return CallSimple(flags & AT_REMOVEDIR ? Op::kRmdir : Op::kUnlink, n) < 0 ? -1 : 0;
  REAL(unlinkat);
  return real(dirfd, path, flags);
}
int rmdir(const char* path) {
  std::string n;
  if (Remote(path, &n)) return CallSimple(Op::kRmdir, n) < 0 ? -1 : 0;
  REAL(rmdir);
  return real(path);
}
int mkdir(const char* path, mode_t mode) {
  std::string n;
  if (Remote(path, &n)) return CallSimple(Op::kMkdir, n, 0, mode) < 0 ? -1 : 0;
  REAL(mkdir);
  return real(path, mode);
}
int mkdirat(int dirfd, const char* path, mode_t mode) {
  std::string n;
  if (RemoteAt(dirfd, path, &n)) return CallSimple(Op::kMkdir, n, 0, mode) < 0 ? -1 : 0;
  REAL(mkdirat);
  return real(dirfd, path, mode);
}
int rename(const char* from, const char* to) {
  std::string a, b;
  bool ra = Remote(from, &a), rb = Remote(to, &b);
  if (ra && rb) return CallSimple(Op::kRename, a, 0, 0, b) < 0 ? -1 : 0;
  if (ra != rb) {
    errno = EXDEV;  // across the remote boundary: as across file systems (mv copies)
    return -1;
  }
  REAL(rename);
  return real(from, to);
}
int renameat(int fromfd, const char* from, int tofd, const char* to) {
  std::string a, b;
  bool ra = RemoteAt(fromfd, from, &a), rb = RemoteAt(tofd, to, &b);
  if (ra && rb) return CallSimple(Op::kRename, a, 0, 0, b) < 0 ? -1 : 0;
  if (ra != rb) {
    errno = EXDEV;
    return -1;
  }
  REAL(renameat);
  return real(fromfd, from, tofd, to);
}
int renameat2(int fromfd, const char* from, int tofd, const char* to, unsigned flags) {
  std::string a, b;
  bool ra = RemoteAt(fromfd, from, &a), rb = RemoteAt(tofd, to, &b);
  if ((ra || rb) && flags != 0) {
    errno = EINVAL;  // RENAME_NOREPLACE and the others: not forwarded; callers fall back
    return -1;
  }
  if (ra && rb) return CallSimple(Op::kRename, a, 0, 0, b) < 0 ? -1 : 0;
  if (ra != rb) {
    errno = EXDEV;
    return -1;
  }
  REAL(renameat2);
  return real(fromfd, from, tofd, to, flags);
}
int truncate(const char* path, off_t size) {
  std::string n;
  if (Remote(path, &n))
    return CallSimple(Op::kTruncate, n, 0, 0, "", static_cast<uint64_t>(size)) < 0 ? -1 : 0;
  REAL(truncate);
  return real(path, size);
}
int truncate64(const char* path, off64_t size) {
  return truncate(path, size);
}
int ftruncate(int fd, off_t size) {
  if (auto f = Find(fd)) {
    Changed(f->path);
    Request req;
    req.op = Op::kFtruncate;
    req.handle = f->handle;
    req.size = static_cast<uint64_t>(size);
    Reply rep;
    return Call(req, &rep) ? 0 : -1;
  }
  REAL(ftruncate);
  return real(fd, size);
}
int ftruncate64(int fd, off64_t size) {
  return ftruncate(fd, size);
}
int fsync(int fd) {
  if (auto f = Find(fd)) {
    Request req;
    req.op = Op::kFsync;
    req.handle = f->handle;
    Reply rep;
    return Call(req, &rep) ? 0 : -1;
  }
  REAL(fsync);
  return real(fd);
}
int fdatasync(int fd) {
  if (Find(fd)) return fsync(fd);
  REAL(fdatasync);
  return real(fd);
}

int chmod(const char* path, mode_t mode) {
  std::string n;
  if (Remote(path, &n)) return Meta(Op::kChmod, n, true, mode & 07777u);
  REAL(chmod);
  return real(path, mode);
}
int lchmod(const char* path, mode_t mode) {
  std::string n;
  if (Remote(path, &n)) return Meta(Op::kChmod, n, false, mode & 07777u);
  REAL(lchmod);
  return real(path, mode);
}
int fchmod(int fd, mode_t mode) {
  if (auto f = Find(fd)) return Meta(Op::kChmod, f->path, true, mode & 07777u);
  REAL(fchmod);
  return real(fd, mode);
}
int fchmodat(int dirfd, const char* path, mode_t mode, int flags) {
  std::string n;
  if (RemoteTarget(dirfd, path, flags & AT_EMPTY_PATH, &n))
    return Meta(Op::kChmod, n, !(flags & AT_SYMLINK_NOFOLLOW), mode & 07777u);
  REAL(fchmodat);
  return real(dirfd, path, mode, flags);
}
int chown(const char* path, uid_t uid, gid_t gid) {
  std::string n;
  if (Remote(path, &n)) return Meta(Op::kChown, n, true, 0, WireId(uid), WireId(gid));
  REAL(chown);
  return real(path, uid, gid);
}
int lchown(const char* path, uid_t uid, gid_t gid) {
  std::string n;
  if (Remote(path, &n)) return Meta(Op::kChown, n, false, 0, WireId(uid), WireId(gid));
  REAL(lchown);
  return real(path, uid, gid);
}
int fchown(int fd, uid_t uid, gid_t gid) {
  if (auto f = Find(fd)) return Meta(Op::kChown, f->path, true, 0, WireId(uid), WireId(gid));
  REAL(fchown);
  return real(fd, uid, gid);
}
int fchownat(int dirfd, const char* path, uid_t uid, gid_t gid, int flags) {
  std::string n;
  if (RemoteTarget(dirfd, path, flags & AT_EMPTY_PATH, &n))
    return Meta(Op::kChown, n, !(flags & AT_SYMLINK_NOFOLLOW), 0, WireId(uid), WireId(gid));
  REAL(fchownat);
  return real(dirfd, path, uid, gid, flags);
}
int utimensat(int dirfd, const char* path, const struct timespec ts[2], int flags) {
  std::string n;
  if (RemoteTarget(dirfd, path, true, &n))
    return Meta(Op::kUtimens, n, !(flags & AT_SYMLINK_NOFOLLOW), 0, 0, 0,
                kite::rsc::EncodeTimes(ts));
  REAL(utimensat);
  return real(dirfd, path, ts, flags);
}
int futimens(int fd, const struct timespec ts[2]) {
  if (auto f = Find(fd))
    return Meta(Op::kUtimens, f->path, true, 0, 0, 0, kite::rsc::EncodeTimes(ts));
  REAL(futimens);
  return real(fd, ts);
}
int utimes(const char* path, const struct timeval tv[2]) {
  std::string n;
  if (Remote(path, &n)) return Meta(Op::kUtimens, n, true, 0, 0, 0, EncodeTimevals(tv));
  REAL(utimes);
  return real(path, tv);
}
int lutimes(const char* path, const struct timeval tv[2]) {
  std::string n;
  if (Remote(path, &n)) return Meta(Op::kUtimens, n, false, 0, 0, 0, EncodeTimevals(tv));
  REAL(lutimes);
  return real(path, tv);
}
int futimes(int fd, const struct timeval tv[2]) {
  if (auto f = Find(fd)) return Meta(Op::kUtimens, f->path, true, 0, 0, 0, EncodeTimevals(tv));
  REAL(futimes);
  return real(fd, tv);
}
int futimesat(int dirfd, const char* path, const struct timeval tv[2]) {
  std::string n;
  if (RemoteTarget(dirfd, path, true, &n))
    return Meta(Op::kUtimens, n, true, 0, 0, 0, EncodeTimevals(tv));
  REAL(futimesat);
  return real(dirfd, path, tv);
}
int utime(const char* path, const struct utimbuf* times) {
  std::string n;
  if (Remote(path, &n)) {
    struct timeval tv[2] = {{times ? times->actime : 0, 0}, {times ? times->modtime : 0, 0}};
    return Meta(Op::kUtimens, n, true, 0, 0, 0, EncodeTimevals(times ? tv : nullptr));
  }
  REAL(utime);
  return real(path, times);
}
int symlinkat(const char* target, int dirfd, const char* path) {
  std::string n;
  if (RemoteAt(dirfd, path, &n)) {
    Changed(n);
    Request req;
    req.op = Op::kSymlink;
    req.path = n;
    req.path2 = target;
    Reply rep;
    return Call(req, &rep) ? 0 : -1;
  }
  REAL(symlinkat);
  return real(target, dirfd, path);
}
int symlink(const char* target, const char* path) {
  return symlinkat(target, AT_FDCWD, path);
}
ssize_t readlinkat(int dirfd, const char* path, char* buf, size_t size) {
  std::string n;
  if (RemoteAt(dirfd, path, &n)) {
    Request req;
    req.op = Op::kReadlink;
    req.path = n;
    Reply rep;
    if (!Call(req, &rep)) return -1;
    size_t len = std::min(size, rep.data.size());
    std::memcpy(buf, rep.data.data(), len);
    return static_cast<ssize_t>(len);
  }
  REAL(readlinkat);
  return real(dirfd, path, buf, size);
}
ssize_t readlink(const char* path, char* buf, size_t size) {
  return readlinkat(AT_FDCWD, path, buf, size);
}
int linkat(int fromfd, const char* from, int tofd, const char* to, int flags) {
  std::string a, b;
  bool ra = RemoteTarget(fromfd, from, flags & AT_EMPTY_PATH, &a), rb = RemoteAt(tofd, to, &b);
  if (ra && rb) {
    if ((flags & AT_SYMLINK_FOLLOW) && !Follow(&a)) return -1;
    Changed(b);
    Request req;
    req.op = Op::kLink;
    req.path = a;
    req.path2 = b;
    Reply rep;
    return Call(req, &rep) ? 0 : -1;
  }
  if (ra != rb) {
    errno = EXDEV;  // across the remote boundary: as across file systems
    return -1;
  }
  REAL(linkat);
  return real(fromfd, from, tofd, to, flags);
}
int link(const char* from, const char* to) {
  return linkat(AT_FDCWD, from, AT_FDCWD, to, 0);
}
int mkostemps(char* tmpl, int suffix, int flags) {
  int fd;
  if (RemoteTemp(tmpl, suffix, flags, false, &fd)) return fd;
  REAL(mkostemps);
  return real(tmpl, suffix, flags);
}
int mkostemps64(char* tmpl, int suffix, int flags) {
  return mkostemps(tmpl, suffix, flags);
}
int mkostemp(char* tmpl, int flags) {
  return mkostemps(tmpl, 0, flags);
}
int mkostemp64(char* tmpl, int flags) {
  return mkostemps(tmpl, 0, flags);
}
int mkstemps(char* tmpl, int suffix) {
  return mkostemps(tmpl, suffix, 0);
}
int mkstemps64(char* tmpl, int suffix) {
  return mkostemps(tmpl, suffix, 0);
}
int mkstemp(char* tmpl) {
  return mkostemps(tmpl, 0, 0);
}
int mkstemp64(char* tmpl) {
  return mkostemps(tmpl, 0, 0);
}
char* mkdtemp(char* tmpl) {
  int rc;
  if (RemoteTemp(tmpl, 0, 0, true, &rc)) return rc == 0 ? tmpl : nullptr;
  REAL(mkdtemp);
  return real(tmpl);
}
// A memory mapping of a remote file is a copy of its bytes, read when it is made: right for the
// mappings programs read through (git's of its config and index, a private one of data), as the
// stand-in's own pages never would be. A shared writable one would not reach the desktop: refused,
// and said.
void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  REAL(mmap);
  auto f = (flags & MAP_ANONYMOUS) ? nullptr : Find(fd);
  if (!f) return real(addr, len, prot, flags, fd, off);
  if ((flags & MAP_SHARED) && (prot & PROT_WRITE)) {
    std::string msg = "kite-rsc: " + f->path +
                      ": a remote file cannot be mapped shared and writable with remote I/O "
                      "through the preloaded library (remote_io_method = preload); through the "
                      "kernel it can\n";
    ::syscall(SYS_write, 2, msg.data(), msg.size());
    errno = ENODEV;
    return MAP_FAILED;
  }
  int copy_flags = (flags & ~(MAP_SHARED | MAP_SHARED_VALIDATE)) | MAP_PRIVATE | MAP_ANONYMOUS;
  void* p = real(addr, len, PROT_READ | PROT_WRITE, copy_flags, -1, 0);
  if (p == MAP_FAILED) return p;
  int64_t at = off;
  if (RemoteRead(*f, p, len, &at) < 0 ||
      (prot != (PROT_READ | PROT_WRITE) && ::mprotect(p, len, prot) != 0)) {
    int e = errno;
    ::munmap(p, len);
    errno = e;
    return MAP_FAILED;
  }
  return p;
}
void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off64_t off) {
  return mmap(addr, len, prot, flags, fd, off);
}
// Extended attributes (and so ACLs) are not forwarded: ENOTSUP for a remote file, as through the
// kernel, so that cp, sed -i and tar keep to the mode -- never the stand-in's own.
ssize_t getxattr(const char* path, const char* name, void* value, size_t size) {
  std::string n;
  if (Remote(path, &n)) return NoXattr();
  REAL(getxattr);
  return real(path, name, value, size);
}
ssize_t lgetxattr(const char* path, const char* name, void* value, size_t size) {
  std::string n;
  if (Remote(path, &n)) return NoXattr();
  REAL(lgetxattr);
  return real(path, name, value, size);
}
ssize_t fgetxattr(int fd, const char* name, void* value, size_t size) {
  if (Find(fd)) return NoXattr();
  REAL(fgetxattr);
  return real(fd, name, value, size);
}
int setxattr(const char* path, const char* name, const void* value, size_t size, int flags) {
  std::string n;
  if (Remote(path, &n)) return NoXattr();
  REAL(setxattr);
  return real(path, name, value, size, flags);
}
int lsetxattr(const char* path, const char* name, const void* value, size_t size, int flags) {
  std::string n;
  if (Remote(path, &n)) return NoXattr();
  REAL(lsetxattr);
  return real(path, name, value, size, flags);
}
int fsetxattr(int fd, const char* name, const void* value, size_t size, int flags) {
  if (Find(fd)) return NoXattr();
  REAL(fsetxattr);
  return real(fd, name, value, size, flags);
}
ssize_t listxattr(const char* path, char* list, size_t size) {
  std::string n;
  if (Remote(path, &n)) return NoXattr();
  REAL(listxattr);
  return real(path, list, size);
}
ssize_t llistxattr(const char* path, char* list, size_t size) {
  std::string n;
  if (Remote(path, &n)) return NoXattr();
  REAL(llistxattr);
  return real(path, list, size);
}
ssize_t flistxattr(int fd, char* list, size_t size) {
  if (Find(fd)) return NoXattr();
  REAL(flistxattr);
  return real(fd, list, size);
}
int removexattr(const char* path, const char* name) {
  std::string n;
  if (Remote(path, &n)) return NoXattr();
  REAL(removexattr);
  return real(path, name);
}
int lremovexattr(const char* path, const char* name) {
  std::string n;
  if (Remote(path, &n)) return NoXattr();
  REAL(lremovexattr);
  return real(path, name);
}
int fremovexattr(int fd, const char* name) {
  if (Find(fd)) return NoXattr();
  REAL(fremovexattr);
  return real(fd, name);
}
int chdir(const char* path) {
  std::string n;
  if (Remote(path, &n)) {
    int rc = ChdirRemote(n);
    if (rc <= 0) return rc;
  }
  REAL(chdir);
  return real(path);
}
int fchdir(int fd) {
  if (auto f = Find(fd)) {
    int rc = ChdirRemote(f->path);
    if (rc <= 0) return rc;
    errno = ENOTDIR;
    return -1;
  }
  REAL(fchdir);
  return real(fd);
}
// Copies by reflink between stand-ins would copy the stand-ins: the program falls back to
// reading and writing, which are sent.
int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  if ((request == FICLONE || request == FICLONERANGE || request == FIDEDUPERANGE) &&
      (Find(fd) ||
       (request == FICLONE && Find(static_cast<int>(reinterpret_cast<intptr_t>(arg)))) ||
       (request == FICLONERANGE && arg &&
        Find(static_cast<int>(static_cast<struct file_clone_range*>(arg)->src_fd))))) {
    errno = EOPNOTSUPP;
    return -1;
  }
  REAL(ioctl);
  return real(fd, request, arg);
}

// ---- descriptors ----

int dup(int fd) {
  REAL(dup);
  int n = real(fd);
  if (n >= 0) {
    if (auto f = Find(fd)) Bind(n, f);
  }
  return n;
}
int dup2(int fd, int to) {
  if (fd == to) {
    REAL(dup2);
    return real(fd, to);
  }
  Forget(to);
  REAL(dup2);
  int n = real(fd, to);
  if (n >= 0) {
    if (auto f = Find(fd)) Bind(n, f);
  }
  return n;
}
int dup3(int fd, int to, int flags) {
  if (fd != to) Forget(to);
  REAL(dup3);
  int n = real(fd, to, flags);
  if (n >= 0) {
    if (auto f = Find(fd)) Bind(n, f);
  }
  return n;
}
int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  long arg = va_arg(ap, long);
  va_end(ap);
  auto f = Find(fd);
  if (f) {
    switch (cmd) {
      case F_GETFL:
        return f->flags & ~O_CLOEXEC;
      case F_SETFL:
        f->flags = (f->flags & ~O_APPEND) | (static_cast<int>(arg) & O_APPEND);
        return 0;
      case F_SETLK:
      case F_SETLKW:
      case F_GETLK:
      case F_OFD_SETLK:
      case F_OFD_SETLKW:
      case F_OFD_GETLK:
        return 0;  // locks of a remote file are not forwarded (docs/remote-io.md)
      default:
        break;
    }
  }
  REAL(fcntl);
  int n = real(fd, cmd, arg);
  if (f && n >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)) Bind(n, f);
  return n;
}
int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  long arg = va_arg(ap, long);
  va_end(ap);
  return fcntl(fd, cmd, arg);
}

// ---- stdio ----

FILE* fopen(const char* path, const char* mode) {
  std::string n;
  if (Remote(path, &n)) {
    int flags = ModeFlags(mode);
    if (flags < 0) {
      errno = EINVAL;
      return nullptr;
    }
    int fd = RemoteOpen(n, flags, 0666);
    if (fd < 0) return nullptr;
    FILE* f = CookieFile(fd, mode);
    if (!f) close(fd);
    return f;
  }
  REAL(fopen);
  return real(path, mode);
}
FILE* fopen64(const char* path, const char* mode) {
  return fopen(path, mode);
}
int fileno(FILE* f) {
  if (int fd = CookieFd(f); fd >= 0) return fd;
  REAL(fileno);
  return real(f);
}
int fileno_unlocked(FILE* f) {
  if (int fd = CookieFd(f); fd >= 0) return fd;
  REAL(fileno_unlocked);
  return real(f);
}
FILE* fdopen(int fd, const char* mode) {
  if (Find(fd)) return CookieFile(fd, mode);
  REAL(fdopen);
  return real(fd, mode);
}
// freopen onto a remote file: for the standard streams (what it is nearly always used for), the
// remote file takes descriptor 0, 1 or 2 and `stdin`/`stdout`/`stderr` become a stream over it,
// which is what is returned; the old stream is left open on nothing the program sees. Another
// stream cannot be made remote in place (glibc's stream would go on writing with its internal
// calls): refused with ENOTSUP, said on standard error.
FILE* freopen(const char* path, const char* mode, FILE* stream) {
  std::string n;
  if (Remote(path, &n)) {
    FILE** std_stream = stream == stdin    ? &stdin
                        : stream == stdout ? &stdout
                        : stream == stderr ? &stderr
                                           : nullptr;
    int flags = ModeFlags(mode);
    if (!std_stream || flags < 0) {
      static const char kMsg[] =
          "kite-rsc: freopen of a remote file onto a stream other than stdin, stdout or stderr is "
          "not supported\n";
      ::syscall(SYS_write, 2, kMsg, sizeof kMsg - 1);
      errno = flags < 0 ? EINVAL : ENOTSUP;
      return nullptr;
    }
    int target = std_stream == &stdin ? 0 : std_stream == &stdout ? 1 : 2;
    ::fflush(stream);
    int fd = RemoteOpen(n, flags, 0666);
    if (fd < 0) return nullptr;
    if (fd != target) {
      if (dup2(fd, target) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return nullptr;
      }
      close(fd);
    }
    FILE* f = CookieFile(target, mode);
    if (!f) return nullptr;
    if (target == 2) ::setvbuf(f, nullptr, _IONBF, 0);
    *std_stream = f;
    return f;
  }
  REAL(freopen);
  return real(path, mode, stream);
}
FILE* freopen64(const char* path, const char* mode, FILE* stream) {
  return freopen(path, mode, stream);
}

// ---- folders ----

DIR* opendir(const char* path) {
  std::string n;
  if (Remote(path, &n)) {
    int fd = RemoteOpen(n, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    return fd < 0 ? nullptr : NewDir(fd);
  }
  REAL(opendir);
  return real(path);
}
DIR* fdopendir(int fd) {
  if (Find(fd)) return NewDir(fd);
  REAL(fdopendir);
  return real(fd);
}
struct dirent* readdir(DIR* dir) {
  RemoteDir* d = OurDir(dir);
  if (!d) {
    REAL(readdir);
    return real(dir);
  }
  if (!d->loaded) {
    d->loaded = true;
    auto f = Find(d->fd);
    while (f) {
      Request req;
      req.op = Op::kReaddir;
      req.handle = f->handle;
      req.offset = static_cast<int64_t>(d->names.size());
      Reply rep;
      if (!Call(req, &rep) || rep.result == 0) break;
      auto names = kite::rsc::DecodeNames(rep.data);
      if (!names || names->empty()) break;  // a reply that lists nothing more ends the listing
      d->names.insert(d->names.end(), names->begin(), names->end());
    }
  }
  if (d->pos >= d->names.size()) return nullptr;
  const std::string& name = d->names[d->pos++];
  std::memset(&d->entry, 0, sizeof d->entry);
  d->entry.d_ino = d->pos;
  d->entry.d_off = static_cast<off_t>(d->pos);
  d->entry.d_reclen = sizeof d->entry;
  d->entry.d_type = DT_UNKNOWN;
  std::snprintf(d->entry.d_name, sizeof d->entry.d_name, "%s", name.c_str());
  return &d->entry;
}
struct dirent64* readdir64(DIR* dir) {
  return reinterpret_cast<struct dirent64*>(readdir(dir));
}
int closedir(DIR* dir) {
  RemoteDir* d = OurDir(dir);
  if (!d) {
    REAL(closedir);
    return real(dir);
  }
  {
    std::lock_guard<std::mutex> lock(DirsMu());
    Dirs().erase(d);
    DirCount() = Dirs().size();
  }
  int rc = close(d->fd);
  delete d;
  return rc;
}
int dirfd(DIR* dir) {
  if (RemoteDir* d = OurDir(dir)) return d->fd;
  REAL(dirfd);
  return real(dir);
}
void rewinddir(DIR* dir) {
  if (RemoteDir* d = OurDir(dir)) {
    d->pos = 0;
    return;
  }
  REAL(rewinddir);
  real(dir);
}

// ---- process ids after a restore of a process tree (docs/checkpoints.md) ----
// The ids the programs knew before the restore stay theirs: a shell's table of its children, $$.

pid_t getpid(void) {
  long real = ::syscall(SYS_getpid);
  return static_cast<pid_t>(kite::rsc::ckpt::Renamed() ? kite::rsc::ckpt::KnownPid(real) : real);
}
pid_t getppid(void) {
  long real = ::syscall(SYS_getppid);
  return static_cast<pid_t>(kite::rsc::ckpt::Renamed() ? kite::rsc::ckpt::KnownPid(real) : real);
}
}  // extern "C"

namespace {
// A process or group id from the programs' names to this run's.
pid_t ToReal(pid_t pid) {
  if (!kite::rsc::ckpt::Renamed()) return pid;
  if (pid > 0) return static_cast<pid_t>(kite::rsc::ckpt::RealPid(pid));
  if (pid < -1) return static_cast<pid_t>(-kite::rsc::ckpt::RealPid(-pid));
  return pid;
}
pid_t ToKnown(pid_t pid) {
  return pid > 0 && kite::rsc::ckpt::Renamed() ? static_cast<pid_t>(kite::rsc::ckpt::KnownPid(pid))
                                               : pid;
}
}  // namespace

extern "C" {

pid_t wait4(pid_t pid, int* status, int options, struct rusage* usage) {
  REAL(wait4);
  return ToKnown(real(ToReal(pid), status, options, usage));
}
pid_t wait3(int* status, int options, struct rusage* usage) {
  return wait4(-1, status, options, usage);
}
pid_t waitpid(pid_t pid, int* status, int options) {
  REAL(waitpid);
  return ToKnown(real(ToReal(pid), status, options));
}
pid_t wait(int* status) {
  return waitpid(-1, status, 0);
}
int waitid(idtype_t type, id_t id, siginfo_t* info, int options) {
  REAL(waitid);
  if (type == P_PID || type == P_PGID) id = static_cast<id_t>(ToReal(static_cast<pid_t>(id)));
  int rc = real(type, id, info, options);
  if (rc == 0 && info) info->si_pid = ToKnown(info->si_pid);
  return rc;
}
int kill(pid_t pid, int sig) {
  REAL(kill);
  return real(ToReal(pid), sig);
}
int execve(const char* path, char* const argv[], char* const envp[]) {
  REAL(execve);
  if (!kite::rsc::ckpt::Renamed()) return real(path, argv, envp);
  std::vector<std::string> env = kite::rsc::ckpt::EnvironmentFor(envp);
  std::vector<char*> ptrs;
  for (auto& e : env) ptrs.push_back(e.data());
  ptrs.push_back(nullptr);
  return real(path, argv, ptrs.data());
}

}  // extern "C"
