// The broker's pure half (docs/broker.md): reading a site's `info` ad, what Kite observed of its
// own jobs at a site, the estimate of a new job's wait there, and the choice of a site for a job.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <map>

#include "agent/negotiator.h"
#include "classad/classad.h"
#include "common/error.h"

namespace kite::agent {

// A site ad longer than this is refused.
inline constexpr size_t kMaxSiteAdBytes = 64 * 1024;

// Reads a site's ad (the ClassAd text of the gatekeeper's `info` reply) and checks what the
// broker relies on: BatchSystem a string; TotalCpus, FreeCpus, Memory, MaxWallTime, RunningJobs,
// PendingJobs integers of 0 or more (FreeCpus at most TotalCpus); BatchEstimatedStart, when
// there, a number of 0 or more. The attributes the agent itself sets (GridResource, Name, the
// Observed* and Kite* ones, EstimatedWaitTime, Reachable, ...) are refused from a site.
// kInvalidInput says what is wrong.
Result<classad::ClassAd> ParseSiteAd(std::string_view text);
// Whether `name` is one of the attributes the agent sets in a site ad (case-insensitive).
bool IsAgentSiteAttribute(std::string_view name);

// The wait assumed where nothing better is known, seconds.
inline constexpr double kUnknownWait = 300;

// What Kite saw of its own jobs at one site over the last `window` seconds: how long each waited
// from its match to running, and how its attempts ended.
class SiteRecord {
 public:
  explicit SiteRecord(double window = 3600, size_t keep = 256) : window_(window), keep_(keep) {}
  void Waited(double now, double seconds);
  // A job waited `seconds` there and was moved away before it started: a wait of at least that,
  // counted as at least kUnknownWait (it never started; nothing says how long it would have
  // waited). Not a start: StartRate does not count it.
  void GaveUp(double now, double seconds);
  void Ended(double now, bool failed);
  // The p-th percentile (0..1) of the waits in the window; nullopt when there are none.
  std::optional<double> WaitPercentile(double p, double now) const;
  size_t Waits(double now) const;
  // Kite's jobs started there per second, over the window (counted from the first start in it,
  // and over at least kMinRateSpan seconds); nullopt with fewer than two starts.
  std::optional<double> StartRate(double now) const;
  static constexpr double kMinRateSpan = 10;
  // Failed attempts over all attempts in the window (0 when none ended).
  double FailureRate(double now) const;
  size_t Attempts(double now) const;

 private:
  double window_;
  size_t keep_;
  struct Wait {
    double when = 0, seconds = 0;
    bool started = true;
  };
  std::deque<Wait> waits_;
  std::deque<std::pair<double, bool>> ends_;  // (when, failed)
};

// What the broker knows of a site at one moment besides its ad.
struct SiteState {
  std::optional<double> wait_p50, wait_p90;  // observed
  std::optional<double> start_rate;          // observed: Kite's jobs started per second
  double oldest_pending = 0;                 // seconds the longest-waiting Kite job there waited
  int kite_pending = 0;                      // Kite's jobs matched there, not yet running
};

// A new job's expected wait at a site, in seconds: the median observed wait when there is one,
// else the batch system's own estimate (BatchEstimatedStart), else 0 when the site has more free
// CPUs than Kite's jobs pending there and kUnknownWait otherwise; raised to the time the site
// takes to start Kite's jobs already pending there at its observed start rate (a job sent now
// queues behind them), and to how long Kite's oldest job pending there has waited already (a
// site that stopped starting jobs looks slower with every minute).
double EstimateWait(const classad::ClassAd& site, const SiteState& state);

// How many more of Kite's jobs may wait at a site now: up to `max_pending` (or its free CPUs, if
// more) once Kite has seen jobs start there; before that, one more than its free CPUs, so that a
// site of unknown speed is tried without being given much.
int SiteRoom(const classad::ClassAd& site, const SiteState& state, int max_pending);

// One candidate site for a job.
struct SiteChoice {
  const classad::ClassAd* ad = nullptr;  // the site ad with the agent's attributes added
  int room = 0;                          // more jobs Kite may send there now
  double estimated_wait = 0;
};
// The site a job goes to: among those with room whose ads match the job both ways (the job's
// Requirements against the site, the site's Requirements against the job), the one the job's
// Rank values highest; among equals, the shortest estimated wait, then the most room, then the
// first. nullopt when none.
std::optional<size_t> BestSite(const classad::ClassAd& job, const std::vector<SiteChoice>& sites);

// The sites `job` matches both ways, each with the job's Rank of it (index into `sites`).
struct SiteMatch {
  size_t index = 0;
  double rank = 0;
};
std::vector<SiteMatch> MatchingSites(const classad::ClassAd& job,
                                     const std::vector<const classad::ClassAd*>& sites);
// BestSite's choice among `matching` (MatchingSites of the same sites), with room and waits as
// they are now.
std::optional<size_t> PickSite(const std::vector<SiteMatch>& matching,
                               const std::vector<SiteChoice>& sites);
// The site `job` should go to or wait for (late binding): among `matching`, the highest Rank,
// evaluated now against each site's ad as it stands (its EstimatedWaitTime grows as jobs are
// given to it), then the shortest wait, then the most room — with or without room. When that site
// has no room the job waits for it rather than go where it would start later. nullopt: none.
std::optional<size_t> PreferredSite(const classad::ClassAd& job,
                                    const std::vector<SiteMatch>& matching,
                                    const std::vector<SiteChoice>& sites);

// MatchingSites for many jobs against one set of site ads: jobs of one kind (agent/negotiator.h,
// MatchKinds: every attribute matchmaking could read is the same) share one evaluation, so
// 10,000 jobs of a cluster cost one job's ClassAd work, not 10,000 (HTCondor's autoclusters).
class SiteMatcher {
 public:
  explicit SiteMatcher(std::vector<const classad::ClassAd*> sites);
  const std::vector<SiteMatch>& For(const classad::ClassAd& job);
  size_t evaluations() const { return evaluations_; }  // jobs whose matches were evaluated

 private:
  std::vector<const classad::ClassAd*> sites_;
  MatchKinds kinds_;
  std::map<std::string, std::vector<SiteMatch>> by_kind_;
  std::vector<SiteMatch> scratch_;
  size_t evaluations_ = 0;
};

}  // namespace kite::agent
