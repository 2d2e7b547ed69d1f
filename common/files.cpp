// File helpers.
#include "common/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <string>

namespace kite {

Result<std::string> ReadFile(const std::string& path, ReadFileOptions options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return FailErrno("open " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return FailErrno("stat " + path, err);
  }
  bool pipe = S_ISFIFO(st.st_mode);
  if (!S_ISREG(st.st_mode) && !(pipe && options.allow_pipe)) {
    ::close(fd);
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : pipe                 ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "a device";
    return Fail(ErrorCode::kInvalidInput, path + " is " + kind + ", not a regular file; refused");
  }
  if (pipe) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // wait for the writer
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return FailErrno("read " + path, err);
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > options.max_bytes) {
      ::close(fd);
      return Fail(
          ErrorCode::kInvalidInput,
          path + " is larger than " + std::to_string(options.max_bytes) + " bytes; refused");
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

static Status WriteAll(int fd, std::string_view data, const std::string& what) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return FailErrno("write " + what);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

Status WriteFileAtomic(const std::string& path, std::string_view data, mode_t mode) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return FailErrno("create " + tmp);
  ::fchmod(fd, mode);  // umask may have narrowed it; never widen beyond `mode`
  auto st = WriteAll(fd, data, tmp);
  if (st && ::fsync(fd) != 0) st = FailErrno("fsync " + tmp);
  ::close(fd);
  if (!st) {
    ::unlink(tmp.c_str());
    return st;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return FailErrno("rename " + tmp, err);
  }
  int dfd = ::open(DirName(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

Status MakeDirs(const std::string& path, mode_t mode) {
  if (path.empty()) return {};
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    cur = path.substr(0, pos);
    if (cur.empty()) continue;
    if (::mkdir(cur.c_str(), mode) != 0 && errno != EEXIST) return FailErrno("mkdir " + cur);
  }
  struct stat sb;
  if (::stat(path.c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    return Fail(ErrorCode::kIo, "not a directory: " + path);
  }
  return {};
}

Status CheckPrivateFile(const std::string& path) {
  struct stat sb;
  if (::stat(path.c_str(), &sb) != 0) return FailErrno("stat " + path);
  if (!S_ISREG(sb.st_mode)) {
    return Fail(ErrorCode::kInvalidInput, path + " is not a regular file; refused");
  }
  if (sb.st_mode & (S_IRWXG | S_IRWXO)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(sb.st_mode & 07777));
    return Fail(ErrorCode::kPermission,
                path + " has mode " + mode + "; it must be readable by its owner only (chmod 600)");
  }
  if (sb.st_uid != ::geteuid()) {
    return Fail(ErrorCode::kPermission, path + " is not owned by the current user");
  }
  return {};
}

bool FileExists(const std::string& path) {
  struct stat sb;
  return ::stat(path.c_str(), &sb) == 0;
}

std::string DirName(const std::string& path) {
  auto pos = path.find_last_of('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

std::string BaseName(const std::string& path) {
  auto pos = path.find_last_of('/');
  return pos == std::string::npos ? path : path.substr(pos + 1);
}

std::string JoinPath(const std::string& dir, const std::string& rel) {
  if (!rel.empty() && rel[0] == '/') return rel;
  if (dir.empty()) return rel;
  if (dir.back() == '/') return dir + rel;
  return dir + "/" + rel;
}

std::string AbsolutePath(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf) == nullptr) return path;
  return JoinPath(buf, path);
}

}  // namespace kite
