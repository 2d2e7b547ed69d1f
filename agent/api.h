// The agent's API as a function of a request: parse, act on the queue, reply.
//
// Handlers run on the agent's thread. A reply may be deferred (kite wait's long poll), so the
// answer goes to a callback rather than a return value.
#pragma once

#include <boost/beast/http.hpp>
#include <functional>

namespace kite::agent {

class Agent;

using ApiRequest = boost::beast::http::request<boost::beast::http::string_body>;
using ApiResponse = boost::beast::http::response<boost::beast::http::string_body>;

void HandleApiRequest(Agent& agent, const ApiRequest& req, std::function<void(ApiResponse)> reply);

}  // namespace kite::agent
