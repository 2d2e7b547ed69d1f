// The negotiation pass over ordered slot sources.
#include "agent/negotiation.h"

#include <algorithm>

namespace kite::agent {

NegotiationPass::NegotiationPass(std::vector<SlotSource*> sources, Hooks hooks, const Clock& clock,
                                 double slice_seconds)
    : sources_(std::move(sources)),
      hooks_(std::move(hooks)),
      clock_(clock),
      slice_(slice_seconds),
      kept_(sources_.size()) {}

bool NegotiationPass::Again() {
  if (!active_) return false;
  again_ = true;  // jobs before the pass's place, or slots it ruled out, may match now
  return true;
}

NegotiationPass::Slice NegotiationPass::Run(const IdleJobs& idle) {
  double began = clock_.Steady();
  if (!active_) {
    active_ = true;
    again_ = false;
    after_.reset();
    summary_ = Summary{};
    began_ = began;
    // A new pass: whatever ruled kinds out before may have changed. The kinds themselves hold
    // while the source's ads do.
    for (auto& k : kept_) {
      k.unmatched.clear();
      k.free.clear();
    }
  }
  ++summary_.slices;

  // What each source offers in this slice.
  struct Offered {
    std::vector<SlotOffer> free;
    std::vector<const classad::ClassAd*> ads;  // free[i].ad, as BestSlot takes them
    std::set<std::string> names;
  };
  std::vector<Offered> offered(sources_.size());
  for (size_t i = 0; i < sources_.size(); ++i) {
    Kept& k = kept_[i];
    Offered& o = offered[i];
    o.free = sources_[i]->FreeSlots();
    bool more_free = false;  // a slot is free that was not when the last slice ended
    for (const auto& s : o.free) {
      o.ads.push_back(s.ad);
      o.names.insert(s.name);
      more_free = more_free || !k.free.contains(s.name);
    }
    // Kinds are told over every slot's ad, so they hold while the ads do; a kind that matched
    // none of the free slots is skipped while no other slot becomes free.
    uint64_t generation = sources_[i]->generation();
    if (!k.kinds || k.built != generation) {
      k.kinds = std::make_unique<MatchKinds>(sources_[i]->AllAds());
      k.built = generation;
      k.unmatched.clear();
    }
    if (more_free) k.unmatched.clear();
  }
  auto any_free = [&] {
    return std::any_of(offered.begin(), offered.end(),
                       [](const Offered& o) { return !o.free.empty(); });
  };

  Slice slice;
  bool out_of_time = false;
  for (auto it = after_ ? idle.upper_bound(*after_) : idle.begin(); it != idle.end() && any_free();
       ++it) {
    if (clock_.Steady() - began >= slice_) {
      out_of_time = true;
      break;
    }
    after_ = *it;
    const JobKey& key = it->second;
    const classad::ClassAd* ad = hooks_.idle_ad(key);
    if (!ad) continue;
    bool here = hooks_.may_run_here(*ad);
    bool tried = false;
    for (size_t i = 0; i < sources_.size(); ++i) {
      Offered& o = offered[i];
      if (o.free.empty()) continue;
      Kept& k = kept_[i];
      auto kind = k.kinds->KindOf(*ad);
      if (kind && k.unmatched.contains(*kind)) continue;
      tried = true;
      std::optional<size_t> best;
      if (here) {
        best = BestSlot(*ad, o.ads);
        if (!best) {
          if (kind) k.unmatched.insert(std::move(*kind));
          continue;
        }
      } else {
        // Only the sites' slots are candidates. Its kind is not ruled out by its failing
        // (others of the kind may take the desktop's own slots).
        std::vector<size_t> sites;
        std::vector<const classad::ClassAd*> site_ads;
        for (size_t s = 0; s < o.free.size(); ++s) {
          if (!o.free[s].site) continue;
          sites.push_back(s);
          site_ads.push_back(o.ads[s]);
        }
        if (auto b = BestSlot(*ad, site_ads)) best = sites[*b];
        if (!best) continue;
      }
      slice.matches.push_back(Match{.job = key, .source = i, .slot = o.free[*best].name});
      o.names.erase(o.free[*best].name);
      auto at = static_cast<std::ptrdiff_t>(*best);
      o.free.erase(o.free.begin() + at);
      o.ads.erase(o.ads.begin() + at);
      break;
    }
    ++(tried ? summary_.considered : summary_.skipped);
  }
  for (size_t i = 0; i < sources_.size(); ++i) kept_[i].free = std::move(offered[i].names);
  double now = clock_.Steady();
  summary_.busy += now - began;
  summary_.matched += slice.matches.size();
  if (out_of_time) return slice;
  slice.over = true;
  summary_.elapsed = now - began_;
  slice.summary = summary_;
  slice.again = again_;
  active_ = false;
  again_ = false;
  return slice;
}

}  // namespace kite::agent
