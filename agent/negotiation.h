// The pool's negotiation pass (docs/pool.md, "Matchmaking"): the idle jobs, in their order, each
// against the free slots of an ordered list of slot sources — the pool's own collector (the local
// startd and the glide-ins) today; another pool's collector (flocking) goes after it. A job takes
// the best slot of the first source that has one for it (agent/negotiator.h, BestSlot), as
// HTCondor's schedd tries its own pool before the ones it flocks to.
//
// A pass is cut in slices of `slice` seconds of matchmaking, so the agent's other work is
// answered in between: Run() does one slice and says whether the pass is over; the next slice
// resumes after the last job the previous one looked at. Jobs of a kind (MatchKinds) that matched
// none of a source's free slots are not tried again on that source while none of its slots
// becomes free.
//
// Pure: it reads slot ads and job ads and says which job goes where; starting the runs is the
// caller's (agent/pool.cpp). Used on one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/job.h"
#include "agent/negotiator.h"
#include "classad/classad.h"
#include "common/clock.h"

namespace kite::agent {

// A slot a source offers for a match now.
struct SlotOffer {
  std::string name;
  const classad::ClassAd* ad = nullptr;  // valid until the slice that got it returns
  bool site = false;                     // a glide-in's slot at a site, not the desktop's own
};

// Where slots come from.
class SlotSource {
 public:
  virtual ~SlotSource() = default;
  // A number that changes whenever a slot ad of this source comes, goes or changes.
  virtual uint64_t generation() const = 0;
  // Every slot's ad, free or not (a job's kind is told over them).
  virtual std::vector<const classad::ClassAd*> AllAds() const = 0;
  // The slots a match may take now, in a stable order (ties in Rank go to the first).
  virtual std::vector<SlotOffer> FreeSlots() = 0;
};

class NegotiationPass {
 public:
  using IdleJobs = std::set<std::pair<JobOrder, JobKey>>;
  struct Hooks {
    // The job's ad while it is still idle; nullptr when it is not (it is passed over).
    std::function<const classad::ClassAd*(const JobKey&)> idle_ad;
    // Whether the job may run on the desktop's own slots; when not, only sites' slots are
    // offered to it (a site's checkpoint image, docs/checkpoints.md).
    std::function<bool(const classad::ClassAd&)> may_run_here;
  };
  struct Match {
    JobKey job;
    size_t source = 0;  // its index in the sources
    std::string slot;
  };
  // What a pass did, for the log.
  struct Summary {
    size_t considered = 0;  // jobs tried against the free slots
    size_t skipped = 0;     // jobs of a kind that matched none
    size_t matched = 0;
    size_t slices = 0;
    double busy = 0;     // seconds spent matching, all slices
    double elapsed = 0;  // seconds from the first slice's start to the last one's end
  };
  struct Slice {
    std::vector<Match> matches;
    bool over = false;               // the pass ended with this slice
    std::optional<Summary> summary;  // when over
    bool again = false;              // when over: something changed during it, pass again
  };

  // `sources` are asked in their order; they outlive the pass.
  NegotiationPass(std::vector<SlotSource*> sources, Hooks hooks, const Clock& clock,
                  double slice_seconds);

  // One slice of the pass (the first starts it) over `idle` as it is now.
  Slice Run(const IdleJobs& idle);
  // Something changed while a pass is going (a job became idle, a slot came): another pass
  // follows this one. Returns false when no pass is going (the caller starts one).
  bool Again();
  bool active() const { return active_; }

 private:
  // What the pass keeps per source between slices.
  struct Kept {
    std::unique_ptr<MatchKinds> kinds;  // over every slot's ad, as of generation `built`
    uint64_t built = 0;
    std::set<std::string> unmatched;  // kinds that matched none of the slots free in `free`
    std::set<std::string> free;       // the slots free when the last slice ended
  };

  std::vector<SlotSource*> sources_;
  Hooks hooks_;
  const Clock& clock_;
  double slice_;
  std::vector<Kept> kept_;
  bool active_ = false;
  bool again_ = false;
  std::optional<std::pair<JobOrder, JobKey>> after_;
  Summary summary_;
  double began_ = 0;
};

}  // namespace kite::agent
