// Site ads, observed waits and the choice of a site.
#include "agent/site_ads.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "classad/io.h"
#include "classad/match.h"
#include "common/strings.h"
#include "grid/site_ad.h"

namespace kite::agent {
namespace {

// Set by the agent from what it observed; a site may not say them.
constexpr std::array<std::string_view, 15> kAgentAttributes = {
    "GridResource",    "Name",           "EstimatedWaitTime", "ObservedWaitP50",
    "ObservedWaitP90", "ObservedWaits",  "FailureRate",       "LastContact",
    "Reachable",       "KiteRunning",    "KitePending",       "KiteAttempts",
    "Usable",          "UnusableReason", "ObservedStartRate"};

}  // namespace

bool IsAgentSiteAttribute(std::string_view name) {
  for (std::string_view a : kAgentAttributes) {
    if (EqualsIgnoreCase(a, name)) return true;
  }
  return false;
}

Result<classad::ClassAd> ParseSiteAd(std::string_view text) {
  auto bad = [](const std::string& why) {
    return Fail(ErrorCode::kInvalidInput, "site ad: " + why);
  };
  if (text.size() > kMaxSiteAdBytes) {
    return bad("longer than " + std::to_string(kMaxSiteAdBytes) + " bytes");
  }
  auto ad = classad::ParseNewAd(text);
  if (!ad) return bad(ad.error().message());
  for (std::string_view name : kAgentAttributes) {
    if (ad->LookupOwn(name) != nullptr) {
      return bad("sets " + std::string(name) + ", which only the agent sets");
    }
  }
  if (!ad->EvaluateString("BatchSystem")) return bad("BatchSystem is not a string");
  // A site that says more than any site has (gram/site_info.h) is refused with the reason, not
  // taken at its word.
  using grid::kMaxSiteCount;
  for (auto [name, max] : {std::pair<std::string_view, int64_t>{"TotalCpus", kMaxSiteCount},
                           {"FreeCpus", kMaxSiteCount},
                           {"Memory", grid::kMaxSiteMemoryMiB},
                           {"MaxWallTime", grid::kNoWallTimeLimit},
                           {"RunningJobs", kMaxSiteCount},
                           {"PendingJobs", kMaxSiteCount}}) {
    const classad::Expr* e = ad->LookupOwn(name);
    auto v = ad->EvaluateInt(name);
    auto r = ad->EvaluateReal(name);
    if (e == nullptr || !v || !r || *r != std::floor(*r) || *v < 0) {
      return bad(std::string(name) + " is not an integer of 0 or more");
    }
    if (*v > max) {
      return bad(std::string(name) + " = " + std::to_string(*v) + " is more than " +
                 std::to_string(max) + ", more than any site has");
    }
  }
  if (*ad->EvaluateInt("FreeCpus") > *ad->EvaluateInt("TotalCpus")) {
    return bad("FreeCpus is more than TotalCpus");
  }
  if (ad->LookupOwn("BatchEstimatedStart") != nullptr) {
    auto v = ad->EvaluateReal("BatchEstimatedStart");
    if (!v || !(*v >= 0) || !std::isfinite(*v) || *v > grid::kMaxSiteEstimatedStart) {
      return bad("BatchEstimatedStart is not a number of seconds from 0 to 1e9");
    }
  }
  return std::move(*ad);
}

void SiteRecord::Waited(double now, double seconds) {
  waits_.push_back({now, std::max(0.0, seconds), true});
  while (waits_.size() > keep_) waits_.pop_front();
}

void SiteRecord::GaveUp(double now, double seconds) {
  waits_.push_back({now, std::max(seconds, kUnknownWait), false});
  while (waits_.size() > keep_) waits_.pop_front();
}

void SiteRecord::Ended(double now, bool failed) {
  ends_.emplace_back(now, failed);
  while (ends_.size() > keep_) ends_.pop_front();
}

std::optional<double> SiteRecord::WaitPercentile(double p, double now) const {
  std::vector<double> w;
  for (const auto& x : waits_) {
    if (now - x.when <= window_) w.push_back(x.seconds);
  }
  if (w.empty()) return std::nullopt;
  std::sort(w.begin(), w.end());
  // Nearest rank.
  size_t rank = static_cast<size_t>(std::ceil(std::clamp(p, 0.0, 1.0) * w.size()));
  return w[rank == 0 ? 0 : rank - 1];
}

size_t SiteRecord::Waits(double now) const {
  return static_cast<size_t>(std::count_if(waits_.begin(), waits_.end(),
                                           [&](const Wait& w) { return now - w.when <= window_; }));
}

std::optional<double> SiteRecord::StartRate(double now) const {
  size_t n = 0;
  double first = now;
  for (const auto& w : waits_) {
    if (now - w.when > window_ || !w.started) continue;
    ++n;
    first = std::min(first, w.when);
  }
  if (n < 2) return std::nullopt;
  return static_cast<double>(n) / std::max(now - first, kMinRateSpan);
}

double SiteRecord::FailureRate(double now) const {
  size_t all = 0, failed = 0;
  for (const auto& [when, f] : ends_) {
    if (now - when > window_) continue;
    ++all;
    if (f) ++failed;
  }
  return all == 0 ? 0 : static_cast<double>(failed) / static_cast<double>(all);
}

size_t SiteRecord::Attempts(double now) const {
  return static_cast<size_t>(std::count_if(
      ends_.begin(), ends_.end(), [&](const auto& e) { return now - e.first <= window_; }));
}

double EstimateWait(const classad::ClassAd& site, const SiteState& state) {
  double base;
  if (state.wait_p50) {
    base = *state.wait_p50;
  } else if (auto batch = site.EvaluateReal("BatchEstimatedStart")) {
    base = *batch;
  } else {
    base = site.EvaluateInt("FreeCpus").value_or(0) > state.kite_pending ? 0 : kUnknownWait;
  }
  double queue = state.start_rate && *state.start_rate > 0
                     ? static_cast<double>(state.kite_pending) / *state.start_rate
                     : 0;
  return std::max({base, queue, state.oldest_pending});
}

int SiteRoom(const classad::ClassAd& site, const SiteState& state, int max_pending) {
  int64_t free = std::max<int64_t>(0, site.EvaluateInt("FreeCpus").value_or(0));
  int64_t cap = state.wait_p50 ? std::max<int64_t>(max_pending, free) : free + 1;
  return static_cast<int>(std::clamp<int64_t>(cap - state.kite_pending, 0, 1 << 30));
}

std::vector<SiteMatch> MatchingSites(const classad::ClassAd& job,
                                     const std::vector<const classad::ClassAd*>& sites) {
  std::vector<SiteMatch> out;
  for (size_t i = 0; i < sites.size(); ++i) {
    const classad::ClassAd* s = sites[i];
    if (s == nullptr || !classad::RequirementsMet(job, *s)) continue;
    // A site ad need not have a Requirements; when it has one, the job must meet it.
    if (s->Lookup("Requirements") != nullptr && !classad::RequirementsMet(*s, job)) continue;
    out.push_back({i, classad::Rank(job, *s)});
  }
  return out;
}

std::optional<size_t> PickSite(const std::vector<SiteMatch>& matching,
                               const std::vector<SiteChoice>& sites) {
  std::optional<size_t> best;
  double best_rank = 0;
  for (const SiteMatch& m : matching) {
    const SiteChoice& s = sites[m.index];
    if (s.room <= 0) continue;
    if (!best) {
      best = m.index;
      best_rank = m.rank;
      continue;
    }
    const SiteChoice& b = sites[*best];
    if (m.rank > best_rank ||
        (m.rank == best_rank && (s.estimated_wait < b.estimated_wait ||
                                 (s.estimated_wait == b.estimated_wait && s.room > b.room)))) {
      best = m.index;
      best_rank = m.rank;
    }
  }
  return best;
}

std::optional<size_t> PreferredSite(const classad::ClassAd& job,
                                    const std::vector<SiteMatch>& matching,
                                    const std::vector<SiteChoice>& sites) {
  std::optional<size_t> best;
  double best_rank = 0;
  for (const SiteMatch& m : matching) {
    const SiteChoice& s = sites[m.index];
    double rank = classad::Rank(job, *s.ad);
    if (!best) {
      best = m.index;
      best_rank = rank;
      continue;
    }
    const SiteChoice& b = sites[*best];
    if (rank > best_rank ||
        (rank == best_rank && (s.estimated_wait < b.estimated_wait ||
                               (s.estimated_wait == b.estimated_wait && s.room > b.room)))) {
      best = m.index;
      best_rank = rank;
    }
  }
  return best;
}

std::optional<size_t> BestSite(const classad::ClassAd& job, const std::vector<SiteChoice>& sites) {
  std::vector<const classad::ClassAd*> ads;
  for (const auto& s : sites) ads.push_back(s.ad);
  return PickSite(MatchingSites(job, ads), sites);
}

SiteMatcher::SiteMatcher(std::vector<const classad::ClassAd*> sites)
    : sites_(std::move(sites)), kinds_(sites_) {}

const std::vector<SiteMatch>& SiteMatcher::For(const classad::ClassAd& job) {
  auto kind = kinds_.KindOf(job);
  if (kind) {
    if (auto it = by_kind_.find(*kind); it != by_kind_.end()) return it->second;
  }
  ++evaluations_;
  auto matches = MatchingSites(job, sites_);
  if (!kind) {
    scratch_ = std::move(matches);
    return scratch_;
  }
  return by_kind_.emplace(std::move(*kind), std::move(matches)).first->second;
}

}  // namespace kite::agent
