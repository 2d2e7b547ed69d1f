// condor_wait's form of `kite wait`: reads the log as it grows (a poll every 150 ms: user logs
// may sit on NFS, where inotify sees nothing of other hosts' writes) and keeps the bookkeeping
// in agent/userlog_reader.h.
#include "agent/cli/wait_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "agent/cli/util.h"
#include "agent/job.h"
#include "agent/userlog_reader.h"

namespace kite::cli {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::milliseconds(150);

// The user log, read on from where the last read stopped.
class LogFile {
 public:
  explicit LogFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) Die("cannot read user log " + path + ": " + std::strerror(errno));
    struct stat st;
    if (::fstat(fd_, &st) == 0 && S_ISDIR(st.st_mode))
      Die("cannot read user log " + path + ": it is a directory");
  }
  ~LogFile() { ::close(fd_); }
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;

  // Appends what was written since the last call to `*text`; returns the bytes read.
  size_t ReadMore(std::string* text) {
    size_t got = 0;
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) Die("cannot read user log " + path_ + ": " + std::strerror(errno));
      if (n == 0) break;
      text->append(buf, static_cast<size_t>(n));
      got += static_cast<size_t>(n);
    }
    offset_ += got;
    struct stat st;
    if (::fstat(fd_, &st) == 0 && static_cast<size_t>(st.st_size) < offset_)
      Die("user log " + path_ + " was truncated while being read; cannot follow it");
    return got;
  }

 private:
  std::string path_;
  int fd_ = -1;
  size_t offset_ = 0;
};

agent::LogWaitOptions OptionsOrDie(const WaitLogArgs& a) {
  agent::LogWaitOptions o;
  if (!a.job.empty()) {
    auto sel = agent::ParseJobSelector(a.job);
    if (!sel) Die("'" + a.job + "' is not a job id (C or C.P): " + sel.error().message());
    o.cluster = sel->cluster;
    o.proc = sel->proc;
  }
  if (a.num < 0) Die("-num needs a number of jobs above 0");
  if (a.wait && *a.wait < 0) Die("-wait needs a number of seconds, 0 or more");
  o.num = a.num;
  return o;
}

std::string Summary(const agent::LogWait& w) {
  std::string s = std::to_string(w.ended()) + " of " + std::to_string(w.known()) + " job(s) ended";
  if (w.held() > 0) s += ", " + std::to_string(w.held()) + " held";
  if (w.known() > w.ended()) s += "; waiting for " + w.Pending();
  return s;
}

}  // namespace

void WaitOnLog(const WaitLogArgs& a) {
  agent::LogWait wait(OptionsOrDie(a));
  LogFile file(a.log);
  auto deadline = a.wait ? Clock::now() + std::chrono::seconds(*a.wait) : Clock::time_point::max();
  std::string unread;  // the tail not yet consumed: an entry still being written
  size_t line = 1;
  for (;;) {
    size_t got = file.ReadMore(&unread);
    auto chunk = agent::ParseUserLog(unread, line);
    if (!chunk) Die("user log " + a.log + ": " + chunk.error().message());
    for (auto& e : chunk->events) {
      if (a.echo) std::fwrite(e.text.data(), 1, e.text.size(), stdout);
      if (wait.Add(e) && a.status)
        std::printf("%d.%d: %s\n", e.cluster, e.proc, e.headline.c_str());
    }
    unread.erase(0, chunk->consumed);
    line += chunk->lines;
    if (a.debug && got > 0)
      std::fprintf(stderr, "kite: read %zu byte(s), %zu event(s); %s\n", got, chunk->events.size(),
                   Summary(wait).c_str());
    std::fflush(stdout);
    if (wait.Done()) {
      std::printf("All jobs done.\n");
      return;
    }
    // Everything written so far is read and names none of the jobs: condor_wait expects at
    // least one to have been submitted to the log before it starts.
    if (wait.known() == 0 && unread.empty()) {
      Die(a.job.empty() ? "no jobs in user log " + a.log
                        : "job " + a.job + " is not in user log " + a.log,
          kWaitNoSuchJob);
    }
    auto now = Clock::now();
    if (now >= deadline) Die("timed out: " + Summary(wait), kWaitTimedOut);
    std::this_thread::sleep_for(std::min<Clock::duration>(kPoll, deadline - now));
  }
}

}  // namespace kite::cli
