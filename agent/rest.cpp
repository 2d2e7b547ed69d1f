// The REST endpoint's request handling: token, method, target parsing, routing, and the job views
// (translated into the CLI API's /v1/query and /v1/events).
#include "agent/rest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

#include "agent/agent.h"
#include "agent/api.h"
#include "classad/expr.h"
#include "common/clock.h"
#include "common/secret.h"

namespace kite::agent {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

constexpr int kDefaultHistoryLimit = 1000;

HttpResponse Text(http::status status, std::string body, const char* type) {
  HttpResponse res{status, 11};
  res.set(http::field::content_type, type);
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  return res;
}

HttpResponse Json(http::status status, std::string body) {
  return Text(status, std::move(body), "application/json");
}

HttpResponse JsonError(http::status status, const std::string& message) {
  json::object o;
  o["error"] = message;
  return Json(status, json::serialize(o) + "\n");
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decoding; `plus_is_space` for query strings (HTML forms write spaces as '+').
Result<std::string> Decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      int hi = i + 1 < s.size() ? HexDigit(s[i + 1]) : -1;
      int lo = i + 2 < s.size() ? HexDigit(s[i + 2]) : -1;
      if (hi < 0 || lo < 0)
        return Fail(ErrorCode::kInvalidInput, "bad percent-encoding in the request target");
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      c = ' ';
    }
    if (c == '\0') return Fail(ErrorCode::kInvalidInput, "NUL byte in the request target");
    out += c;
  }
  return out;
}

// Calls one of the CLI API's read handlers. The answer may come later (a constraint is evaluated
// in slices), on the agent's thread.
void CallApi(Agent& agent, std::string_view target, const json::object& body, RestReply reply) {
  HttpRequest req{http::verb::post, target, 11};
  req.body() = json::serialize(body);
  req.prepare_payload();
  HandleApiRequest(agent, req, std::move(reply));
}

// "[\n{...},\n{...}\n]\n" holds no job when it has no '{'.
bool EmptyArray(const std::string& body) {
  return body.find('{') == std::string::npos;
}

Result<int> StatusCode(std::string_view name) {
  static const std::pair<const char*, int> kNames[] = {
      {"idle", kIdle},           {"running", kRunning}, {"removed", kRemoved},
      {"completed", kCompleted}, {"held", kHeld},       {"suspended", kSuspended}};
  for (auto& [n, code] : kNames) {
    if (name == n) return code;
  }
  return Fail(ErrorCode::kInvalidInput, "status: unknown status '" + std::string(name) +
                                            "' (idle, running, held, completed, removed)");
}

Result<int> PositiveInt(const std::string& key, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v <= 0 || v > 1000000000)
    return Fail(ErrorCode::kInvalidInput, key + ": expected a positive integer");
  return static_cast<int>(v);
}

// The /v1/query request for GET /api/v1/jobs?status=&cluster=&constraint=&history=&limit=.
Result<json::object> JobsQuery(const RestTarget& t) {
  std::map<std::string, std::string> p;
  for (auto& [key, value] : t.params) {
    if (key != "status" && key != "cluster" && key != "constraint" && key != "history" &&
        key != "limit")
      return Fail(ErrorCode::kInvalidInput, "unknown parameter '" + key + "'");
    if (!p.emplace(key, value).second) return Fail(ErrorCode::kInvalidInput, key + " given twice");
  }
  auto given = [&](const char* key) { return p.count(key) > 0; };
  json::object body;
  body["format"] = "json";
  if (given("cluster")) {
    auto c = PositiveInt("cluster", p["cluster"]);
    if (!c) return Fail(c.error());
    body["ids"] = json::array{json::string(std::to_string(*c))};
  }
  const std::string history = given("history") ? p["history"] : "false";
  if (history != "true" && history != "false" && history != "1" && history != "0")
    return Fail(ErrorCode::kInvalidInput, "history: expected true or false");
  bool from_history = history == "true" || history == "1";
  body["history"] = from_history;
  if (given("limit")) {
    auto l = PositiveInt("limit", p["limit"]);
    if (!l) return Fail(l.error());
    if (!from_history)
      return Fail(ErrorCode::kInvalidInput, "limit applies only with history=true");
    body["limit"] = *l;
  } else if (from_history) {
    body["limit"] = kDefaultHistoryLimit;
  }
  // The status filter becomes part of the constraint; the user's constraint is checked alone
  // first so that its parse error names its own text.
  const std::string& constraint = p["constraint"];
  if (!constraint.empty()) {
    if (auto e = classad::ParseExpr(constraint); !e)
      return Fail(ErrorCode::kInvalidInput, "constraint: " + e.error().message());
  }
  std::string expr;
  std::string_view rest = p["status"];
  while (!rest.empty()) {
    auto comma = rest.find(',');
    auto code = StatusCode(rest.substr(0, comma));
    if (!code) return Fail(code.error());
    expr += (expr.empty() ? "" : " || ") + std::string("JobStatus == ") + std::to_string(*code);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  if (!constraint.empty())
    expr = expr.empty() ? constraint : "(" + expr + ") && (" + constraint + ")";
  if (!expr.empty()) body["constraint"] = expr;
  return body;
}

}  // namespace

Result<std::string> LoadOrCreateRestToken(const std::string& path) {
  return LoadOrCreateSecret(path, "token");
}

bool BearerMatches(std::string_view authorization, std::string_view token) {
  constexpr std::string_view kScheme = "Bearer ";
  if (token.empty() || authorization.size() != kScheme.size() + token.size()) return false;
  unsigned char diff = 0;
  // The scheme is case-insensitive (RFC 7235); the token is compared byte by byte, every byte.
  for (size_t i = 0; i < kScheme.size(); ++i)
    diff |= static_cast<unsigned char>((authorization[i] | 0x20) ^ (kScheme[i] | 0x20));
  for (size_t i = 0; i < token.size(); ++i)
    diff |= static_cast<unsigned char>(authorization[kScheme.size() + i] ^ token[i]);
  return diff == 0;
}

Result<RestTarget> ParseRestTarget(std::string_view target) {
  if (target.empty() || target.front() != '/')
    return Fail(ErrorCode::kInvalidInput, "the request target must be a path");
  RestTarget t;
  auto q = target.find('?');
  auto path = Decode(target.substr(0, q), false);
  if (!path) return Fail(path.error());
  t.path = std::move(*path);
  if (q == std::string_view::npos) return t;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    auto amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    auto key = Decode(pair.substr(0, eq), true);
    if (!key) return Fail(key.error());
    auto value = Decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1), true);
    if (!value) return Fail(value.error());
    t.params.emplace_back(std::move(*key), std::move(*value));
  }
  return t;
}

RestService::RestService(Agent& agent, std::string token)
    : agent_(agent), token_(std::move(token)), started_(WallNow()) {}

void RestService::Handle(const HttpRequest& req, RestReply reply) {
  bool head = req.method() == http::verb::head;
  Route(req, [this, head, reply = std::move(reply)](HttpResponse res) {
    ++answered_[res.result_int()];
    res.set(http::field::server, "kite-agent");
    res.set("X-Content-Type-Options", "nosniff");
    if (head) {
      // What a GET would send, without the body.
      res.content_length(res.body().size());
      res.body().clear();
    }
    reply(std::move(res));
  });
}

HttpResponse RestService::Handle(const HttpRequest& req) {
  std::optional<HttpResponse> out;
  Handle(req, [&out](HttpResponse r) { out = std::move(r); });
  // A sliced query goes on through the agent's event loop: run it until the answer is in.
  auto& io = agent_.io();
  while (!out) {
    if (io.stopped()) io.restart();
    io.run_one();
  }
  return std::move(*out);
}

bool RestService::Authenticated(const HttpRequest& req) const {
  return BearerMatches(req[http::field::authorization], token_);
}

void RestService::Route(const HttpRequest& req, RestReply reply) {
  bool read = req.method() == http::verb::get || req.method() == http::verb::head;
  auto target = ParseRestTarget(req.target());
  std::string path = target ? target->path : "";
  bool open = path == "/" || path == "/index.html" || path == "/healthz";
  if (!open && !Authenticated(req)) {
    // No hint of what exists or why: the status and the scheme.
    HttpResponse res{http::status::unauthorized, 11};
    res.set(http::field::www_authenticate, "Bearer");
    return reply(std::move(res));
  }
  if (!read) {
    auto res = JsonError(http::status::method_not_allowed, "the REST endpoint is read-only");
    res.set(http::field::allow, "GET, HEAD");
    return reply(std::move(res));
  }
  if (!target) return reply(JsonError(http::status::bad_request, target.error().message()));
  if (path == "/healthz") return reply(Text(http::status::ok, "ok\n", "text/plain; charset=utf-8"));
  if (open) {
    auto res = Text(http::status::ok, std::string(RestStatusPage()), "text/html; charset=utf-8");
    // The page needs its own script and fetch() to this origin, nothing else.
    res.set("Content-Security-Policy",
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            "connect-src 'self'; frame-ancestors 'none'");
    res.set("Referrer-Policy", "no-referrer");
    return reply(std::move(res));
  }
  Authorized(*target, std::move(reply));
}

void RestService::Authorized(const RestTarget& t, RestReply reply) {
  const std::string& p = t.path;
  auto no_params = [&]() -> bool { return t.params.empty(); };
  if (p == "/api/v1/jobs") return Jobs(t, std::move(reply));
  constexpr std::string_view kJobs = "/api/v1/jobs/";
  if (p.starts_with(kJobs)) {
    std::string rest = p.substr(kJobs.size());
    bool events = rest.ends_with("/events");
    if (events) rest.resize(rest.size() - 7);
    if (!no_params())
      return reply(JsonError(http::status::bad_request, "this endpoint takes no parameters"));
    return OneJob(rest, events, std::move(reply));
  }
  constexpr std::string_view kDags = "/api/v1/dags";
  if (p == kDags || p.starts_with(std::string(kDags) + "/")) {
    if (!no_params())
      return reply(JsonError(http::status::bad_request, "this endpoint takes no parameters"));
    return reply(Dags(p.size() > kDags.size() ? p.substr(kDags.size() + 1) : ""));
  }
  if (!no_params()) {
    if (p == "/api/v1/resources" || p == "/api/v1/credentials" || p == "/metrics")
      return reply(JsonError(http::status::bad_request, "this endpoint takes no parameters"));
  }
  if (p == "/api/v1/resources") return reply(Resources());
  if (p == "/api/v1/credentials") return reply(Credentials());
  if (p == "/metrics") return reply(Metrics());
  reply(JsonError(http::status::not_found, "no such endpoint: " + p));
}

void RestService::Jobs(const RestTarget& t, RestReply reply) {
  auto body = JobsQuery(t);
  if (!body) return reply(JsonError(http::status::bad_request, body.error().message()));
  CallApi(agent_, "/v1/query", *body, std::move(reply));
}

void RestService::OneJob(const std::string& id, bool events, RestReply reply) {
  auto sel = ParseJobSelector(id);
  if (!sel || sel->proc < 0)
    return reply(JsonError(http::status::bad_request,
                           "a job id is CLUSTER.PROC, e.g. 12.0" +
                               (sel ? std::string() : " (" + sel.error().message() + ")")));
  std::string canonical = JobIdString({sel->cluster, sel->proc});
  if (events) return CallApi(agent_, "/v1/events", json::object{{"id", canonical}}, reply);
  json::object body{{"ids", json::array{json::string(canonical)}}, {"format", "json"}};
  // The one element of the array, or 404 when there is none.
  auto one = [canonical, reply](HttpResponse res) {
    if (res.result() != http::status::ok) return reply(std::move(res));
    if (EmptyArray(res.body()))
      return reply(JsonError(http::status::not_found, "job " + canonical + " not found"));
    std::string& b = res.body();
    auto first = b.find('{');
    auto last = b.rfind('}');
    b = b.substr(first, last - first + 1) + "\n";
    reply(std::move(res));
  };
  CallApi(agent_, "/v1/query", body, [this, body, one](HttpResponse res) mutable {
    if (res.result() != http::status::ok || !EmptyArray(res.body())) return one(std::move(res));
    // It has left the queue: its last ad is in history.
    body["history"] = true;
    body["limit"] = 1;
    CallApi(agent_, "/v1/query", body, one);
  });
}

}  // namespace kite::agent
