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
// POST /v1/pool/credential (docs/api.md): pool credentials (docs/pool.md, "Trust").
//   {"glideins": {"cluster": C, "count": N, "slots": S, "lifetime": SECONDS}}: writes the
//     credentials of glide-ins C.0 .. C.N-1 to $KITE_HOME/glidein/ (C must be a cluster id
//     handed out and not yet submitted) -> {"dir": DIR}
//   {"create": {"name": NAME, "slots": S, "lifetime": SECONDS}} -> {"credential": TEXT, "id": ID,
//     "expires": UNIX}
//   {"revoke": ID} -> {"revoked": ID}
ApiResponse HandlePoolCredential(Agent& agent, const boost::json::object& body);
// POST /v1/pool/listener (docs/api.md): {"recheck": true?} (look at the proxy again first) ->
// {"configured": B, "listening": B, "address": "HOST:PORT", "problem": TEXT}: where glide-ins
// dial, or why they cannot.
ApiResponse HandlePoolListener(Agent& agent, const boost::json::object& body);

}  // namespace kite::agent
