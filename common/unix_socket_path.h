// Unix socket addresses for paths of any length.
//
// sockaddr_un holds at most 107 characters of path; a $KITE_HOME or state directory deeper than
// that would make binding or connecting fail. For such a path the directory is opened and the
// socket is named through /proc/self/fd/N/NAME, which the kernel resolves to the same file.
#pragma once

#include <boost/asio/local/stream_protocol.hpp>
#include <string>

#include "common/error.h"

namespace kite {

class UnixSocketPath {
 public:
  // Fails (kInvalidInput) only when even the short form cannot be made: the directory cannot be
  // opened, or the file name itself is too long.
  static Result<UnixSocketPath> For(const std::string& path);
  UnixSocketPath(UnixSocketPath&& other) noexcept;
  UnixSocketPath& operator=(UnixSocketPath&& other) noexcept;
  ~UnixSocketPath();

  // What to bind or connect to. Valid while this object lives.
  const std::string& address() const { return address_; }

 private:
  UnixSocketPath() = default;
  std::string address_;
  int dir_fd_ = -1;  // held open while address_ refers to it
};

// Opens `acceptor` listening on `path`, a socket file that is the user's alone (mode 0600, made
// under umask 077 so no other user can ever connect), close-on-exec; a file already at `path`
// (a socket left by an earlier run) is replaced.
Status ListenPrivate(boost::asio::local::stream_protocol::acceptor& acceptor,
                     const std::string& path, int backlog);

}  // namespace kite
