#include "rsc/shadow_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <utility>

#include "common/strings.h"
#include "rsc/roots.h"

namespace kite::rsc {
namespace {

// The open flags a job may ask for; anything else (O_PATH, O_TMPFILE, ...) is dropped.
constexpr int kOpenFlags =
    O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_APPEND | O_DIRECTORY | O_NOFOLLOW | O_DSYNC | O_SYNC;

// `no_links`: no symbolic link at all on the way (a file root: the root itself is the file the
// submit file named, never what a link there points at).
int OpenAt2(int dir, const std::string& rel, int flags, uint32_t mode, bool no_links = false) {
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC | ((flags & O_PATH) ? 0 : O_NOCTTY));
  // Permission bits only: a job never makes a setuid, setgid or sticky file on the desktop.
  how.mode = (flags & O_CREAT) ? (mode & 0777) : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (no_links ? RESOLVE_NO_SYMLINKS : 0);
  return static_cast<int>(
      ::syscall(SYS_openat2, dir, rel.empty() ? "." : rel.c_str(), &how, sizeof how));
}

// Absolute, and no empty, "." or ".." component ("/" itself is plain).
bool Plain(const std::string& path) {
  if (path.empty() || path[0] != '/' || path.find('\0') != std::string::npos) return false;
  if (path == "/") return true;
  for (size_t i = 1;;) {
    size_t j = path.find('/', i);
    std::string_view c(path.data() + i, (j == std::string::npos ? path.size() : j) - i);
    if (c.empty() || c == "." || c == "..") return false;
    if (j == std::string::npos) return true;
    i = j + 1;
  }
}

Stat FromStat(const struct stat& st) {
  Stat s;
  s.dev = st.st_dev;
  s.ino = st.st_ino;
  s.size = static_cast<uint64_t>(st.st_size);
  s.blocks = static_cast<uint64_t>(st.st_blocks);
  s.mode = st.st_mode;
  s.nlink = static_cast<uint32_t>(st.st_nlink);
  s.uid = st.st_uid;
  s.gid = st.st_gid;
  s.blksize = static_cast<uint32_t>(st.st_blksize);
  auto ns = [](const timespec& t) {
    return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
  };
  s.atime_ns = ns(st.st_atim);
  s.mtime_ns = ns(st.st_mtim);
  s.ctime_ns = ns(st.st_ctim);
  return s;
}

// Handles start at a random place in [2^32, 2^62): a handle an earlier shadow of the run gave
// (before the agent restarted) is not one this shadow gives, so it is answered ESTALE, never taken
// for another file.
int64_t FirstHandle() {
  uint32_t r = 0;
  while (::getrandom(&r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) {
  }
  return (static_cast<int64_t>(r & 0x3fffffffu) << 32) + (int64_t{1} << 32);
}

}  // namespace

ShadowIo::ShadowIo(std::vector<std::string> roots, Limits limits)
    : roots_(std::move(roots)), limits_(std::move(limits)), next_handle_(FirstHandle()) {}

ShadowIo::~ShadowIo() {
  for (auto& [h, fd] : handles_) ::close(fd);
  if (limits_.shared_open) *limits_.shared_open -= handles_.size();
  for (auto& [r, fd] : root_fds_) ::close(fd);
}

std::vector<std::string> ShadowIo::TakeRefusals() {
  return std::exchange(refusals_, {});
}

std::vector<std::string> ShadowIo::TakeUnseen() {
  return std::exchange(unseen_, {});
}

int ShadowIo::Refuse(const std::string& path, const std::string& why) {
  // The job chose the path: written so that it cannot forge or flood the agent's log.
  if (refusals_.size() < 100) refusals_.push_back(ForLog(path) + ": " + why);
  return EACCES;
}

int ShadowIo::Resolve(const std::string& path, int* root_fd, std::string* rel, bool* file_root) {
  if (!Plain(path)) return Refuse(path, "not a plain absolute path");
  for (const auto& root : roots_) {
    bool folder = !root.empty() && root.back() == '/';
    std::string dir, name;
    if (folder) {
      std::string bare = root.size() > 1 ? root.substr(0, root.size() - 1) : root;
      if (path == bare) {
        name = "";
      } else if (path.compare(0, root.size(), root) == 0) {
        name = path.substr(root.size());
      } else {
        continue;
      }
      dir = bare;
    } else {
      if (path != root) continue;
      size_t slash = root.rfind('/');
      dir = slash == 0 ? "/" : root.substr(0, slash);
      name = root.substr(slash + 1);
    }
    auto it = root_fds_.find(dir);
    if (it == root_fds_.end()) {
      int fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) return errno;
      // Where it really is, read from the open folder itself (no race with a link changed
      // meanwhile): a root that leads into a system folder (a link to /etc) is none.
      char link[64], real[PATH_MAX];
      std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
      ssize_t n = ::readlink(link, real, sizeof real - 1);
      if (n <= 0 || IsSystemPath(std::string(real, static_cast<size_t>(n)))) {
        ::close(fd);
        return Refuse(path, n <= 0 ? "its folder cannot be resolved"
                                   : "its folder is the system folder " +
                                         ForLog(std::string_view(real, static_cast<size_t>(n))));
      }
      it = root_fds_.emplace(dir, fd).first;
    }
    *root_fd = it->second;
    *rel = name;
    if (file_root) *file_root = !folder;
    return 0;
  }
  return Refuse(path, "outside the paths this job may use");
}

int ShadowIo::OpenBeneath(const std::string& path, int flags, uint32_t mode, int* fd) {
  int root = -1;
  std::string rel;
  bool file_root = false;
  if (int e = Resolve(path, &root, &rel, &file_root)) return e;
  *fd = OpenAt2(root, rel, flags, mode, file_root);
  if (*fd < 0 && file_root && errno == ELOOP)
    return Refuse(path, "a file the job may use is a symbolic link; it is not followed");
  if (*fd >= 0) return 0;
  if (errno == EXDEV)
    return Refuse(path, "a symbolic link leads out of the paths this job may use");
  return errno;
}

int ShadowIo::Parent(const std::string& path, int* dir_fd, std::string* name) {
  int root = -1;
  std::string rel;
  if (int e = Resolve(path, &root, &rel, nullptr)) return e;
  if (rel.empty()) return Refuse(path, "the root of the paths this job may use");
  size_t slash = rel.rfind('/');
  std::string dir = slash == std::string::npos ? "" : rel.substr(0, slash);
  *name = slash == std::string::npos ? rel : rel.substr(slash + 1);
  *dir_fd = OpenAt2(root, dir, O_PATH | O_DIRECTORY, 0);
  if (*dir_fd >= 0) return 0;
  if (errno == EXDEV)
    return Refuse(path, "a symbolic link leads out of the paths this job may use");
  return errno;
}

int ShadowIo::Entry(const std::string& path, int* dir_fd, std::string* name) {
  int root = -1;
  std::string rel;
  if (int e = Resolve(path, &root, &rel, nullptr)) return e;
  if (!rel.empty()) return Parent(path, dir_fd, name);
  *dir_fd = ::fcntl(root, F_DUPFD_CLOEXEC, 0);
  *name = ".";
  return *dir_fd >= 0 ? 0 : errno;
}

std::string ShadowIo::Handle(std::string_view request) {
  auto r = DecodeRequest(request);
  if (!r) return Encode(Reply{.seq = 0, .result = -1, .error = EINVAL});
  if (r->seq != 0 && r->seq == last_seq_) return last_reply_;
  ++counts_.calls;
  Reply rep = Do(*r);
  rep.seq = r->seq;
  last_seq_ = r->seq;
  last_reply_ = Encode(rep);
  return last_reply_;
}

Reply ShadowIo::Do(const Request& r) {
  Reply out;
  auto fail = [&](int e) {
    out.result = -1;
    out.error = e;
    return out;
  };
  auto handle = [&]() -> int {
    auto it = handles_.find(r.handle);
    return it == handles_.end() ? -1 : it->second;
  };
  int fd = -1;
  switch (r.op) {
    case Op::kOpen: {
      // Each open file holds one of the agent's descriptors: a run has at most max_handles, and
      // all runs together at most max_shared; past either the job is told EMFILE, as by its own
      // kernel, and the agent keeps descriptors for everything else.
      bool shared_full = limits_.shared_open && *limits_.shared_open >= limits_.max_shared;
      if (handles_.size() >= limits_.max_handles || shared_full) {
        if (!emfile_noted_) {
          emfile_noted_ = true;
          Refuse(r.path, shared_full ? "the agent's remote files are all in use (EMFILE)"
                                     : "the run has " + std::to_string(handles_.size()) +
                                           " remote files open, its limit (EMFILE)");
        }
        return fail(EMFILE);
      }
      if (int e = OpenBeneath(r.path, r.flags & kOpenFlags, r.mode, &fd)) return fail(e);
      int64_t h = next_handle_++;
      handles_[h] = fd;
      if (limits_.shared_open) ++*limits_.shared_open;
      out.result = h;
      // Where an append starts: kite-rsc-fuse checks a repeated append against it.
      struct stat st {};
      if ((r.flags & O_APPEND) && ::fstat(fd, &st) == 0)
        wire::Put(out.data, static_cast<uint64_t>(st.st_size), 8);
      return out;
    }
    case Op::kClose: {
      auto it = handles_.find(r.handle);
      if (it == handles_.end()) return fail(ESTALE);
      if (limits_.shared_open) --*limits_.shared_open;
      int rc = ::close(it->second);
      handles_.erase(it);
      return rc == 0 ? out : fail(errno);
    }
    case Op::kPread: {
      if ((fd = handle()) < 0) return fail(ESTALE);
      if (r.offset < 0) return fail(EINVAL);
      out.data.resize(std::min<uint64_t>(r.size, kMaxData));
      ssize_t n = ::pread(fd, out.data.data(), out.data.size(), r.offset);
      if (n < 0) return fail(errno);
      out.data.resize(static_cast<size_t>(n));
      out.result = n;
      counts_.bytes_read += static_cast<uint64_t>(n);
      return out;
    }
    case Op::kPwrite:
    case Op::kAppend: {
      if ((fd = handle()) < 0) return fail(ESTALE);
      if (r.op == Op::kPwrite && r.offset < 0) return fail(EINVAL);
      ssize_t n;
      if (r.op == Op::kPwrite) {
        n = ::pwrite(fd, r.data.data(), r.data.size(), r.offset);
      } else {
        if (!(::fcntl(fd, F_GETFL) & O_APPEND)) ::lseek(fd, 0, SEEK_END);
        n = ::write(fd, r.data.data(), r.data.size());
      }
      if (n < 0) return fail(errno);
      out.result = n;
      // An append says where the file's end now is: a restored program cuts it back to that.
      if (r.op == Op::kAppend)
        wire::Put(out.data, static_cast<uint64_t>(::lseek(fd, 0, SEEK_CUR)), 8);
      counts_.bytes_written += static_cast<uint64_t>(n);
      return out;
    }
    case Op::kFstat:
    case Op::kStat:
    case Op::kLstat: {
      struct stat st {};
      if (r.op == Op::kFstat) {
        if ((fd = handle()) < 0) return fail(ESTALE);
        if (::fstat(fd, &st) != 0) return fail(errno);
      } else if (r.op == Op::kStat) {
        if (int e = OpenBeneath(r.path, O_PATH, 0, &fd)) return fail(e);
        int rc = ::fstat(fd, &st);
        int e = errno;
        ::close(fd);
        if (rc != 0) return fail(e);
      } else {
        std::string name;
        int root = -1;
        std::string rel;
        if (int e = Resolve(r.path, &root, &rel, nullptr)) return fail(e);
        if (rel.empty()) {
          if (::fstatat(root, ".", &st, AT_SYMLINK_NOFOLLOW) != 0) return fail(errno);
        } else {
          if (int e = Parent(r.path, &fd, &name)) return fail(e);
          int rc = ::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW);
          int e = errno;
          ::close(fd);
          if (rc != 0) return fail(e);
        }
      }
      out.data = Encode(FromStat(st));
      return out;
    }
    case Op::kAccess: {
      if (int e = OpenBeneath(r.path, O_PATH, 0, &fd)) return fail(e);
      int rc = ::faccessat(fd, "", static_cast<int>(r.mode), AT_EMPTY_PATH);
      int e = errno;
      ::close(fd);
      return rc == 0 ? out : fail(e);
    }
    case Op::kUnlink:
    case Op::kRmdir:
    case Op::kMkdir: {
      std::string name;
      if (int e = Parent(r.path, &fd, &name)) return fail(e);
      int rc = r.op == Op::kMkdir
                   ? ::mkdirat(fd, name.c_str(), r.mode & 0777)
                   : ::unlinkat(fd, name.c_str(), r.op == Op::kRmdir ? AT_REMOVEDIR : 0);
      int e = errno;
      ::close(fd);
      return rc == 0 ? out : fail(e);
    }
    case Op::kRename: {
      std::string from, to;
      int to_fd = -1;
      if (int e = Parent(r.path, &fd, &from)) return fail(e);
      if (int e = Parent(r.path2, &to_fd, &to)) {
        ::close(fd);
        return fail(e);
      }
      int rc = ::renameat(fd, from.c_str(), to_fd, to.c_str());
      int e = errno;
      ::close(fd);
      ::close(to_fd);
      return rc == 0 ? out : fail(e);
    }
    case Op::kTruncate: {
      if (int e = OpenBeneath(r.path, O_WRONLY, 0, &fd)) return fail(e);
      int rc = ::ftruncate(fd, static_cast<off_t>(r.size));
      int e = errno;
      ::close(fd);
      return rc == 0 ? out : fail(e);
    }
    case Op::kFtruncate:
    case Op::kFsync: {
      if ((fd = handle()) < 0) return fail(ESTALE);
      int rc = r.op == Op::kFsync ? ::fsync(fd) : ::ftruncate(fd, static_cast<off_t>(r.size));
      return rc == 0 ? out : fail(errno);
    }
    case Op::kReaddir: {
      if ((fd = handle()) < 0) return fail(ESTALE);
      int copy = ::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (copy < 0) return fail(errno);
      DIR* d = ::fdopendir(copy);
      if (!d) {
        int e = errno;
        ::close(copy);
        return fail(e);
      }
      int64_t skipped = 0, listed = 0;
      while (struct dirent* e = ::readdir(d)) {
        if (skipped++ < r.offset) continue;
        size_t len = std::strlen(e->d_name);
        if (out.data.size() + len + 1 > kMaxData) break;
        out.data.append(e->d_name, len);
        out.data.push_back('\0');
        ++listed;
      }
      ::closedir(d);
      out.result = listed;
      return out;
    }
    case Op::kChmod:
    case Op::kChown:
    case Op::kUtimens:
    case Op::kReadlink: {
      std::string name;
      if (r.op == Op::kChmod && (r.mode & ~0777u)) return fail(EPERM);  // see OpenAt2
      // Only to the user the agent runs as: what the job could do on its own machine.
      if (r.op == Op::kChown &&
          ((r.offset != -1 && r.offset != static_cast<int64_t>(::geteuid())) ||
           (r.handle != -1 && r.handle != static_cast<int64_t>(::getegid()))))
        return fail(EPERM);
      struct timespec ts[2];
      if (r.op == Op::kUtimens) {
        if (r.data.size() != 32) return fail(EINVAL);
        for (int i = 0; i < 2; ++i) {
          ts[i].tv_sec = static_cast<time_t>(wire::Get(r.data, 16 * i, 8));
          ts[i].tv_nsec = static_cast<long>(wire::Get(r.data, 16 * i + 8, 8));
        }
      }
      if (int e = Entry(r.path, &fd, &name)) return fail(e);
      int rc = 0;
      switch (r.op) {
        case Op::kChmod:
          rc = ::fchmodat(fd, name.c_str(), r.mode, AT_SYMLINK_NOFOLLOW);
          break;
        case Op::kChown:
          rc = ::fchownat(fd, name.c_str(), static_cast<uid_t>(r.offset),
                          static_cast<gid_t>(r.handle), AT_SYMLINK_NOFOLLOW);
          break;
        case Op::kUtimens:
          rc = ::utimensat(fd, name.c_str(), ts, AT_SYMLINK_NOFOLLOW);
          break;
        default: {
          char target[PATH_MAX];
          ssize_t n = ::readlinkat(fd, name.c_str(), target, sizeof target);
          if (n >= 0) {
            out.data.assign(target, static_cast<size_t>(n));
            out.result = n;
          }
          rc = n < 0 ? -1 : 0;
        }
      }
      int e = errno;
      ::close(fd);
      return rc == 0 ? out : fail(e);
    }
    case Op::kSymlink:
    case Op::kLink: {
      if (r.op == Op::kSymlink && (r.path2.empty() || r.path2.find('\0') != std::string::npos))
        return fail(EINVAL);
      std::string name, to;
      if (int e = Parent(r.path, &fd, &name)) return fail(e);
      int rc = 0, to_fd = -1;
      if (r.op == Op::kSymlink) {
        // What it says is only text here: the shadow never follows a link out of the roots.
        rc = ::symlinkat(r.path2.c_str(), fd, name.c_str());
      } else if (int e = Parent(r.path2, &to_fd, &to)) {
        ::close(fd);
        return fail(e);
      } else {
        rc = ::linkat(fd, name.c_str(), to_fd, to.c_str(), 0);
      }
      int e = errno;
      ::close(fd);
      if (to_fd >= 0) ::close(to_fd);
      return rc == 0 ? out : fail(e);
    }
    case Op::kUnseen: {
      // Told, not done: only a path of the job's own is taken (and kept for the agent).
      int root = -1;
      std::string rel;
      if (int e = Resolve(r.path, &root, &rel, nullptr)) return fail(e);
      if (unseen_.size() < 16) unseen_.push_back(ForLog(r.path));
      return out;
    }
  }
  return fail(EINVAL);
}

}  // namespace kite::rsc
