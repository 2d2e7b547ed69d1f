// kite-gridmanager: drives every grid-universe job of one proxy through its life at the sites
// (docs/architecture.md, "The grid path"): delegation, two-phase submit, callbacks and probes,
// output through its GASS server, commit-end, resubmission and holds.
//
// All it knows lives in the agent's queue: each job's Grid* attributes record how far it got, and
// every step that the next one depends on is committed there first (docs/architecture.md, "Write
// ahead, then act"). Request ids come from (QDate, ClusterId, ProcId, attempt), so a gridmanager
// restarted at any instruction re-sends the same requests and the sites answer them from their
// records.
//
// This is the shell: the lock, the proxy, the servers and the real links. The jobs are the
// engine's (gridmanager/engine.h), their states the grid job's machine's
// (gridmanager/grid_machine.h).
//
// Threads: one io_context thread owns all state; blocking protocol and agent calls run on a small
// thread pool and post their results back; the GASS and callback servers have their own threads.
#pragma once

#include <memory>
#include <string>

#include "common/error.h"

namespace kite::gridmanager {

struct GridManagerOptions {
  std::string home;                       // KITE_HOME: the agent's socket and the lock live there
  std::string proxy;                      // the proxy file whose jobs this gridmanager drives
  std::string ca_dir;                     // trusted CAs ("" = credentials::DefaultCaDir())
  std::string listen_host = "127.0.0.1";  // address of the GASS and callback servers
  double probe_interval = 60;             // status probe of a job not heard from for this long
  int max_resubmits = 3;                  // site failures retried this many times, then held
  int max_jobs_per_resource = 1000;       // jobs submitted and not yet finished at one site
  int max_requests_per_resource = 8;      // requests in flight to one site
  int threads = 16;                       // for blocking calls
  double linger = 3;                      // seconds without jobs before exiting
};

class GridManager {
 public:
  explicit GridManager(GridManagerOptions options);
  ~GridManager();
  GridManager(const GridManager&) = delete;
  GridManager& operator=(const GridManager&) = delete;

  // Takes the per-proxy lock (waiting up to 30 s for a predecessor to exit), loads the proxy,
  // starts the GASS and callback servers and connects to the agent.
  Status Start();
  // Runs until no jobs remain (returns 0) or the agent goes away (returns 3).
  int Run();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kite::gridmanager
