// `kite wait LOGFILE [JOBID]`, condor_wait's form: follows an HTCondor user log until the jobs in
// it have ended. It only reads the file, so it needs no agent (and works on logs HTCondor wrote).
#pragma once

#include <optional>
#include <string>

namespace kite::cli {

// `kite wait`'s exit statuses, both forms: 0 all done, 1 an error (no agent, a bad argument, a
// log that cannot be read).
constexpr int kWaitNoSuchJob = 2;
constexpr int kWaitTimedOut = 3;
constexpr int kWaitHeld = 4;  // only held jobs left, and nothing but the user will release them

struct WaitLogArgs {
  std::string log;
  std::string job;          // "" (every job in the log), "C" or "C.P"
  int num = 0;              // > 0: done once this many jobs have ended
  std::optional<int> wait;  // seconds; none: no limit
  bool debug = false;       // what each read found, on stderr
  bool status = false;      // each event of a waited-for job, one line on stdout
  bool echo = false;        // every entry read, as written, on stdout
};

// Returns when the jobs have ended; otherwise ends the verb (Die) with the status above.
void WaitOnLog(const WaitLogArgs& a);

}  // namespace kite::cli
