// The pool's endpoint of the agent's API (docs/api.md, "status"): the slot ads, for kite status.
#pragma once

#include <boost/json/object.hpp>

#include "agent/api.h"

namespace kite::agent {

class Agent;

// {"constraint": EXPR?} -> a JSON array of slot ads (those for which EXPR is true), each with
// JobId ("C.P") while a job runs there.
ApiResponse HandlePoolStatus(Agent& agent, const boost::json::object& body);
// POST /v1/glidein/flood (docs/api.md): {"request": FLOOD} starts or replaces glide-in flooding
// (glidein::FloodToJson), {"stop": true} stops it; any of them answers {"status": TEXT}.
ApiResponse HandleFlood(Agent& agent, const boost::json::object& body);

}  // namespace kite::agent
