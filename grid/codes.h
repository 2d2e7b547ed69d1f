// The numbers the agent <-> gridmanager messages carry (docs/api.md, "The gridmanager's API"):
// HTCondor's own (common/htcondor_codes.h) and the one Kite adds.
#pragma once

#include "common/htcondor_codes.h"

namespace kite::grid {

// A JobStatus that grid/jobs and grid/update results use for a job that left the queue (no ad
// follows). HTCondor's statuses start at 1.
inline constexpr int kStatusLeftQueue = 0;

// The JobStatus grid/jobs gives an Idle job that the broker is moving off its site (its
// GridMigrate is set): the gridmanager cancels it there if it has not started, then lets it go
// (docs/broker.md, "Moving queued jobs").
inline constexpr int kStatusMoving = 100;

}  // namespace kite::grid
