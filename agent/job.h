// The agent's in-memory jobs and clusters (HTCondor's job ads, split cluster / proc).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "classad/classad.h"
#include "common/error.h"
#include "common/htcondor_codes.h"
#include "store/job_queue_store.h"

namespace kite::agent {

using store::JobKey;

const char* StatusLetter(int status);  // "I", "R", "X", "C", "H"
const char* StatusName(int status);    // "Idle", "Running", ...

// Limits (docs/api.md, "Limits"). Job ids are ClusterId.ProcId, each from 0 to kMaxJobId
// (cluster ids from 1); anything larger is refused, never truncated.
inline constexpr int64_t kMaxJobId = 2147483647;
inline constexpr size_t kMaxJobsPerSubmit = 100000;
inline constexpr size_t kMaxApiBody = size_t{64} << 20;  // bytes of one request to the agent

struct Cluster {
  int id = 0;
  classad::ClassAd ad;  // attributes common to every job of the cluster
  int total = 0;        // jobs submitted
  int present = 0;      // jobs still in the queue
  bool stored = false;  // written to the store (possibly in a transaction not yet committed)
  bool loaded = false;  // known to be on disk (committed)
  // JSON members of the cluster ad, rendered once on first use by `q -json`.
  std::vector<std::pair<std::string, std::string>> json_members;
};

struct Job {
  JobKey key;
  Cluster* cluster = nullptr;  // owned by the queue; outlives the job
  classad::ClassAd ad;         // the job's own attributes; its parent is cluster->ad
  int status = kIdle;          // mirrors the JobStatus attribute
  int universe = kUniverseVanilla;

  // Run-time state of a local job; not persisted (the spool directory is the durable record).
  pid_t pid = 0;           // kite-exec wrapper, when our child
  bool starting = false;   // its wrapper is being spawned (the pid is not known yet)
  bool adopted = false;    // running under a wrapper that survived an agent restart
  bool kill_sent = false;  // SIGTERM sent; SIGKILL follows after kill_grace
  double kill_deadline = 0;
  bool dirty = false;  // changed since the last flush
  // A local job that exits and is run again at once (on_exit_remove false) waits this long
  // first: 1 s after a short run, doubling up to 60 s while its runs stay short.
  double not_before = 0;  // unix time
  double restart_delay = 0;
  // Grid jobs: the agent's change counter when the job last changed in a way its gridmanager
  // must hear of (submitted, removed, held, released). Not persisted.
  uint64_t grid_gen = 0;
};

std::string JobIdString(JobKey k);  // "12.3"
// "12.3" -> {12, 3}; nullopt for anything that is not two whole numbers within kMaxJobId.
std::optional<JobKey> ParseJobIdString(std::string_view id);

// A job selector from the CLI, the API or the REST endpoint: "C" (a cluster) or "C.P" (one job).
// Parsing refuses ids out of range (above kMaxJobId, negative, cluster 0) rather than wrapping.
struct JobSelector {
  int cluster = 0;
  int proc = -1;  // -1: the whole cluster
};
Result<JobSelector> ParseJobSelector(std::string_view text);

}  // namespace kite::agent
