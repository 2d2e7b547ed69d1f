// The interface between the job manager and a local batch system, and the registry of adapters by
// name (`fork`, `slurm`, `sge`; another is new files plus one registry line).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/exec_status.h"
#include "gram/protocol.h"

namespace kite::gram::batch {

// One job for the batch system. Every adapter runs the program under kite-exec with `control_dir`
// as its --dir, so the outcome is in control_dir/status whatever the batch system reports.
struct JobSpec {
  std::string name;         // short and unique per job (the job id): names it in batch listings
  std::string control_dir;  // exists; holds lock, status, pid (the adapter's bookkeeping)
  std::string cwd;          // the job's working directory
  std::string program;      // absolute path
  std::vector<std::string> args;
  std::vector<std::string> env;  // "NAME=value": the job's whole environment
  std::string stdin_path = "/dev/null";
  std::string stdout_path;
  std::string stderr_path;
  ResourceRequest resources;  // what the job asks of the batch system (ignored by fork)
};

enum class BatchState {
  kQueued,   // accepted, not yet running
  kRunning,  // running
  kEnded,    // ended: `exit` holds how
  kLost,     // the batch system no longer knows the job and it left no outcome
};

struct BatchOutcome {
  BatchState state = BatchState::kQueued;
  std::optional<ExecStatus> exit;  // when kEnded: how the job ended (see limit_exceeded)
  // kEnded: the batch system stopped the job because it went past a limit the batch system
  // enforces (its walltime, its memory); `exit`, when set, says how the job died of it.
  bool limit_exceeded = false;
  // The batch system's account of a kLost or limit_exceeded end, for the failure message.
  std::string reason;
};

struct AdapterOptions {
  std::string exec_path;  // kite-exec
  // Adapters that ask a batch system's daemons (slurm) ask at most this often; Poll calls in
  // between answer nothing new. The fork adapter looks at its files on every Poll.
  std::chrono::milliseconds poll_interval{1000};
  // The job manager's environment ("NAME=value"), read once at its start: where the batch tools
  // are (PATH; none: /usr/local/bin:/usr/bin:/bin) and which cluster they talk to (slurm:
  // SLURM_CONF; sge: SGE_ROOT, SGE_CELL, SGE_QMASTER_PORT, SGE_EXECD_PORT, and KITE_SGE_PE).
  // Adapters never read the process's environment themselves.
  std::vector<std::string> environment;
  // fork only, a test aid (docs/batch.md, "A slow or drained fork site"): a file of
  // `slots N` (jobs running at once; 0: none starts, the site is drained) and `start_delay S`
  // (seconds a job waits before it may start), read again whenever it changes. "": no limits.
  std::string fork_limits_file;
};

// The site as its batch system sees it, for the gatekeeper's `info` answer (docs/protocol.md,
// "Site information"). Counts are of the whole system (every user), where the system says them.
struct SiteInfo {
  std::string batch_system;         // "fork", "slurm", "sge"
  std::vector<std::string> queues;  // partitions (Slurm) or cluster queues (Grid Engine)
  std::string default_queue;        // where a job naming none goes ("" when unknown)
  int64_t total_cpus = 0;           // cores the system may give jobs
  int64_t free_cpus = 0;            // of those, idle now
  int64_t memory_mb = 0;            // memory of one node (the largest), MiB
  int64_t max_walltime_s = 0;       // the longest run-time limit a job may ask; 0: no limit
  int64_t running_jobs = 0;
  int64_t pending_jobs = 0;
  // The system's own estimate of when a job submitted now would start, seconds from now (Slurm:
  // from `squeue --start`); nullopt when it has none.
  std::optional<double> estimated_start_s;
};

// Adapters are used from one thread (the job manager's event loop) unless they say otherwise.
class BatchAdapter {
 public:
  virtual ~BatchAdapter() = default;
  virtual std::string_view Name() const = 0;

  // Hands the job to the batch system and returns its batch id. Idempotent per control_dir: when
  // the job was already handed over (a restart between Submit and storing its id), returns the
  // same id without starting it again. kUnavailable: the batch system could not be asked now and
  // nothing was decided (the caller tries again later); kInvalidInput: it refused what the job
  // asks for (another try cannot work); any other error: it refused the job.
  virtual Result<std::string> Submit(const JobSpec& spec) = 0;

  // The state of every id in one call (a batch system is asked once, not once per job). Ids
  // missing from the answer could not be asked about this time (ask again later).
  virtual std::map<std::string, BatchOutcome> Poll(const std::vector<std::string>& ids) = 0;

  // Asks the job (its whole process tree) to stop; cancelling a job that already ended succeeds.
  // A request may be lost while the job is still starting: callers repeat it until Poll reports
  // the end (the job manager does so on every pass).
  virtual Status Cancel(const std::string& id) = 0;

  // What the site offers now (SiteInfo). May ask the batch system: callers cache the answer.
  // kUnavailable when the system could not be asked.
  virtual Result<SiteInfo> Info() = 0;
};

// The adapter registered as `name`; kNotFound names the known ones.
Result<std::unique_ptr<BatchAdapter>> MakeAdapter(std::string_view name,
                                                  const AdapterOptions& options);
std::vector<std::string> AdapterNames();

}  // namespace kite::gram::batch
