// kite-rsc-fuse: a job's remote paths as a FUSE file system (docs/remote-io.md, "Through the
// kernel"). kite-exec opens /dev/fuse, starts this program with that descriptor, and mounts it in
// the job's own mount namespace; each request the kernel makes is sent as a remote system call
// (rsc/wire.h) on one channel of the starter's socket, exactly as the preloaded library's are, so
// the shadow confines and answers them the same way. Every program then gets the kernel's
// semantics: shell builtins, static programs, `mkdir -p`.
//
//   kite-rsc-fuse --fd N [--mounted N] --socket PATH --roots R1:R2... [--keep DIR] [--log FILE]
//   kite-rsc-fuse --version
//
// `--mounted`: a descriptor to read one byte from before serving: the device cannot be read until
// the job has mounted it. Its end without a byte: the job never did, and this program leaves.
//
// The tree it serves is the desktop's from "/": a path inside a root is the desktop's (through the
// shadow); "/" and each folder on the way to a root are folders of this program's own, listing the
// next step towards the roots only; anything else does not exist. The job's sandbox (`--keep`),
// when it lies inside a root, is put back over the mounted tree by kite-exec: the folders on the
// way to it are the desktop's where it has them, else this program's own, so that it can be.
// Requests are served by a few threads, each with its own channel to the starter, so the kernel's
// read-ahead and the job's processes have several calls on their way at once. A call made while
// no agent runs waits,
// as on a hung NFS mount, until the starter sends it again. Ends when the kernel ends the file
// system (the last process of the job's namespace is gone).
#define FUSE_USE_VERSION 35
#include <fcntl.h>
#include <fuse.h>
#include <malloc.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "rsc/paths.h"
#include "rsc/wire.h"

namespace {

using kite::rsc::Op;
using kite::rsc::Reply;
using kite::rsc::Request;

struct Open {
  std::mutex reopen;  // one thread opens it again at a new shadow; the others wait for that
  int64_t handle = 0;
  std::string path;
  int flags = 0;
  // O_APPEND: where the file ended after this open's last append (or at the open), as the shadow
  // said; -1: not known.
  int64_t append_end = -1;
  // Write-behind: small writes that follow one another are sent as one request (a shell loop's
  // `echo`s into one redirection, a program's unbuffered lines), under `wmu`. Sent before any
  // other call of the file system is made, on close (flush), fsync, and when `pending_since` is
  // kFlushAfter old; a failure is returned by this open's next write, flush or fsync.
  std::mutex wmu;
  std::string pending;
  int64_t pending_at = 0;  // the offset of `pending` (ignored for O_APPEND)
  std::chrono::steady_clock::time_point pending_since;
  int write_error = 0;
};

struct Server {
  std::string socket_path;
  std::vector<std::string> roots;
  std::string keep;  // the job's sandbox, when inside a root ("": none)
  // Request numbers, unique across the threads' channels (the shadow answers a repeated number
  // from its last reply); they start at random, as the library's do.
  std::atomic<uint64_t> seq{0};
  std::mutex mu;  // opens, and each Open's handle and append_end
  std::map<uint64_t, std::shared_ptr<Open>> opens;
  uint64_t next_open = 1;
  std::atomic<int> pending{0};  // opens with writes not sent yet
};

// Writes kept back at most this long (what the desktop sees of a running job's output lags by
// no more), and at most kMaxData of them per open.
constexpr auto kFlushAfter = std::chrono::milliseconds(200);
// Writes this large go at once.
constexpr size_t kWriteBehindBelow = 64 * 1024;

Server g;
thread_local int t_sock = -1;  // this thread's channel

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// The starter's socket; a path too long for a socket address (a deep glide-in sandbox) is reached
// through its folder, opened here.
bool Connect() {
  if (t_sock >= 0) return true;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  std::string path = g.socket_path;
  int dir = -1;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path) {
    size_t slash = path.rfind('/');
    dir = ::open(path.substr(0, slash).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) path = "/proc/self/fd/" + std::to_string(dir) + path.substr(slash);
  }
  bool ok = path.size() < sizeof a.sun_path;
  if (ok) {
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  if (dir >= 0) ::close(dir);
  if (!ok) {
    ::close(fd);
    return false;
  }
  t_sock = fd;
  return true;
}

// One call through the starter; a lost channel is opened again and the call sent again with the
// same number (the shadow answers a repeated number from its last reply). EIO when the starter is
// gone for good.
Reply Call(Request req) {
  req.seq = ++g.seq;
  std::string body = kite::rsc::Encode(req);
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (!Connect()) {
      ::usleep(100 * 1000);
      continue;
    }
    uint32_t len = static_cast<uint32_t>(body.size());
    char head[4];
    for (int i = 0; i < 4; ++i) head[i] = static_cast<char>((len >> (8 * i)) & 0xff);
    uint32_t rlen = 0;
    char rhead[4];
    if (WriteAll(t_sock, head, 4) && WriteAll(t_sock, body.data(), body.size()) &&
        ReadAll(t_sock, rhead, 4)) {
      for (int i = 0; i < 4; ++i)
        rlen |= static_cast<uint32_t>(static_cast<unsigned char>(rhead[i])) << (8 * i);
      if (rlen <= kite::rsc::kReplyFixed + kite::rsc::kMaxData) {
        std::string in(rlen, '\0');
        if (ReadAll(t_sock, in.data(), rlen)) {
          auto rep = kite::rsc::DecodeReply(in);
          if (rep && rep->seq == req.seq) return *rep;
        }
      }
    }
    ::close(t_sock);
    t_sock = -1;
  }
  return Reply{.seq = req.seq, .result = -1, .error = EIO};
}

// What a path of the mounted tree is.
enum class Kind { kRemote, kWay, kNone };

Kind KindOf(const std::string& path) {
  bool way = path == "/";
  for (const auto& r : g.roots) {
    if (kite::rsc::PathUnder(path, r)) return Kind::kRemote;
    if (kite::rsc::PathUnder(r, path)) way = true;
  }
  return way ? Kind::kWay : Kind::kNone;
}

void ToStat(const kite::rsc::Stat& s, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_dev = s.dev;
  st->st_ino = s.ino;
  st->st_mode = s.mode;
  st->st_nlink = s.nlink;
  st->st_uid = s.uid;
  st->st_gid = s.gid;
  st->st_size = static_cast<off_t>(s.size);
  st->st_blocks = static_cast<blkcnt_t>(s.blocks);
  st->st_blksize = static_cast<blksize_t>(s.blksize);
  auto ts = [](int64_t ns) {
    struct timespec t;
    t.tv_sec = ns / 1000000000;
    t.tv_nsec = ns % 1000000000;
    return t;
  };
  st->st_atim = ts(s.atime_ns);
  st->st_mtim = ts(s.mtime_ns);
  st->st_ctim = ts(s.ctime_ns);
}

int Result(const Reply& r) {
  return r.error ? -r.error : static_cast<int>(r.result);
}

// After an append: where the file now ends, as the shadow says.
Reply Appended(Open* o, const Request& req, Reply rep) {
  if (req.op == Op::kAppend && !rep.error && rep.data.size() == 8) {
    std::lock_guard<std::mutex> lock(g.mu);
    o->append_end = static_cast<int64_t>(kite::rsc::wire::Get(rep.data, 0, 8));
  }
  return rep;
}

// A call on an open file; a handle the agent does not know (a new agent's shadow: ESTALE) is
// opened again by its path, never created or emptied, and the call asked once more.
Reply OnHandle(uint64_t fh, Request req) {
  Open* o = nullptr;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    auto it = g.opens.find(fh);
    if (it == g.opens.end()) return Reply{.result = -1, .error = EBADF};
    o = it->second.get();
    req.handle = o->handle;
  }
  Reply rep = Call(req);
  if (rep.error != ESTALE) return Appended(o, req, rep);
  std::lock_guard<std::mutex> once(o->reopen);
  int64_t stale = req.handle, append_end = -1;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    req.handle = o->handle;
    append_end = o->append_end;
  }
  if (req.handle == stale) {  // not opened again by another thread meanwhile
    Request again{
        .op = Op::kOpen, .flags = o->flags & ~(O_CREAT | O_EXCL | O_TRUNC), .path = o->path};
    Reply opened = Call(again);
    if (opened.error) return rep;
    std::lock_guard<std::mutex> lock(g.mu);
    o->handle = req.handle = opened.result;
  }
  // An append the old agent did without living to answer is not done again: its bytes are where
  // this open's last append ended.
  if (req.op == Op::kAppend && append_end >= 0) {
    Reply there = Call(Request{
        .op = Op::kPread, .handle = req.handle, .offset = append_end, .size = req.data.size()});
    if (!there.error && there.data == req.data) {
      std::lock_guard<std::mutex> lock(g.mu);
      o->append_end = append_end + static_cast<int64_t>(req.data.size());
      return Reply{.seq = req.seq, .result = static_cast<int64_t>(req.data.size())};
    }
  }
  return Appended(o, req, Call(req));
}

// A file the shadow opened (its reply `opened`), given a number of this program's.
uint64_t Remember(const Reply& opened, const char* path, int flags) {
  auto o = std::make_shared<Open>();
  o->handle = opened.result;
  o->path = path;
  o->flags = flags;
  if (flags & O_APPEND) {
    if (opened.data.size() == 8) {
      o->append_end = static_cast<int64_t>(kite::rsc::wire::Get(opened.data, 0, 8));
    } else {  // an agent from before the size came with the open
      Reply st = Call(Request{.op = Op::kFstat, .handle = opened.result});
      if (auto s = kite::rsc::DecodeStat(st.data); !st.error && s)
        o->append_end = static_cast<int64_t>(s->size);
    }
  }
  std::lock_guard<std::mutex> lock(g.mu);
  uint64_t id = g.next_open++;
  g.opens[id] = std::move(o);
  return id;
}

void Forget(uint64_t fh) {
  std::lock_guard<std::mutex> lock(g.mu);
  g.opens.erase(fh);
}

Open* Find(uint64_t fh) {
  std::lock_guard<std::mutex> lock(g.mu);
  auto it = g.opens.find(fh);
  return it == g.opens.end() ? nullptr : it->second.get();
}

// Sends what open `fh` kept back (under its `wmu`); a failure is kept for its next write, flush or
// fsync.
void SendPendingLocked(uint64_t fh, Open& o) {
  if (o.pending.empty()) return;
  std::string data = std::move(o.pending);
  o.pending.clear();
  bool append = o.flags & O_APPEND;
  for (size_t done = 0; done < data.size();) {
    Reply r = OnHandle(fh, Request{.op = append ? Op::kAppend : Op::kPwrite,
                                   .offset = o.pending_at + static_cast<int64_t>(done),
                                   .data = data.substr(done)});
    if (r.error || r.result <= 0) {
      o.write_error = r.error ? r.error : EIO;
      break;
    }
    done += static_cast<size_t>(r.result);
  }
  // Only now: a call that settles meanwhile waits for this one (on `wmu`) rather than passing it.
  --g.pending;
}

// What was kept back, sent: of every open but `except` (0: all), or of those kept back since
// before `older` only. Before any call that may see or change what they write.
void Settle(uint64_t except = 0, std::chrono::steady_clock::time_point older =
                                     std::chrono::steady_clock::time_point::max()) {
  if (g.pending.load() == 0) return;
  std::vector<std::pair<uint64_t, std::shared_ptr<Open>>> held;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    for (auto& [id, o] : g.opens)
      if (id != except) held.emplace_back(id, o);
  }
  for (auto& [id, o] : held) {
    std::lock_guard<std::mutex> lock(o->wmu);
    if (!o->pending.empty() && o->pending_since < older) SendPendingLocked(id, *o);
  }
}

// A failure of a write kept back, once.
int TakeWriteError(Open& o) {
  int e = o.write_error;
  o.write_error = 0;
  return e;
}

int DoGetattr(const char* path, struct stat* st, fuse_file_info* fi) {
  Settle();
  switch (KindOf(path)) {
    case Kind::kNone:
      return -ENOENT;
    case Kind::kWay:
      std::memset(st, 0, sizeof *st);
      st->st_mode = S_IFDIR | 0555;
      st->st_nlink = 2;
      st->st_uid = ::getuid();
      st->st_gid = ::getgid();
      return 0;
    case Kind::kRemote:
      break;
  }
  Reply r = fi ? OnHandle(fi->fh, Request{.op = Op::kFstat})
               : Call(Request{.op = Op::kLstat, .path = path});
  if (r.error == ENOENT && !fi && !g.keep.empty() && kite::rsc::PathUnder(g.keep, path)) {
    std::memset(st, 0, sizeof *st);  // on the way to the sandbox, which is mounted over it
    st->st_mode = S_IFDIR | 0555;
    st->st_nlink = 2;
    st->st_uid = ::getuid();
    st->st_gid = ::getgid();
    return 0;
  }
  if (r.error) return -r.error;
  auto s = kite::rsc::DecodeStat(r.data);
  if (!s) return -EIO;
  ToStat(*s, st);
  return 0;
}

int DoAccess(const char* path, int mode) {
  Settle();
  Kind k = KindOf(path);
  if (k == Kind::kNone) return -ENOENT;
  if (k == Kind::kWay) return (mode & W_OK) ? -EACCES : 0;
  return Result(
      Call(Request{.op = Op::kAccess, .mode = static_cast<uint32_t>(mode), .path = path}));
}

// Calls that change the tree are only for paths inside the roots.
int Changes(const char* path) {
  Kind k = KindOf(path);
  return k == Kind::kRemote ? 0 : k == Kind::kWay ? -EACCES : -ENOENT;
}

int DoOpen(const char* path, fuse_file_info* fi) {
  Settle();
  if (int e = Changes(path)) return e;
  int flags = fi->flags & ~O_CLOEXEC;
  Reply r = Call(Request{.op = Op::kOpen, .flags = flags, .path = path});
  if (r.error) return -r.error;
  fi->fh = Remember(r, path, flags);
  return 0;
}

int DoCreate(const char* path, mode_t mode, fuse_file_info* fi) {
  Settle();
  if (int e = Changes(path)) return e;
  int flags = (fi->flags & ~O_CLOEXEC) | O_CREAT;
  Reply r = Call(Request{.op = Op::kOpen, .flags = flags, .mode = mode, .path = path});
  if (r.error) return -r.error;
  fi->fh = Remember(r, path, flags);
  return 0;
}

int DoRead(const char*, char* buf, size_t size, off_t off, fuse_file_info* fi) {
  Settle();
  size_t done = 0;
  while (done < size) {
    size_t n = std::min(size - done, kite::rsc::kMaxData);
    Reply r = OnHandle(
        fi->fh, Request{.op = Op::kPread, .offset = static_cast<int64_t>(off + done), .size = n});
    if (r.error) return done ? static_cast<int>(done) : -r.error;
    if (r.data.size() > n) return -EIO;
    std::memcpy(buf + done, r.data.data(), r.data.size());
    done += r.data.size();
    if (r.data.size() < n) break;
  }
  return static_cast<int>(done);
}

int DoWrite(const char*, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
  Settle(fi->fh);
  Open* o = Find(fi->fh);
  if (!o) return -EBADF;
  std::lock_guard<std::mutex> lock(o->wmu);
  if (int e = TakeWriteError(*o)) return -e;
  bool append = o->flags & O_APPEND;
  bool keep = size < kWriteBehindBelow;
  bool follows = append || off == o->pending_at + static_cast<off_t>(o->pending.size());
  // What was kept back goes first when this write is not kept with it.
  if (!o->pending.empty() &&
      (!keep || !follows || o->pending.size() + size > kite::rsc::kMaxData)) {
    SendPendingLocked(fi->fh, *o);
    if (int e = TakeWriteError(*o)) return -e;
  }
  if (keep) {
    if (o->pending.empty()) {
      o->pending_at = off;
      o->pending_since = std::chrono::steady_clock::now();
      ++g.pending;
    }
    o->pending.append(buf, size);
    return static_cast<int>(size);
  }
  size_t done = 0;
  while (done < size) {
    size_t n = std::min(size - done, kite::rsc::kMaxData);
    Request req{.op = append ? Op::kAppend : Op::kPwrite,
                .offset = static_cast<int64_t>(off + done),
                .data = std::string(buf + done, n)};
    Reply r = OnHandle(fi->fh, req);
    if (r.error) return done ? static_cast<int>(done) : -r.error;
    if (r.result <= 0) break;
    done += static_cast<size_t>(r.result);
  }
  return static_cast<int>(done);
}

// close(2) of a descriptor: what it kept back is sent, and a failure said there.
int DoFlush(const char*, fuse_file_info* fi) {
  Open* o = Find(fi->fh);
  if (!o) return 0;
  std::lock_guard<std::mutex> lock(o->wmu);
  SendPendingLocked(fi->fh, *o);
  return -TakeWriteError(*o);
}

int DoTruncate(const char* path, off_t size, fuse_file_info* fi) {
  Settle();
  if (fi)
    return Result(
        OnHandle(fi->fh, Request{.op = Op::kFtruncate, .size = static_cast<uint64_t>(size)}));
  if (int e = Changes(path)) return e;
  return Result(
      Call(Request{.op = Op::kTruncate, .size = static_cast<uint64_t>(size), .path = path}));
}

int DoRelease(const char*, fuse_file_info* fi) {
  Settle();
  OnHandle(fi->fh, Request{.op = Op::kClose});
  Forget(fi->fh);
  return 0;
}

int DoFsync(const char*, int, fuse_file_info* fi) {
  Settle();
  if (Open* o = Find(fi->fh)) {
    std::lock_guard<std::mutex> lock(o->wmu);
    if (int e = TakeWriteError(*o)) return -e;
  }
  return Result(OnHandle(fi->fh, Request{.op = Op::kFsync}));
}

int DoMkdir(const char* path, mode_t mode) {
  Settle();
  if (int e = Changes(path)) return KindOf(path) == Kind::kWay ? -EEXIST : e;
  return Result(Call(Request{.op = Op::kMkdir, .mode = mode, .path = path}));
}

int DoUnlink(const char* path) {
  Settle();
  if (int e = Changes(path)) return e;
  return Result(Call(Request{.op = Op::kUnlink, .path = path}));
}

int DoRmdir(const char* path) {
  Settle();
  if (int e = Changes(path)) return e;
  return Result(Call(Request{.op = Op::kRmdir, .path = path}));
}

int DoRename(const char* from, const char* to, unsigned int flags) {
  Settle();
  if (flags) return -EINVAL;  // RENAME_NOREPLACE, _EXCHANGE: mv then does without
  if (int e = Changes(from)) return e;
  if (int e = Changes(to)) return e;
  Reply r = Call(Request{.op = Op::kRename, .path = from, .path2 = to});
  if (r.error) return -r.error;
  // Files open under the old name keep their place: a new shadow opens them by the new one.
  std::string old_name = from, new_name = to;
  std::lock_guard<std::mutex> lock(g.mu);
  for (auto& [id, o] : g.opens) {
    if (o->path == old_name)
      o->path = new_name;
    else if (kite::rsc::PathUnder(o->path, old_name))
      o->path = new_name + o->path.substr(old_name.size());
  }
  return 0;
}

int DoOpendir(const char* path, fuse_file_info* fi) {
  Settle();
  Kind k = KindOf(path);
  if (k == Kind::kNone) return -ENOENT;
  if (k == Kind::kWay) {
    fi->fh = 0;
    return 0;
  }
  int flags = O_RDONLY | O_DIRECTORY;
  Reply r = Call(Request{.op = Op::kOpen, .flags = flags, .path = path});
  if (r.error) return -r.error;
  fi->fh = Remember(r, path, flags);
  return 0;
}

int DoReaddir(const char* path, void* buf, fuse_fill_dir_t fill, off_t, fuse_file_info* fi,
              fuse_readdir_flags) {
  Settle();
  if (fi->fh == 0) {
    // A folder on the way to the roots: its next step towards each.
    std::set<std::string> names{".", ".."};
    std::string p = path;
    for (const auto& r : g.roots) {
      if (r == p || !kite::rsc::PathUnder(r, p)) continue;
      size_t from = p == "/" ? 1 : p.size() + 1;
      names.insert(r.substr(from, r.find('/', from) - from));
    }
    for (const auto& n : names)
      fill(buf, n.c_str(), nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
    return 0;
  }
  int64_t skip = 0;
  for (;;) {
    Reply r = OnHandle(fi->fh, Request{.op = Op::kReaddir, .offset = skip});
    if (r.error) return -r.error;
    if (r.result <= 0) break;
    auto names = kite::rsc::DecodeNames(r.data);
    if (!names) return -EIO;
    for (const auto& n : *names)
      fill(buf, n.c_str(), nullptr, 0, static_cast<fuse_fill_dir_flags>(0));
    skip += r.result;
  }
  return 0;
}

int DoReleasedir(const char*, fuse_file_info* fi) {
  if (fi->fh == 0) return 0;
  return DoRelease(nullptr, fi);
}

int DoStatfs(const char*, struct statvfs* st) {
  std::memset(st, 0, sizeof *st);
  st->f_bsize = st->f_frsize = 4096;
  st->f_blocks = st->f_bfree = st->f_bavail = uint64_t{1} << 30;
  st->f_files = st->f_ffree = uint64_t{1} << 24;
  st->f_namemax = 255;
  return 0;
}

int DoChmod(const char* path, mode_t mode, fuse_file_info*) {
  Settle();
  if (int e = Changes(path)) return e;
  return Result(Call(Request{.op = Op::kChmod, .mode = mode & 07777u, .path = path}));
}

int DoChown(const char* path, uid_t uid, gid_t gid, fuse_file_info*) {
  Settle();
  if (int e = Changes(path)) return e;
  return Result(Call(Request{.op = Op::kChown,
                             .handle = kite::rsc::WireId(gid),
                             .offset = kite::rsc::WireId(uid),
                             .path = path}));
}

int DoUtimens(const char* path, const struct timespec tv[2], fuse_file_info*) {
  Settle();
  if (int e = Changes(path)) return e;
  return Result(
      Call(Request{.op = Op::kUtimens, .path = path, .data = kite::rsc::EncodeTimes(tv)}));
}

int DoSymlink(const char* target, const char* link) {
  Settle();
  if (int e = Changes(link)) return e;
  return Result(Call(Request{.op = Op::kSymlink, .path = link, .path2 = target}));
}

int DoLink(const char* from, const char* to) {
  Settle();
  if (int e = Changes(from)) return e;
  if (int e = Changes(to)) return e;
  return Result(Call(Request{.op = Op::kLink, .path = from, .path2 = to}));
}

int DoReadlink(const char* path, char* buf, size_t size) {
  Settle();
  if (int e = Changes(path)) return e;
  Reply r = Call(Request{.op = Op::kReadlink, .path = path});
  if (r.error) return -r.error;
  if (size == 0) return -EINVAL;
  size_t n = std::min(size - 1, r.data.size());
  std::memcpy(buf, r.data.data(), n);
  buf[n] = '\0';
  return 0;
}

void* DoInit(fuse_conn_info* conn, fuse_config* cfg) {
  // Attributes are asked for at every look (below); with this on, every read(2) would ask too
  // (a round trip per 32 KiB of sha256sum). What a file holds is taken fresh at each open.
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
  // Names are kept a second; attributes are asked for each time: two names of one file (a hard
  // link) are two nodes to the kernel, and a cached size or time of one would be stale after a
  // change through the other (tar: "file changed as we read it").
  cfg->entry_timeout = 1.0;
  cfg->attr_timeout = 0;
  cfg->negative_timeout = 0;
  cfg->use_ino = 1;       // the desktop's inode numbers: cp -a and tar find hard links by them
  cfg->kernel_cache = 0;  // what the desktop changed shows at the next open
  return nullptr;
}

[[noreturn]] void Usage() {
  std::fprintf(
      stderr,
      "usage: kite-rsc-fuse --version | --fd N [--mounted N] --socket PATH --roots R1:R2... "
      "[--keep DIR] [--log FILE]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  // Whether this binary runs here (the starter asks before it counts on it).
  if (argc == 2 && std::string(argv[1]) == "--version") {
    std::printf("kite-rsc-fuse 0.1.0\n");
    return 0;
  }
  int fd = -1, mounted = -1;
  std::string roots, log;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--fd")
      fd = std::atoi(v.c_str());
    else if (k == "--mounted")
      mounted = std::atoi(v.c_str());
    else if (k == "--socket")
      g.socket_path = v;
    else if (k == "--roots")
      roots = v;
    else if (k == "--log")
      log = v;
    else if (k == "--keep")
      g.keep = v.empty() ? "" : kite::rsc::LexicalPath("/", v, true);
    else
      Usage();
  }
  if (argc % 2 == 0 || fd < 0 || g.socket_path.empty() || roots.empty()) Usage();
  for (size_t i = 0; i <= roots.size();) {
    size_t j = roots.find(':', i);
    if (j == std::string::npos) j = roots.size();
    std::string r = roots.substr(i, j - i);
    if (!r.empty() && r[0] == '/') g.roots.push_back(kite::rsc::LexicalPath("/", r, true));
    i = j + 1;
  }
  if (!log.empty()) {
    int l = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (l >= 0) {
      ::dup2(l, 2);
      ::close(l);
    }
  }
  // Requests and replies of up to a few MiB come and go all the time: kept on the heap rather
  // than mapped and unmapped each time (a page fault per 4 KiB of every read otherwise).
  ::mallopt(M_MMAP_THRESHOLD, 8 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 64 << 20);
  fuse_operations ops{};
  ops.init = DoInit;
  ops.getattr = DoGetattr;
  ops.access = DoAccess;
  ops.open = DoOpen;
  ops.create = DoCreate;
  ops.read = DoRead;
  ops.write = DoWrite;
  ops.flush = DoFlush;
  ops.truncate = DoTruncate;
  ops.release = DoRelease;
  ops.fsync = DoFsync;
  ops.mkdir = DoMkdir;
  ops.unlink = DoUnlink;
  ops.rmdir = DoRmdir;
  ops.rename = DoRename;
  ops.opendir = DoOpendir;
  ops.readdir = DoReaddir;
  ops.releasedir = DoReleasedir;
  ops.statfs = DoStatfs;
  ops.chmod = DoChmod;
  ops.chown = DoChown;
  ops.utimens = DoUtimens;
  ops.symlink = DoSymlink;
  ops.link = DoLink;
  ops.readlink = DoReadlink;
  // mknod (fifos, devices), xattrs and locks are not forwarded: the kernel says ENOSYS/ENOTSUP.
  char name[] = "kite-rsc-fuse";
  char* fargv[] = {name, nullptr};
  fuse_args args = FUSE_ARGS_INIT(1, fargv);
  fuse* f = fuse_new(&args, &ops, sizeof ops, nullptr);
  if (!f) {
    std::fprintf(stderr, "kite-rsc-fuse: cannot set up the file system\n");
    return 1;
  }
  std::string mountpoint = "/dev/fd/" + std::to_string(fd);
  if (fuse_mount(f, mountpoint.c_str()) != 0) {
    std::fprintf(stderr, "kite-rsc-fuse: cannot take /dev/fuse as descriptor %d\n", fd);
    return 1;
  }
  if (mounted >= 0) {
    char c;
    ssize_t n;
    while ((n = ::read(mounted, &c, 1)) < 0 && errno == EINTR) {
    }
    ::close(mounted);
    if (n != 1) return 0;
  }
  // Until the kernel ends the file system; nothing to unmount then (the mount was never here).
  // A few threads, each its own channel (libfuse starts another when all are busy).
  uint64_t first = 0;
  ::syscall(SYS_getrandom, &first, sizeof first, 0);
  g.seq = first & ~(uint64_t{1} << 62);
  // What was kept back is sent once it is kFlushAfter old, whatever the job does next.
  std::thread([] {
    for (;;) {
      std::this_thread::sleep_for(kFlushAfter / 2);
      Settle(0, std::chrono::steady_clock::now() - kFlushAfter);
    }
  }).detach();
  fuse_loop_config loop{.clone_fd = 0, .max_idle_threads = 4};
  int rc = fuse_loop_mt(f, &loop);
  fuse_destroy(f);
  return rc < 0 ? 1 : 0;
}
