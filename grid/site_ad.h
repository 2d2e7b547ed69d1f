// What every grid type's site information holds (docs/broker.md, "Site ads"): the bounds a site
// ad's numbers keep, whichever type's site wrote it. A site writes no count past them; the broker
// refuses an ad that says more (agent/site_ads.h).
#pragma once

#include <cstdint>

namespace kite::grid {

// MaxWallTime of a site whose batch system sets no limit.
inline constexpr int64_t kNoWallTimeLimit = 2147483647;

// The largest counts a site ad may hold: far above any real site, far below where a broker's sums
// could overflow.
inline constexpr int64_t kMaxSiteCount = int64_t{1} << 30;      // CPUs, running or pending jobs
inline constexpr int64_t kMaxSiteMemoryMiB = int64_t{1} << 40;  // Memory
inline constexpr double kMaxSiteEstimatedStart = 1e9;           // BatchEstimatedStart, seconds

}  // namespace kite::grid
