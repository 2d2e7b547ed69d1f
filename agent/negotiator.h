// The pool's matchmaking (docs/pool.md, "Matchmaking"), pure: which idle job goes to which free
// slot. HTCondor's rules: a match needs the job's Requirements true against the slot and the
// slot's Requirements (its START) true against the job; a job takes the slot its Rank values
// highest, then the one whose Rank values the job highest. A job whose MaxRuntime does not fit
// in a slot's TimeToLive does not match it. With one user there is no fair share: jobs go in
// order of JobPrio (higher first), then of submission (cluster, process).
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "classad/classad.h"

namespace kite::agent {

// Whether `job` and `slot` match both ways (and the job's MaxRuntime fits the slot's life).
bool SlotMatches(const classad::ClassAd& job, const classad::ClassAd& slot);

// The index in `slots` of the slot `job` should take, or nullopt when none matches.
std::optional<size_t> BestSlot(const classad::ClassAd& job,
                               const std::vector<const classad::ClassAd*>& slots);

// Jobs that match alike (HTCondor's autoclusters): two jobs are of one kind when every attribute
// matchmaking could read has the same expression in both, so a negotiation that found no free
// slot for one job skips the others of its kind. Which attributes could be read is found
// conservatively, by name: every name anywhere in the free slots' ads, every name in the job's
// Requirements, Rank and MaxRuntime, and every name in the job's attributes those name, in turn.
// A name too many only splits a kind in two; a name too few cannot happen unless an expression
// looks an attribute up by a computed name (eval()), and then the job has no kind.
class MatchKinds {
 public:
  // `slots`: the free slots this negotiation offers.
  explicit MatchKinds(const std::vector<const classad::ClassAd*>& slots);
  // The job's kind, or nullopt when it cannot be told (each such job is tried on its own).
  std::optional<std::string> KindOf(const classad::ClassAd& job) const;

 private:
  std::set<std::string> slot_names_;  // lowercase
  bool dynamic_ = false;              // a slot's expression computes names: no kinds at all
};

// The names (lowercase) an expression's text mentions: attributes, scopes and functions alike.
void NamesIn(std::string_view text, std::set<std::string>* names);

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
