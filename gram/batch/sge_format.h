// What the Grid Engine adapter writes to and reads from Grid Engine's commands, as pure functions:
// the job script and qsub's arguments and environment, the parsers of qsub -terse, qstat -xml and
// qacct -j output, and the mapping of Grid Engine's job states and accounting records to a
// BatchOutcome. No I/O: tests and the fuzz target drive them directly.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/exec_status.h"
#include "gram/batch/batch_adapter.h"

namespace kite::gram::batch::sge {

// The job's name in Grid Engine's listings: "kite-" + spec.name. Also how a restarted job manager
// finds a job whose id it did not get to store.
std::string JobName(const JobSpec& spec);

// The job script: `exec kite-exec ... -- PROGRAM ARGS` with every word single-quoted, so
// kite-exec records the job's exact end in control_dir/status whatever Grid Engine reports. It
// has no `#$` line: every request is a qsub argument.
std::string JobScript(const JobSpec& spec, const std::string& exec_path);

// qsub's arguments after the program name (options, then `script_path`). `pe` is the parallel
// environment that carries a request for more than one CPU (`-pe PE N`); with none, such a
// request is an error (kInvalidInput). Paths Grid Engine would read as host:path (a ':' in
// them) are refused the same way.
Result<std::vector<std::string>> QsubArgs(const JobSpec& spec, const std::string& script_path,
                                          const std::string& pe);

// qsub's environment, which Grid Engine hands to the job (-V): the job's own variables without
// those Grid Engine's commands read as settings (SGE_*), then `cell_env` (the adapter's SGE_ROOT,
// SGE_CELL, SGE_QMASTER_PORT, SGE_EXECD_PORT as "NAME=value"), so qsub and the job find the cell.
std::vector<std::string> QsubEnvironment(const std::vector<std::string>& job_env,
                                         const std::vector<std::string>& cell_env);

// The job number in `qsub -terse` output ("123", or "123.1-4:1" for an array).
Result<std::string> ParseQsubOutput(std::string_view out);

// One job of `qstat -xml` output.
struct QstatRow {
  std::string id;     // JB_job_number
  std::string name;   // JB_name
  std::string state;  // "qw", "hqw", "r", "t", "dr", "Eqw", ...
};
// Parses `qstat -xml` output (running jobs under queue_info, pending ones under job_info), keyed
// by job number; an array job's tasks are one row (the first task's state). kProtocol when the
// text is not qstat's XML document (truncated, no job_info root, a job without number or state).
Result<std::map<std::string, QstatRow>> ParseQstatXml(std::string_view xml);

// One accounting record, as `qacct -j ID` prints it.
struct AcctRecord {
  std::string id;           // jobnumber
  std::string name;         // jobname
  int failed = 0;           // 0: the job script ran to its end; else Grid Engine's failure code
  std::string failed_text;  // its words ("qmaster enforced h_rt, h_cpu, or h_vmem limit")
  int exit_status = 0;      // the job script's exit status; 128+N: killed by signal N
  double wallclock_s = 0;   // ru_wallclock
  std::string category;     // the job's requests ("-l h_rt=30 -pe smp 2", or "NONE")
};
// The last record of `qacct -j ID` output (an array job has one per task). kNotFound when there
// is none ("error: job id 12 not found", or no accounting file yet); kProtocol when the text is
// not qacct's.
Result<AcctRecord> ParseQacct(std::string_view out);

// The h_rt (seconds) a job asked for, from its accounting category; 0 when it asked none.
long HardRuntime(std::string_view category);

// What a Grid Engine job state means for Kite.
enum class Phase {
  kWaiting,  // not started (qw, hqw, Rq, ...)
  kRunning,  // started, not over (r, t, Rr, s, S, T, dr, hr, ...)
  kError,    // the job is in Grid Engine's error state (E: Eqw), where it stays until an admin acts
  kUnknown,  // a state this adapter does not know
};
Phase ClassifyState(std::string_view state);

// What is known of a job that qstat no longer lists.
struct Ended {
  std::optional<ExecStatus> status;  // kite-exec's record
  bool wrapper_alive = false;        // kite-exec still holds its lock
  std::optional<AcctRecord> acct;    // Grid Engine's accounting record
  bool acct_given_up = false;        // no record appeared in the time one should have
};

// The outcome of job `sge_id` from qstat's word (`row`; nullopt when qstat no longer lists the
// job) and what is known of an ended job. `detail` is added to the reason of a lost job (where
// Grid Engine's own output of the script went). nullopt: nothing can be said now (a state this
// adapter does not know, or an ended job whose accounting record is not written yet).
std::optional<BatchOutcome> DecideOutcome(const std::string& sge_id,
                                          const std::optional<QstatRow>& row, const Ended& ended,
                                          const std::string& detail = "");

// Site information (BatchAdapter::Info) from Grid Engine's answers:
//   queues:  `qstat -g c` (one line per cluster queue: CQLOAD USED RES AVAIL TOTAL ...; slots of
//            disabled or suspended queue instances are not AVAIL)
//   jobs:    `qstat -u * -xml` (every user's jobs, ParseQstatXml)
//   hosts:   `qhost` (MEMTOT of each host, "23.4G")
//   limits:  `qconf -sq QUEUE` of each queue, in the order of `queues` (its h_rt)
// Grid Engine has no start-time estimate. kProtocol when `queues` names no queue.
Result<SiteInfo> ParseSiteInfo(std::string_view queues, std::string_view jobs,
                               std::string_view hosts, const std::vector<std::string>& limits);
// The cluster queues `qstat -g c` names.
std::vector<std::string> QueueNames(std::string_view queues);
// Seconds of an h_rt value ("INFINITY" -> 0, "1:30:00", "5400"); nullopt when malformed.
std::optional<int64_t> ParseHardRuntime(std::string_view text);

}  // namespace kite::gram::batch::sge
