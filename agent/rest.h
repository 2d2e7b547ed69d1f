// The agent's read-only REST status endpoint (docs/api.md, "REST status endpoint").
//
// RestService is the request handler: a function of a request, callable without a socket (the
// fuzz target and the unit tests do). It checks the bearer token, allows only GET and HEAD, and
// answers from the queue, mostly by calling the CLI API's own read handlers (/v1/query,
// /v1/events) with a request translated from the URL. Nothing it does can change a job.
// Used only on the agent's thread.
#pragma once

#include <cstdint>
#include <functional>
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

using RestReply = std::function<void(HttpResponse)>;

class RestService {
 public:
  RestService(Agent& agent, std::string token);

  // Answers `req`: `reply` runs once, on the agent's thread, possibly after this returns (a job
  // query's constraint is evaluated in slices between other requests).
  void Handle(const HttpRequest& req, RestReply reply);
  // The same, waiting for the answer by running the agent's event loop (tests, the fuzz target).
  HttpResponse Handle(const HttpRequest& req);

  // Whether `req` carries the endpoint's token.
  bool Authenticated(const HttpRequest& req) const;

  // Responses sent, by status code (for /metrics).
  const std::map<int, uint64_t>& answered() const { return answered_; }

 private:
  void Route(const HttpRequest& req, RestReply reply);
  void Authorized(const RestTarget& t, RestReply reply);
  void Jobs(const RestTarget& t, RestReply reply);
  void OneJob(const std::string& id, bool events, RestReply reply);
  HttpResponse Resources();
  // GET /api/v1/dags (each running DAG with its counts) and /api/v1/dags/{cluster} (with its
  // nodes).
  HttpResponse Dags(const std::string& cluster);
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
