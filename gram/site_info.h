// The gatekeeper's `info` answer (docs/protocol.md, "Site information"): the site as its batch
// system sees it, written as a ClassAd for the client's matchmaking. Pure.
#pragma once

#include <string>

#include "gram/batch/batch_adapter.h"
#include "grid/site_ad.h"

namespace kite::gram {

// A ClassAd, in the new syntax ("[ A = 1; B = "x" ]"), describing `info`. `extra` is the site
// administrator's own attributes (`kite-gatekeeper --site-attributes`: "Name = expression" lines,
// e.g. a Requirements the site sets for the jobs it takes), added as they are. `now`: Unix time.
//
// Attributes: BatchSystem, Queues (a list), DefaultQueue, TotalCpus, FreeCpus, Memory (MiB of
// one node), MaxWallTime (seconds; 2147483647 when the system sets no limit), RunningJobs,
// PendingJobs, BatchEstimatedStart (seconds from now; only when the system has an estimate),
// OpSys, Arch, KiteProtocol, SiteTime.
std::string SiteAdText(const batch::SiteInfo& info, const std::string& extra, double now);

// "Name = expression" lines of a site-attributes file, one per line, without comments and blank
// lines, joined with "; " (the caller checks them with the ClassAd parser).
std::string SiteAttributeLines(const std::string& file_text);

// The bounds every site ad keeps (grid/site_ad.h): SiteAdText writes no more (a count read as
// more from a batch system's answer is cut to it).
using grid::kMaxSiteCount;
using grid::kMaxSiteEstimatedStart;
using grid::kMaxSiteMemoryMiB;
using grid::kNoWallTimeLimit;

}  // namespace kite::gram
