// The gridmanager's two endpoints of the agent's API (docs/api.md, "The gridmanager's API"):
// grid/jobs and grid/update, through the typed messages of grid/messages.h.
#pragma once

#include <boost/json/object.hpp>
#include <functional>

#include "agent/api.h"

namespace kite::agent {

class Agent;

// The long poll: answers (through `reply`) once a grid job of the proxy changed.
void HandleGridJobs(Agent& agent, const boost::json::object& body,
                    std::function<void(ApiResponse)> reply);
// A batch of job updates and resource reports, answered after it is committed.
ApiResponse HandleGridUpdate(Agent& agent, const boost::json::object& body);

}  // namespace kite::agent
