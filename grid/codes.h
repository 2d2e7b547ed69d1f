// The numbers the agent <-> gridmanager messages carry (docs/api.md, "The gridmanager's API"):
// HTCondor's own (common/htcondor_codes.h) and the one Kite adds.
#pragma once

#include "common/htcondor_codes.h"

namespace kite::grid {

// A JobStatus that grid/jobs and grid/update results use for a job that left the queue (no ad
// follows). HTCondor's statuses start at 1.
inline constexpr int kStatusLeftQueue = 0;

}  // namespace kite::grid
