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
#include "gridmanager/options.h"

namespace kite::gridmanager {

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
