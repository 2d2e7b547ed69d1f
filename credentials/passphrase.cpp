// Passphrase input from a terminal (no echo) or standard input.
#include "credentials/passphrase.h"

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <iostream>

namespace kite::credentials {

namespace {

constexpr size_t kMaxPassphrase = 4096;

std::string ReadLineFd(int fd) {
  std::string line;
  char c;
  while (line.size() < kMaxPassphrase && ::read(fd, &c, 1) == 1 && c != '\n') line += c;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace

Result<std::string> ReadPassphrase(const std::string& prompt, bool from_stdin) {
  if (from_stdin) {
    // One line, bounded: a pass phrase is short, and a file fed by mistake must not be swallowed.
    std::string line;
    char c;
    bool any = false;
    while (std::cin.get(c)) {
      any = true;
      if (c == '\n') break;
      if (line.size() == kMaxPassphrase) {
        return Fail(ErrorCode::kInvalidInput, "the pass phrase on standard input is longer than " +
                                                  std::to_string(kMaxPassphrase) +
                                                  " bytes; refused");
      }
      line += c;
    }
    if (!any)
      return Fail(ErrorCode::kInvalidInput, "no passphrase on standard input (it is empty)");
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
  }
  int fd = ::open("/dev/tty", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return Fail(ErrorCode::kPermission,
                "a passphrase is needed and there is no terminal to ask on (use --pwstdin)");
  }
  (void)!::write(fd, prompt.data(), prompt.size());
  termios old{};
  bool have_tty = ::tcgetattr(fd, &old) == 0;
  if (have_tty) {
    termios quiet = old;
    quiet.c_lflag &= static_cast<tcflag_t>(~ECHO);
    ::tcsetattr(fd, TCSAFLUSH, &quiet);
  }
  std::string line = ReadLineFd(fd);
  if (have_tty) ::tcsetattr(fd, TCSAFLUSH, &old);
  (void)!::write(fd, "\n", 1);
  ::close(fd);
  return line;
}

}  // namespace kite::credentials
