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
// condor_q -dag -nobatch: FormatJobTable with each DAG's node jobs right after the DAG's job,
// their CMD column " |-NODE" (a node whose DAG is not listed keeps its place).
std::string FormatDagTable(const std::vector<ListedJob>& jobs, double now);
// condor_q's default: one line per batch (JobBatchName and owner; a cluster without a name is its
// own batch).
std::string FormatBatchTable(const std::vector<ListedJob>& jobs, double now);
// condor_q -hold: held jobs, since when and why.
std::string FormatHoldTable(const std::vector<ListedJob>& jobs);
// condor_q -run: running jobs, since when and where.
std::string FormatRunTable(const std::vector<ListedJob>& jobs, double now);
// condor_q -grid: grid jobs with their remote state, resource and site job id.
std::string FormatGridTable(const std::vector<ListedJob>& jobs);
// "Total for query: ..." line; with `grid_only`, counting only grid jobs (condor_q -grid).
std::string FormatTotals(const std::vector<ListedJob>& jobs, bool grid_only = false);

}  // namespace kite::agent
