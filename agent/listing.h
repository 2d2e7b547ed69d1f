// How `kite q` and `kite history` show jobs: condor_q's tables and `-json` form.
#pragma once

#include <string>
#include <vector>

#include "agent/job.h"
#include "classad/classad.h"

namespace kite::agent {

// One job to show: its ad (chained to its cluster ad when it is queued) and key.
struct ListedJob {
  JobKey key;
  const classad::ClassAd* ad;
  const Cluster* cluster;  // null for history
};

// condor_q -json: an array of whole ads. Cluster attributes are rendered once per cluster.
std::string FormatJson(const std::vector<ListedJob>& jobs);
// condor_q -nobatch: one line per job.
std::string FormatJobTable(const std::vector<ListedJob>& jobs, double now, bool history);
// condor_q's default: one line per cluster.
std::string FormatBatchTable(const std::vector<ListedJob>& jobs, double now);
// condor_q -grid: grid jobs with their remote state, resource and site job id.
std::string FormatGridTable(const std::vector<ListedJob>& jobs);
// "Total for query: ..." line.
std::string FormatTotals(const std::vector<ListedJob>& jobs);

}  // namespace kite::agent
