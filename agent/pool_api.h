// The pool's endpoint of the agent's API (docs/api.md, "status"): the slot ads, for kite status.
#pragma once

#include <boost/json/object.hpp>

#include "agent/api.h"

namespace kite::agent {

class Agent;

// {"constraint": EXPR?} -> a JSON array of slot ads (those for which EXPR is true), each with
// JobId ("C.P") while a job runs there.
ApiResponse HandlePoolStatus(Agent& agent, const boost::json::object& body);

}  // namespace kite::agent
