// The agent's read-only REST status endpoint (docs/api.md, "REST status endpoint").
//
// RestService is the request handler: a function of a request, callable without a socket (the
// fuzz target and the unit tests do). It checks the bearer token, allows only GET and HEAD, and
// answers from the queue, mostly by calling the CLI API's own read handlers (/v1/query,
// /v1/events) with a request translated from the URL. Nothing it does can change a job.
// Used only on the agent's thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agent/http_session.h"
#include "common/error.h"

namespace kite::agent {

class Agent;

// The token file: `path` is read when it exists (it must be the user's, mode 0600, and hold 64
// hex digits); otherwise 32 bytes from the kernel's CSPRNG are written to it as hex, mode 0600.
Result<std::string> LoadOrCreateRestToken(const std::string& path);
// "Bearer <token>" against the token, in time that does not depend on where they differ.
bool BearerMatches(std::string_view authorization, std::string_view token);

// A request target split and percent-decoded: "/api/v1/jobs?status=held" -> path, params.
struct RestTarget {
  std::string path;
  std::vector<std::pair<std::string, std::string>> params;  // in order, decoded
};
// Fails (kInvalidInput) on bad percent-encoding, a NUL byte or a target not starting with '/'.
Result<RestTarget> ParseRestTarget(std::string_view target);

class RestService {
 public:
  RestService(Agent& agent, std::string token);

  // Answers `req` (at once; `reply` runs before this returns).
  void Handle(const HttpRequest& req, const std::function<void(HttpResponse)>& reply);
  HttpResponse Handle(const HttpRequest& req);

  // Responses sent, by status code (for /metrics).
  const std::map<int, uint64_t>& answered() const { return answered_; }

 private:
  HttpResponse Route(const HttpRequest& req);
  HttpResponse Authorized(const RestTarget& t);
  HttpResponse Jobs(const RestTarget& t);
  HttpResponse OneJob(const std::string& id, bool events);
  HttpResponse Resources();
  HttpResponse Credentials();
  HttpResponse Metrics();

  Agent& agent_;
  std::string token_;
  double started_;  // unix time the service (and so the agent) started
  std::map<int, uint64_t> answered_;
};

// The status page served at "/" (agent/rest_page.html, compiled in).
std::string_view RestStatusPage();

}  // namespace kite::agent
