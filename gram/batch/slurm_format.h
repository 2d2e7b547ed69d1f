// What the Slurm adapter writes to and reads from Slurm's commands, as pure functions: the batch
// script and sbatch's arguments and environment, and the parsers of sbatch, squeue and scontrol
// output, and the mapping of Slurm's job states to a BatchOutcome. No I/O: tests and the fuzz
// target drive them directly.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/exec_status.h"
#include "gram/batch/batch_adapter.h"

namespace kite::gram::batch::slurm {

// The job's name in Slurm's listings: "kite-" + spec.name. Also how a restarted job manager finds
// a job whose id it did not get to store.
std::string JobName(const JobSpec& spec);

// The batch script: `exec kite-exec ... -- PROGRAM ARGS` with every word single-quoted, so
// kite-exec records the job's exact end in control_dir/status whatever Slurm reports.
std::string BatchScript(const JobSpec& spec, const std::string& exec_path);

// sbatch's arguments after the program name (options, then `script_path`). Every request is an
// argument of its own (never a `#SBATCH` line), so no value can smuggle in another option.
std::vector<std::string> SbatchArgs(const JobSpec& spec, const std::string& script_path);

// sbatch's environment, which Slurm hands to the job (--export=ALL): the job's own variables
// without those Slurm's commands read as options (SLURM_*, SBATCH_*, SALLOC_*, SRUN_*), then
// `slurm_conf` (the adapter's SLURM_CONF) when set, so sbatch and the job find the cluster.
std::vector<std::string> SbatchEnvironment(const std::vector<std::string>& job_env,
                                           const std::string& slurm_conf);

// The job id in `sbatch --parsable` output ("123" or "123;cluster").
Result<std::string> ParseSbatchOutput(std::string_view out);

// The squeue output format the adapter asks for, and one parsed line of it.
inline constexpr char kSqueueFormat[] = "%i|%T|%r";
struct SqueueRow {
  std::string id;
  std::string state;   // "PENDING", "RUNNING", "COMPLETED", ...
  std::string reason;  // "None", "Priority", "NonZeroExitCode", ...
};
// Parses `squeue --noheader --format=%i|%T|%r` output, keyed by job id; lines that do not have
// that shape are skipped.
std::map<std::string, SqueueRow> ParseSqueue(std::string_view out);

// The KEY=VALUE fields of `scontrol --oneliner show job ID` output (the first job in it).
std::map<std::string, std::string> ParseScontrolJob(std::string_view out);

// What a Slurm job state means for Kite.
enum class Phase {
  kWaiting,   // not started (PENDING, REQUEUED, CONFIGURING, ...)
  kRunning,   // started, not over (RUNNING, SUSPENDED, COMPLETING, ...)
  kFinished,  // ended on its own (COMPLETED, FAILED): kite-exec's record says how
  kLimit,     // stopped by Slurm for going past a limit (TIMEOUT, OUT_OF_MEMORY, DEADLINE)
  kLost,      // ended by the site, not the job (CANCELLED, NODE_FAIL, PREEMPTED, BOOT_FAIL, ...)
  kUnknown,   // a state this adapter does not know
};
Phase ClassifyState(std::string_view state);

// The outcome of job `slurm_id` from Slurm's word (`row`; nullopt when Slurm no longer knows the
// job) and kite-exec's record (`status`, `wrapper_alive`). `detail` is added to the reason of a
// lost job (e.g. where Slurm's own output went). nullopt: nothing can be said now (a state this
// adapter does not know).
std::optional<BatchOutcome> DecideOutcome(const std::string& slurm_id,
                                          const std::optional<SqueueRow>& row,
                                          const std::optional<ExecStatus>& status,
                                          bool wrapper_alive, const std::string& detail = "");

// Site information (BatchAdapter::Info) from three of Slurm's answers:
//   nodes:      `sinfo --noheader --Node --format=%N|%C|%m` (a node once per partition it is in;
//               %C is "allocated/idle/other/total" CPUs; drained and down nodes' CPUs are "other")
//   partitions: `sinfo --noheader --format=%P|%a|%l` ("debug*|up|UNLIMITED"; * marks the default)
//   queue:      `squeue --noheader --all --states=PENDING,RUNNING --format=%T|%S` (state and
//               start time, for pending jobs Slurm's estimate, "N/A" when it has none)
// `now` is the Unix time the answers are about (start times are local time, as squeue prints).
// kProtocol when an answer has no line of its shape at all.
inline constexpr char kSinfoNodeFormat[] = "%N|%C|%m";
inline constexpr char kSinfoPartitionFormat[] = "%P|%a|%l";
inline constexpr char kSqueueStartFormat[] = "%T|%S";
Result<SiteInfo> ParseSiteInfo(std::string_view nodes, std::string_view partitions,
                               std::string_view queue, double now);

// Seconds of a Slurm time limit ("30", "30:00", "1:00:00", "2-12", "2-12:30:00"); 0 for
// UNLIMITED / INFINITE; nullopt when malformed.
std::optional<int64_t> ParseTimeLimit(std::string_view text);

}  // namespace kite::gram::batch::slurm
