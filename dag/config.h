// What Kite takes from a DAG's CONFIG file (DAGMan's per-DAG configuration, HTCondor's
// `NAME = value` syntax) and the DOT picture of a DAG. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "dag/dag.h"

namespace kite::dag {

// The DAGMan settings Kite applies; anything else is kept out with a warning.
struct DagConfig {
  std::optional<int> max_jobs;          // DAGMAN_MAX_JOBS_SUBMITTED
  std::optional<int> max_idle;          // DAGMAN_MAX_JOBS_IDLE
  std::optional<int> max_pre;           // DAGMAN_MAX_PRE_SCRIPTS
  std::optional<int> max_post;          // DAGMAN_MAX_POST_SCRIPTS
  std::optional<bool> always_run_post;  // DAGMAN_ALWAYS_RUN_POST
  std::optional<bool> depth_first;      // DAGMAN_SUBMIT_DEPTH_FIRST
  std::vector<std::string> warnings;    // "file:line: NAME is not applied by Kite"
};

// Reads `text` (the contents of `file`): `# comments`, blank lines, `NAME = value` (names in any
// case, a line ending in `\` going on on the next). Refuses anything else, and a value of a
// setting Kite applies that is not of its kind, naming `file:line`.
Result<DagConfig> ParseDagConfig(const std::string& file, std::string_view text);

// Graphviz text of the DAG (DAGMan's DOT command): a node per DAG node, labelled with its name
// and, when `states` is given (one per node), its state; an edge per PARENT/CHILD link. `header`
// (the DOT command's INCLUDE file) goes inside the graph before the nodes.
std::string DotText(const Dag& dag, const std::string& name, const std::string& header,
                    const std::vector<std::string>* states);

}  // namespace kite::dag
