// Submitting a cluster the way `kite submit` does, for the verbs that build their own submit
// description (`kite glidein submit`).
#pragma once

#include <cstddef>
#include <functional>

#include "agent/cli/util.h"
#include "client/agent_client.h"
#include "common/error.h"
#include "submit/submit_file.h"

namespace kite::cli {

struct SubmittedCluster {
  int cluster = 0;
  size_t jobs = 0;
};

// Asks the agent for a cluster id, gets the parsed cluster for it from `parse` (the id is its
// $(Cluster)), prints its warnings and submits it. On any failure the cluster id is given back
// and the verb dies with the reason.
SubmittedCluster SubmitClusterOrDie(
    AgentClient& client, const std::function<Result<submit::ParsedCluster>(int cluster)>& parse);

}  // namespace kite::cli
