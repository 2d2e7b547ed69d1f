// Secrets kept in private files.
#include "common/secret.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/clock.h"

namespace kite {
namespace {

constexpr size_t kSecretBytes = 32;

bool IsLowerHex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

Result<std::string> LoadOrCreateSecret(const std::string& path, const std::string& what) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      struct stat st;
      std::string text(256, '\0');
      ssize_t n = ::fstat(fd, &st) == 0 ? ::read(fd, text.data(), text.size()) : -1;
      ::close(fd);
      if (n < 0) return Fail(ErrorCode::kIo, path + ": " + std::strerror(errno));
      if (st.st_uid != ::getuid() || (st.st_mode & 077) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return Fail(ErrorCode::kPermission, path + ": the " + what +
                                                " must be private to its owner (mode " + mode +
                                                "); chmod 600 it, or delete it to make a new one");
      }
      text.resize(static_cast<size_t>(n));
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
      if (text.size() != 2 * kSecretBytes || !IsLowerHex(text))
        return Fail(ErrorCode::kInvalidInput,
                    path + ": not a " + what + " (64 hex digits); delete it to make a new one");
      return text;
    }
    if (errno != ENOENT) return Fail(ErrorCode::kIo, path + ": " + std::strerror(errno));
    std::string secret = RandomHex(kSecretBytes);
    // Written whole to a private temporary file, then linked into place: the file never holds
    // half a secret, and link() refuses to replace one another process made meanwhile.
    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    ::unlink(tmp.c_str());
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return Fail(ErrorCode::kIo, tmp + ": " + std::strerror(errno));
    std::string line = secret + "\n";
    bool ok = ::fchmod(fd, 0600) == 0 &&
              ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
              ::fsync(fd) == 0;
    ::close(fd);
    int linked = ok ? ::link(tmp.c_str(), path.c_str()) : -1;
    int link_errno = errno;
    ::unlink(tmp.c_str());
    if (linked == 0) return secret;
    if (ok && link_errno == EEXIST) continue;  // someone else's won: read it
    return Fail(ErrorCode::kIo, path + ": cannot write the " + what);
  }
  return Fail(ErrorCode::kIo, path + ": appeared and vanished while being read");
}

}  // namespace kite
