// The agent's API as a function of a request: parse, act on the queue, reply.
//
// Handlers run on the agent's thread. A reply may be deferred (kite wait's long poll), so the
// answer goes to a callback rather than a return value.
#pragma once

#include <sys/types.h>

#include <boost/beast/http.hpp>
#include <boost/json/object.hpp>

#include <functional>
#include <string>
#include <vector>
#include "common/error.h"

namespace kite::agent {

class Agent;

using ApiHttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using ApiResponse = boost::beast::http::response<boost::beast::http::string_body>;

// A request to the API and who sent it.
struct ApiRequest : ApiHttpRequest {
  using ApiHttpRequest::ApiHttpRequest;
  ApiRequest() = default;
  // Implicit, for callers with no peer to name (the REST endpoint's reads, calls within the agent).
  ApiRequest(ApiHttpRequest http) : ApiHttpRequest(std::move(http)) {}

  // The user on the other end of the agent's socket (SO_PEERCRED at accept, by name, else the
  // uid's number); empty when there is no such peer: the agent's own user is meant then.
  std::string caller;
};

// The name the password database gives `uid` (getpwuid_r), else the number.
std::string UserNameOf(uid_t uid);

// Answers `req` through the table of endpoints (api.cpp): 404 for a path it does not hold, 405
// for another method than the endpoint's, 400 for a POST body that is not a JSON object.
void HandleApiRequest(Agent& agent, const ApiRequest& req, std::function<void(ApiResponse)> reply);
// Every endpoint as "METHOD /path", in the table's order.
std::vector<std::string> ApiEndpoints();

// A reply to a handler's request: `body` as `type` (JSON unless said otherwise).
ApiResponse Reply(boost::beast::http::status status, std::string body,
                  const char* type = "application/json");
// {"error": message} with `status`; with an Error, the status its code maps to.
ApiResponse ErrorReply(boost::beast::http::status status, const std::string& message);
ApiResponse ErrorReply(const Error& e);
// A request's string member `key`: "" when absent or null, an error when not a string.
Result<std::string> GetString(const boost::json::object& o, std::string_view key);

}  // namespace kite::agent
