// The pool's matchmaking (docs/pool.md, "Matchmaking"), pure: which idle job goes to which free
// slot. HTCondor's rules: a match needs the job's Requirements true against the slot and the
// slot's Requirements (its START) true against the job; a job takes the slot its Rank values
// highest, then the one whose Rank values the job highest. A job whose MaxRuntime does not fit
// in a slot's TimeToLive does not match it. With one user there is no fair share: jobs go in
// order of JobPrio (higher first), then of submission (cluster, process).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "classad/classad.h"

namespace kite::agent {

// Whether `job` and `slot` match both ways (and the job's MaxRuntime fits the slot's life).
bool SlotMatches(const classad::ClassAd& job, const classad::ClassAd& slot);

// The index in `slots` of the slot `job` should take, or nullopt when none matches.
std::optional<size_t> BestSlot(const classad::ClassAd& job,
                               const std::vector<const classad::ClassAd*>& slots);

struct JobOrder {
  long long prio = 0;
  int cluster = 0, proc = 0;
  // Higher JobPrio first, then the earlier job.
  bool operator<(const JobOrder& o) const {
    if (prio != o.prio) return prio > o.prio;
    if (cluster != o.cluster) return cluster < o.cluster;
    return proc < o.proc;
  }
};

}  // namespace kite::agent
