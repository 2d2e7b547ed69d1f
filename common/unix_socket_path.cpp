// UnixSocketPath.
#include "common/unix_socket_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <utility>

#include "common/files.h"

namespace kite {

namespace {
constexpr size_t kMaxPath = sizeof(sockaddr_un{}.sun_path) - 1;
}  // namespace

Result<UnixSocketPath> UnixSocketPath::For(const std::string& path) {
  UnixSocketPath p;
  if (path.size() <= kMaxPath) {
    p.address_ = path;
    return p;
  }
  std::string dir = DirName(path), name = BaseName(path);
  p.dir_fd_ = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (p.dir_fd_ < 0) return FailErrno("open " + dir);
  p.address_ = "/proc/self/fd/" + std::to_string(p.dir_fd_) + "/" + name;
  if (p.address_.size() > kMaxPath) {
    return Fail(ErrorCode::kInvalidInput,
                "the socket name " + name + " is too long for a Unix socket");
  }
  return p;
}

UnixSocketPath::UnixSocketPath(UnixSocketPath&& other) noexcept
    : address_(std::move(other.address_)), dir_fd_(std::exchange(other.dir_fd_, -1)) {}

UnixSocketPath& UnixSocketPath::operator=(UnixSocketPath&& other) noexcept {
  if (this != &other) {
    if (dir_fd_ >= 0) ::close(dir_fd_);
    address_ = std::move(other.address_);
    dir_fd_ = std::exchange(other.dir_fd_, -1);
  }
  return *this;
}

UnixSocketPath::~UnixSocketPath() {
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

Status ListenPrivate(boost::asio::local::stream_protocol::acceptor& acceptor,
                     const std::string& path, int backlog) {
  ::unlink(path.c_str());
  auto addr = UnixSocketPath::For(path);
  if (!addr) return Fail(addr.error());
  boost::system::error_code ec;
  boost::asio::local::stream_protocol::endpoint ep(addr->address());
  mode_t old = ::umask(0077);
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.bind(ep, ec);
  ::umask(old);
  if (!ec) ::fcntl(acceptor.native_handle(), F_SETFD, FD_CLOEXEC);
  if (!ec) acceptor.listen(backlog, ec);
  if (ec) return Fail(ErrorCode::kIo, "listen on " + path + ": " + ec.message());
  ::chmod(path.c_str(), 0600);
  return {};
}

}  // namespace kite
