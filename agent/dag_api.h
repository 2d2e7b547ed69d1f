// The DAG endpoints of the agent's API (docs/api.md, "dag/submit", "dag/status").
#pragma once

#include <boost/json/object.hpp>

#include "agent/api.h"

namespace kite::agent {

class Agent;

// {"file", "cwd", "maxjobs"?, "maxidle"?, "maxpre"?, "maxpost"?, "force"?} ->
// {"cluster", "nodes", "done_from_rescue", "rescue", "warnings"}; a DAG file that does not
// parse is refused (400) with "file:line: what is wrong" and nothing is queued.
ApiResponse HandleDagSubmit(Agent& agent, const boost::json::object& body);
// {"cluster"} or {"file"} -> {"cluster", "file", "nodes": [{name, state, job, retries, note}]}.
ApiResponse HandleDagStatus(Agent& agent, const boost::json::object& body);

}  // namespace kite::agent
