// User-log formatting.
#include "agent/userlog.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace kite::agent {
namespace {

const char* Headline(int code) {
  switch (code) {
    case kEventSubmit:
      return "Job submitted from host: ";
    case kEventExecute:
      return "Job executing on host: <127.0.0.1:0>";
    case kEventExecutableError:
      return "(1) Job file not executable.";
    case kEventCheckpointed:
      return "Job was checkpointed.";
    case kEventEvicted:
      return "Job was evicted.";
    case kEventTerminated:
      return "Job terminated.";
    case kEventAborted:
      return "Job was aborted.";
    case kEventSuspended:
      return "Job was suspended.";
    case kEventUnsuspended:
      return "Job was unsuspended.";
    case kEventHeld:
      return "Job was held.";
    case kEventReleased:
      return "Job was released.";
    case kEventGridSubmit:
      return "Job submitted to grid resource";
    case kEventJobDisconnected:
      return "Job disconnected, attempting to reconnect";
    case kEventJobReconnected:
      return "Job reconnected to ";
    case kEventJobReconnectFailed:
      return "Job reconnection failed";
    default:
      return "";
  }
}

std::string Usage(double seconds) {
  long s = std::lround(seconds);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%ld %02ld:%02ld:%02ld", s / 86400, (s / 3600) % 24, (s / 60) % 60,
                s % 60);
  return buf;
}

// A reason as body lines: each line of it tab-indented, so that no line of a reason can read as
// an entry's closing "..." or as the next entry's header.
std::string BodyText(const std::string& reason) {
  std::string out = "\n\t";
  for (char c : reason) {
    if (c == '\r') continue;
    out += c;
    if (c == '\n') out += '\t';
  }
  return out;
}

}  // namespace

std::string EventBody(int code, const std::string& detail) {
  std::string out = Headline(code);
  out += detail;
  return out;
}

std::string SubmitDetail(const std::string& host) {
  return host;
}

std::string TerminatedDetail(const ExecStatus& s, const RunBytes& b) {
  std::string out;
  if (s.kind == ExecStatus::Kind::kSignaled) {
    out += "\n\t(0) Abnormal termination (signal " + std::to_string(s.code) + ")";
    out += s.core ? "\n\t(1) Corefile in: core" : "\n\t(0) No core file";
  } else {
    out += "\n\t(1) Normal termination (return value " + std::to_string(s.code) + ")";
  }
  std::string run = "Usr " + Usage(s.utime) + ", Sys " + Usage(s.stime);
  out += "\n\t\t" + run + "  -  Run Remote Usage";
  out += "\n\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage";
  out += "\n\t\t" + run + "  -  Total Remote Usage";
  out += "\n\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage";
  // "Sent by the job": what it wrote to the submit host; "received": what it read from it.
  out += "\n\t" + std::to_string(b.run_sent) + "  -  Run Bytes Sent By Job\n\t" +
         std::to_string(b.run_received) + "  -  Run Bytes Received By Job";
  out += "\n\t" + std::to_string(b.total_sent) + "  -  Total Bytes Sent By Job\n\t" +
         std::to_string(b.total_received) + "  -  Total Bytes Received By Job";
  return out;
}

std::string LinesDetail(const std::string& text) {
  return BodyText(text);
}

std::string AbortedDetail(const std::string& reason) {
  return BodyText(reason);
}

std::string HeldDetail(const std::string& reason, int code, int subcode) {
  return BodyText(reason) + "\n\tCode " + std::to_string(code) + " Subcode " +
         std::to_string(subcode);
}

std::string ReleasedDetail(const std::string& reason) {
  return BodyText(reason);
}

std::string EvictedDetail(const ExecStatus* s) {
  std::string out = "\n\t(0) Job was not checkpointed.";
  double u = s ? s->utime : 0, y = s ? s->stime : 0;
  out += "\n\t\tUsr " + Usage(u) + ", Sys " + Usage(y) + "  -  Run Remote Usage";
  out += "\n\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage";
  return out;
}

std::string FormatEvent(int code, int cluster, int proc, double time, const std::string& body) {
  time_t t = static_cast<time_t>(time);
  struct tm tm;
  localtime_r(&t, &tm);
  char head[96];
  std::snprintf(head, sizeof head, "%03d (%03d.%03d.000) %04d-%02d-%02d %02d:%02d:%02d ", code,
                cluster, proc, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                tm.tm_sec);
  std::string out = head;
  out += body;
  out += "\n...\n";
  return out;
}

Status AppendUserLog(const std::string& path, const std::string& entries) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return FailErrno("open user log " + path);
  const char* p = entries.data();
  size_t left = entries.size();
  while (left) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return FailErrno("write user log " + path, err);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  ::close(fd);
  return {};
}

}  // namespace kite::agent
