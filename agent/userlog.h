// HTCondor's user-log text format, so existing tools can read the `log` file a job names.
//
//   005 (012.003.000) 2026-11-22 10:00:01 Job terminated.
//   	(1) Normal termination (return value 0)
//   ...
//
// The same event bodies are kept in the queue's event table and shown by `kite log`.
#pragma once

#include <string>

#include "common/error.h"
#include "common/exec_status.h"
#include "common/htcondor_codes.h"

namespace kite::agent {

// The first line's text for a code ("Job submitted from host: ..." etc.) followed by the body
// lines; `detail` lines are already tab-indented.
std::string EventBody(int code, const std::string& detail);

std::string SubmitDetail(const std::string& host);
// Bytes a job's program read and wrote through remote system calls (docs/remote-io.md): this
// run's and the job's total, for the terminated event's "Bytes Sent/Received By Job" lines.
struct RunBytes {
  int64_t run_sent = 0, run_received = 0, total_sent = 0, total_received = 0;
};
std::string TerminatedDetail(const ExecStatus& s, const RunBytes& bytes = {});
std::string AbortedDetail(const std::string& reason);
std::string HeldDetail(const std::string& reason, int code, int subcode);
std::string ReleasedDetail(const std::string& reason);
std::string EvictedDetail(const ExecStatus* s);
// Free text as body lines (each tab-indented).
std::string LinesDetail(const std::string& text);

// One whole entry: header line, body, and the closing "...".
std::string FormatEvent(int code, int cluster, int proc, double time, const std::string& body);

// Appends to a user log (O_APPEND: concurrent writers do not interleave within an entry).
Status AppendUserLog(const std::string& path, const std::string& entries);

}  // namespace kite::agent
