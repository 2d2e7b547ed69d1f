// Reading HTCondor user logs in the classic text format (what agent/userlog.cpp writes, and what
// HTCondor's own daemons write): a pure parse of text into events, and the bookkeeping of
// `kite wait LOGFILE` (condor_wait) over those events. No I/O here: the caller reads the file.
//
//   000 (012.003.000) 2026-11-25 10:00:00 Job submitted from host: <127.0.0.1:0>
//   ...
//   005 (012.003.000) 2026-11-25 10:00:01 Job terminated.
//   	(1) Normal termination (return value 0)
//   ...
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace kite::agent {

struct UserLogEvent {
  int code = 0;  // ULOG_* (common/htcondor_codes.h): 0 submitted, 5 terminated, 9 aborted ...
  int cluster = 0, proc = 0, subproc = 0;
  std::string time;      // as written: "2026-11-25 10:00:01" (or HTCondor's older "11/25 10:00:01")
  std::string headline;  // the rest of the first line: "Job terminated."
  std::string text;      // the whole entry as written, header to the closing "...\n"
};

struct UserLogChunk {
  std::vector<UserLogEvent> events;
  // Bytes of the text through the last complete entry, and the lines in them. What follows is
  // an entry still being written: read it again, with more, next time.
  size_t consumed = 0;
  size_t lines = 0;
};

// Parses the complete entries at the start of `text`. An entry is a header line
// "NNN (C.P.S) DATE TIME HEADLINE", body lines, and a closing line "..."; entries are written
// whole, so anything after the last closing line is an entry still being written, left
// unconsumed (a last line without its newline is never read as complete). Refuses, with
// kInvalidInput naming the line (numbered from `first_line`), text that is not such a log: a
// complete line that should be a header and is not, an XML log, a NUL byte.
Result<UserLogChunk> ParseUserLog(std::string_view text, size_t first_line = 1);

// Which jobs `kite wait LOGFILE [JOBID]` waits for, and how many.
struct LogWaitOptions {
  int cluster = -1;  // -1: every job in the log
  int proc = -1;     // -1: every job of `cluster`
  int num = 0;       // > 0: done once this many of those jobs have ended; 0: once all have
};

// condor_wait's bookkeeping, fed a log's events in order. A job is known from its first event
// (normally "submitted") and has ended with "terminated" (005) or "aborted" (009); held jobs may
// still be released, so they are waited for.
class LogWait {
 public:
  enum class JobState { kSubmitted, kRunning, kHeld, kEnded };

  explicit LogWait(LogWaitOptions options) : options_(options) {}

  // Takes one event; returns true when it concerns a job this wait is about.
  bool Add(const UserLogEvent& e);

  // True once the wait is over: `num` jobs have ended, or (without `num`) at least one job is
  // known and every known job has ended.
  bool Done() const;

  size_t known() const { return jobs_.size(); }
  size_t ended() const { return ended_; }
  size_t held() const;
  // "12.0 12.3": the jobs not yet ended, at most `max` of them (then "...").
  std::string Pending(size_t max = 10) const;

 private:
  LogWaitOptions options_;
  std::map<std::pair<int, int>, JobState> jobs_;
  size_t ended_ = 0;
};

}  // namespace kite::agent
