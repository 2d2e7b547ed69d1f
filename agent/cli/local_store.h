// The CLI's read-only view of the agent's queue store, for `kite history` and `kite log` when no
// agent answers: the same SQLite file, opened for reading only, so nothing is changed and a
// running agent is not disturbed.
#pragma once

#include <memory>
#include <vector>

#include "agent/job.h"
#include "classad/classad.h"
#include "classad/expr.h"
#include "store/job_queue_store.h"

namespace kite::cli {

// The queue of KITE_HOME, read-only; dies with a message when it cannot be read.
std::unique_ptr<store::JobQueueStore> OpenQueueReadOnlyOrDie();

// Jobs in history that `sel` names (none: all) and `constraint` (null: none) accepts, newest
// first, at most `limit` (0: all); dies when the store cannot be read.
struct HistoryRows {
  std::vector<agent::JobKey> keys;
  std::vector<classad::ClassAd> ads;
};
HistoryRows ReadHistory(store::JobQueueStore& queue, std::vector<agent::JobSelector> sel,
                        const classad::ExprPtr& constraint, size_t limit);

}  // namespace kite::cli
