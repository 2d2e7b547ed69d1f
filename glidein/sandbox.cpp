// Sandboxes: writes and reads that never follow a symbolic link, output selection, removal.
#include "glidein/sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/strings.h"
#include "pool/protocol.h"

namespace kite::glidein {
namespace {

bool SafeNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

// The parent descriptor of the last component of `rel` (dup of dir_fd for a top-level name) and
// that component.
Result<std::pair<int, std::string>> WalkParents(int dir_fd, std::string_view rel, bool make_dirs) {
  if (auto st = pool::CheckRelativePath(rel); !st) return Fail(st.error());
  int fd = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return FailErrno("dup");
  std::vector<std::string> parts = Split(rel, '/', false);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const char* part = parts[i].c_str();
    if (make_dirs && ::mkdirat(fd, part, 0700) != 0 && errno != EEXIST) {
      int err = errno;
      ::close(fd);
      return FailErrno("mkdir '" + std::string(rel) + "'", err);
    }
    int next = ::openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    ::close(fd);
    if (next < 0) {
      if (err == ELOOP || err == ENOTDIR)
        return Fail(ErrorCode::kPermission,
                    "'" + std::string(rel) + "': '" + parts[i] + "' is not a directory (a link?)");
      return FailErrno("open '" + std::string(rel) + "'", err);
    }
    fd = next;
  }
  return std::pair{fd, parts.back()};
}

Result<FileStamp> StampAt(int dir_fd, const char* name) {
  struct stat st;
  if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return FailErrno("stat");
  if (!S_ISREG(st.st_mode)) return Fail(ErrorCode::kInvalidInput, "not a regular file");
  return FileStamp{.size = st.st_size,
                   .mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
                   .inode = st.st_ino};
}

bool IsKitesOwn(const std::string& name) {
  return name == kControlDir || name == kStdoutName || name == kStderrName;
}

}  // namespace

Result<std::string> SandboxName(std::string_view job, std::string_view run) {
  for (auto id : {job, run}) {
    bool ok = !id.empty() && id.size() <= 100 && id != "." && id != ".." &&
              std::all_of(id.begin(), id.end(), SafeNameChar);
    if (!ok) return Fail(ErrorCode::kInvalidInput, "'" + std::string(id) + "' is not a usable id");
  }
  return std::string(job) + "-" + std::string(run);
}

Result<int> OpenBeneath(int dir_fd, std::string_view rel, int flags, mode_t mode, bool make_dirs) {
  auto parent = WalkParents(dir_fd, rel, make_dirs);
  if (!parent) return Fail(parent.error());
  auto [pfd, leaf] = *parent;
  int fd = ::openat(pfd, leaf.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
  int err = errno;
  ::close(pfd);
  if (fd < 0) {
    if (err == ELOOP)
      return Fail(ErrorCode::kPermission, "'" + std::string(rel) + "' is a symbolic link");
    return FailErrno("open '" + std::string(rel) + "'", err);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Fail(ErrorCode::kPermission, "'" + std::string(rel) + "' is not a regular file");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

Status RemoveBeneath(int dir_fd, const std::string& name) {
  if (::unlinkat(dir_fd, name.c_str(), 0) == 0 || errno == ENOENT) return {};
  if (errno != EISDIR && errno != EPERM) return FailErrno("unlink " + name);
  int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return FailErrno("open " + name);
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return FailErrno("opendir " + name);
  }
  Status result;
  while (struct dirent* e = ::readdir(d)) {
    std::string child = e->d_name;
    if (child == "." || child == "..") continue;
    if (auto st = RemoveBeneath(fd, child); !st && result) result = st;
  }
  ::closedir(d);
  if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT && result)
    return FailErrno("rmdir " + name);
  return result;
}

Snapshot TopLevelFiles(int dir_fd, std::vector<std::string>* links) {
  Snapshot out;
  int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return out;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return out;
  }
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISLNK(st.st_mode) && links) links->push_back(name);
    if (auto stamp = StampAt(fd, name.c_str())) out[name] = *stamp;
  }
  ::closedir(d);
  return out;
}

std::vector<OutputFile> SelectOutputs(const std::optional<std::string>& transfer_output,
                                      const Snapshot& before, const Snapshot& after,
                                      std::vector<std::string>* skipped) {
  std::vector<OutputFile> out;
  for (auto name : {kStdoutName, kStderrName}) {
    if (after.contains(std::string(name))) out.push_back({std::string(name), std::string(name)});
  }
  if (transfer_output) {
    for (auto& path : Split(*transfer_output, ',')) {
      if (auto st = pool::CheckRelativePath(path); !st) {
        if (skipped) skipped->push_back(st.error().message());
        continue;
      }
      out.push_back({path, path.substr(path.rfind('/') + 1)});
    }
    return out;
  }
  for (const auto& [name, stamp] : after) {
    if (IsKitesOwn(name)) continue;
    auto it = before.find(name);
    if (it == before.end() || it->second != stamp) out.push_back({name, name});
  }
  return out;
}

Sandbox::Sandbox(std::string work, std::string name, std::string path, int work_fd, int fd)
    : work_(std::move(work)),
      name_(std::move(name)),
      path_(std::move(path)),
      work_fd_(work_fd),
      fd_(fd) {}

Result<Sandbox> Sandbox::Create(const std::string& work, const std::string& name) {
  int work_fd = ::open(work.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (work_fd < 0) return FailErrno("open " + work);
  Sandbox box(work, name, work + "/" + name, work_fd, -1);
  if (auto st = RemoveBeneath(work_fd, name); !st) return Fail(st.error());
  if (::mkdirat(work_fd, name.c_str(), 0700) != 0) return FailErrno("mkdir " + box.path_);
  box.fd_ = ::openat(work_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (box.fd_ < 0) return FailErrno("open " + box.path_);
  if (::mkdirat(box.fd_, std::string(kControlDir).c_str(), 0700) != 0)
    return FailErrno("mkdir " + box.control_dir());
  return box;
}

Sandbox::Sandbox(Sandbox&& o) noexcept
    : work_(std::move(o.work_)),
      name_(std::move(o.name_)),
      path_(std::move(o.path_)),
      work_fd_(o.work_fd_),
      fd_(o.fd_) {
  o.work_fd_ = o.fd_ = -1;
}

Sandbox& Sandbox::operator=(Sandbox&& o) noexcept {
  if (this != &o) {
    Close();
    work_ = std::move(o.work_);
    name_ = std::move(o.name_);
    path_ = std::move(o.path_);
    work_fd_ = o.work_fd_;
    fd_ = o.fd_;
    o.work_fd_ = o.fd_ = -1;
  }
  return *this;
}

Sandbox::~Sandbox() {
  Close();
}

void Sandbox::Close() {
  if (fd_ >= 0) ::close(fd_);
  if (work_fd_ >= 0) ::close(work_fd_);
  fd_ = work_fd_ = -1;
}

Status Sandbox::Write(std::string_view rel, uint64_t offset, std::string_view bytes, uint32_t mode,
                      bool last) {
  if (fd_ < 0) return Fail(ErrorCode::kConflict, "the sandbox is gone");
  int flags = O_WRONLY | O_CREAT | (offset == 0 ? O_TRUNC : 0);
  auto fd = OpenBeneath(fd_, rel, flags, mode & 0777, true);
  if (!fd) return Fail(fd.error());
  Status st;
  size_t done = 0;
  while (done < bytes.size() && st) {
    ssize_t n =
        ::pwrite(*fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno != EINTR) st = FailErrno("write '" + std::string(rel) + "'");
    if (n > 0) done += static_cast<size_t>(n);
  }
  if (st && last && ::ftruncate(*fd, static_cast<off_t>(offset + bytes.size())) != 0)
    st = FailErrno("truncate '" + std::string(rel) + "'");
  if (st && ::fchmod(*fd, mode & 0777) != 0) st = FailErrno("chmod '" + std::string(rel) + "'");
  ::close(*fd);
  return st;
}

bool Sandbox::HasFile(std::string_view rel) const {
  auto fd = OpenBeneath(fd_, rel, O_RDONLY);
  if (!fd) return false;
  ::close(*fd);
  return true;
}

Status Sandbox::Remove() {
  if (work_fd_ < 0) return {};
  auto st = RemoveBeneath(work_fd_, name_);
  Close();
  return st;
}

FileReader::FileReader(FileReader&& o) noexcept : fd_(o.fd_), mode_(o.mode_), next_(o.next_) {
  o.fd_ = -1;
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

Result<FileReader> FileReader::Open(int dir_fd, std::string_view rel) {
  auto fd = OpenBeneath(dir_fd, rel, O_RDONLY);
  if (!fd) return Fail(fd.error());
  struct stat st;
  uint32_t mode = ::fstat(*fd, &st) == 0 ? st.st_mode & 0777 : 0644;
  return FileReader(*fd, mode);
}

Result<FileReader::Piece> FileReader::Next(size_t max) {
  Piece p{.offset = next_, .bytes = std::string(max, '\0')};
  size_t got = 0;
  while (got < max) {
    ssize_t n = ::pread(fd_, p.bytes.data() + got, max - got, static_cast<off_t>(next_ + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FailErrno("read");
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  p.bytes.resize(got);
  p.last = got < max;
  next_ += got;
  return p;
}

}  // namespace kite::glidein
