// Reading and writing kite-exec's status file.
#include "common/exec_status.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "common/files.h"
#include "common/strings.h"

namespace kite {

namespace {
const char* KindName(ExecStatus::Kind k) {
  switch (k) {
    case ExecStatus::Kind::kExited:
      return "exited";
    case ExecStatus::Kind::kSignaled:
      return "signaled";
    case ExecStatus::Kind::kExecFailed:
      return "execfailed";
    case ExecStatus::Kind::kSetupFailed:
      return "setupfailed";
  }
  return "exited";
}
}  // namespace

namespace {
// printf into a string of whatever length it needs: a parsed record may carry any double, and
// "%.6f" of 1e300 is over 300 characters.
template <typename... Args>
std::string Printf(const char* fmt, Args... args) {
  int n = std::snprintf(nullptr, 0, fmt, args...);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::snprintf(out.data(), out.size() + 1, fmt, args...);
  return out;
}
}  // namespace

// One "key value" per line; the message comes last and may hold spaces.
std::string FormatExecStatus(const ExecStatus& s) {
  std::string out = Printf("kind %s\ncode %d\ncore %d\n", KindName(s.kind), s.code, s.core ? 1 : 0);
  out += Printf("utime %.6f\nstime %.6f\n", s.utime, s.stime);
  out += Printf("start %.6f\nend %.6f\n", s.start, s.end);
  out += Printf("maxrss %lld\n", static_cast<long long>(s.max_rss_kb));
  std::string msg = s.message;
  for (auto& c : msg) {
    if (c == '\n') c = ' ';
  }
  out += "message " + msg + "\n";
  return out;
}

Result<ExecStatus> ParseExecStatus(const std::string& text) {
  ExecStatus s;
  bool have_kind = false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto sp = line.find(' ');
    std::string key = line.substr(0, sp);
    std::string val = sp == std::string::npos ? "" : line.substr(sp + 1);
    try {
      if (key == "kind") {
        have_kind = true;
        if (val == "exited")
          s.kind = ExecStatus::Kind::kExited;
        else if (val == "signaled")
          s.kind = ExecStatus::Kind::kSignaled;
        else if (val == "execfailed")
          s.kind = ExecStatus::Kind::kExecFailed;
        else if (val == "setupfailed")
          s.kind = ExecStatus::Kind::kSetupFailed;
        else
          return Fail(ErrorCode::kInvalidInput, "exec status: unknown kind '" + val + "'");
      } else if (key == "code") {
        s.code = std::stoi(val);
      } else if (key == "core") {
        s.core = val == "1";
      } else if (key == "utime") {
        s.utime = std::stod(val);
      } else if (key == "stime") {
        s.stime = std::stod(val);
      } else if (key == "start") {
        s.start = std::stod(val);
      } else if (key == "end") {
        s.end = std::stod(val);
      } else if (key == "maxrss") {
        s.max_rss_kb = std::stoll(val);
      } else if (key == "message") {
        s.message = val;
      }
    } catch (const std::exception&) {
      return Fail(ErrorCode::kInvalidInput, "exec status: bad value for " + key);
    }
  }
  if (!have_kind) return Fail(ErrorCode::kInvalidInput, "exec status: no kind line");
  return s;
}

std::string FormatExecStatusRecord(const ExecStatus& s) {
  return "status\n" + FormatExecStatus(s) + "end status\n";
}

Result<ExecStatus> ReadExecStatus(const std::string& dir) {
  if (auto lock = ReadExecLock(dir); lock.status) return ParseExecStatus(*lock.status);
  auto text = ReadFile(JoinPath(dir, "status"));
  if (!text) return Fail(text.error());
  return ParseExecStatus(*text);
}

namespace {

pid_t PidOf(const std::string& text) {
  long pid = std::strtol(text.c_str(), nullptr, 10);
  return pid > 0 && pid <= INT32_MAX ? static_cast<pid_t>(pid) : 0;
}

}  // namespace

ExecLockRecord ParseExecLock(std::string_view text) {
  ExecLockRecord r;
  std::istringstream in{std::string(text)};
  std::optional<std::string> status;  // a record begun
  for (std::string line; std::getline(in, line);) {
    if (status) {
      if (line == "end status" && !in.eof()) {
        r.status = std::move(status);
        break;
      }
      *status += line + "\n";
    } else if (line == "status") {
      status.emplace();
    } else if (line.starts_with("owner ")) {
      r.owner = line.substr(6);
    } else if (line.starts_with("pid ")) {
      r.pid = PidOf(line.substr(4));
    }
  }
  return r;
}

ExecLockRecord ReadExecLock(const std::string& dir) {
  ExecLockRecord r;
  if (auto text = ReadFile(JoinPath(dir, "lock"))) r = ParseExecLock(*text);
  if (r.pid == 0) {
    if (auto old = ReadFile(JoinPath(dir, "pid"))) r.pid = PidOf(*old);
  }
  return r;
}

void ExecStopSignals(sigset_t* set) {
  sigemptyset(set);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(set, s);
}

bool ExecWrapperAlive(const std::string& dir) {
  std::string path = JoinPath(dir, "lock");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool alive = ::flock(fd, LOCK_SH | LOCK_NB) != 0;
  ::close(fd);  // releases our lock if we took it
  return alive;
}

}  // namespace kite
