// The pool's matchmaking.
#include "agent/negotiator.h"

#include "classad/match.h"

namespace kite::agent {

bool SlotMatches(const classad::ClassAd& job, const classad::ClassAd& slot) {
  if (!classad::Match(job, slot)) return false;
  auto runtime = job.EvaluateReal("MaxRuntime");
  auto ttl = slot.EvaluateReal("TimeToLive");
  return !(runtime && ttl && *runtime > *ttl);
}

std::optional<size_t> BestSlot(const classad::ClassAd& job,
                               const std::vector<const classad::ClassAd*>& slots) {
  std::optional<size_t> best;
  double best_job_rank = 0, best_slot_rank = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!SlotMatches(job, *slots[i])) continue;
    double job_rank = classad::Rank(job, *slots[i]);
    double slot_rank = classad::Rank(*slots[i], job);
    if (!best || job_rank > best_job_rank ||
        (job_rank == best_job_rank && slot_rank > best_slot_rank)) {
      best = i;
      best_job_rank = job_rank;
      best_slot_rank = slot_rank;
    }
  }
  return best;
}

}  // namespace kite::agent
