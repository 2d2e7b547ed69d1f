// The agent's API handlers (docs/api.md).
#include "agent/api.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <cerrno>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/dag_api.h"
#include "agent/grid_api.h"
#include "agent/listing.h"
#include "agent/pool_api.h"
#include "agent/select.h"
#include "classad/expr.h"
#include "classad/io.h"

namespace kite::agent {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

Result<json::object> ParseBody(const ApiRequest& req) {
  if (req.body().empty()) return json::object{};
  boost::system::error_code ec;
  auto v = json::parse(req.body(), ec);
  if (ec) return Fail(ErrorCode::kInvalidInput, "request body is not JSON: " + ec.message());
  if (!v.is_object()) return Fail(ErrorCode::kInvalidInput, "request body must be a JSON object");
  return std::move(v.as_object());
}

Result<std::vector<JobSelector>> GetSelectors(const json::object& o) {
  std::vector<JobSelector> out;
  auto* v = o.if_contains("ids");
  if (!v || v->is_null()) return out;
  if (!v->is_array()) return Fail(ErrorCode::kInvalidInput, "ids must be an array of strings");
  for (auto& e : v->as_array()) {
    if (!e.is_string()) return Fail(ErrorCode::kInvalidInput, "ids must be an array of strings");
    auto s = ParseJobSelector(std::string(e.as_string()));
    if (!s) return Fail(s.error());
    out.push_back(*s);
  }
  return out;
}

// The jobs an act or edit request names: ids, a constraint, or both (then jobs that match both).
struct NamedJobs {
  std::vector<JobSelector> sel;
  classad::ExprPtr constraint;  // null: none
};
Result<NamedJobs> GetNamedJobs(const json::object& body) {
  auto sel = GetSelectors(body);
  if (!sel) return Fail(sel.error());
  auto constraint = GetString(body, "constraint");
  if (!constraint) return Fail(constraint.error());
  if (sel->empty() && constraint->empty())
    return Fail(ErrorCode::kInvalidInput, "name the jobs: ids or a constraint");
  auto expr = ParseConstraint(*constraint);
  if (!expr) return Fail(expr.error());
  return NamedJobs{std::move(*sel), std::move(*expr)};
}

Result<std::vector<SubmitAttr>> ParseAttrs(const json::value& v) {
  std::vector<SubmitAttr> out;
  if (!v.is_array()) return Fail(ErrorCode::kInvalidInput, "attributes must be [name, expr] pairs");
  for (auto& p : v.as_array()) {
    if (!p.is_array() || p.as_array().size() != 2 || !p.as_array()[0].is_string() ||
        !p.as_array()[1].is_string())
      return Fail(ErrorCode::kInvalidInput, "attributes must be [name, expr] pairs");
    out.push_back(
        {std::string(p.as_array()[0].as_string()), std::string(p.as_array()[1].as_string())});
  }
  return out;
}

// The request's "cluster": an integer in the range of ids.
Result<int> ClusterIdOf(const json::object& body) {
  auto* c = body.if_contains("cluster");
  if (!c || !c->is_int64() || c->as_int64() < 1 || c->as_int64() > kMaxJobId)
    return Fail(ErrorCode::kInvalidInput,
                "cluster must be an integer from 1 to " + std::to_string(kMaxJobId));
  return static_cast<int>(c->as_int64());
}

ApiResponse HandleSubmit(Agent& agent, const json::object& body) {
  SubmitRequest req;
  auto cluster = ClusterIdOf(body);
  if (!cluster) return ErrorReply(cluster.error());
  req.cluster = *cluster;
  auto* common = body.if_contains("common");
  auto* procs = body.if_contains("procs");
  if (!common || !procs || !procs->is_array())
    return ErrorReply(http::status::bad_request, "submit needs common and procs");
  auto ca = ParseAttrs(*common);
  if (!ca) return ErrorReply(ca.error());
  req.common = std::move(*ca);
  for (auto& p : procs->as_array()) {
    auto pa = ParseAttrs(p);
    if (!pa) return ErrorReply(pa.error());
    req.procs.push_back(std::move(*pa));
  }
  auto n = agent.queue().Submit(req);
  if (!n) return ErrorReply(n.error());
  json::object o;
  o["cluster"] = req.cluster;
  o["jobs"] = *n;
  return Reply(http::status::ok, json::serialize(o) + "\n");
}

// The text of a listing in `format` (docs/api.md, /v1/query). Queue listings end with condor_q's
// totals line; "totals" and "grid-totals" are that line alone.
std::string FormatListing(const std::string& format, const std::vector<ListedJob>& listed,
                          bool history, double now) {
  if (format == "json") return FormatJson(listed);
  bool grid = format == "grid" || format == "grid-totals";
  if (format == "totals" || format == "grid-totals") return FormatTotals(listed, grid);
  std::string text;
  if (format == "batch" && !history) {
    text = FormatBatchTable(listed, now);
  } else if (format == "dag" && !history) {
    text = FormatDagTable(listed, now);
  } else if (format == "grid") {
    text = FormatGridTable(listed);
  } else if (format == "hold") {
    text = FormatHoldTable(listed);
  } else if (format == "run") {
    text = FormatRunTable(listed, now);
  } else {
    text = FormatJobTable(listed, now, history);
  }
  if (!history) text += "\n" + FormatTotals(listed, grid);
  return text;
}

void HandleQuery(Agent& agent, const json::object& body, std::function<void(ApiResponse)> reply) {
  auto sel = GetSelectors(body);
  if (!sel) return reply(ErrorReply(sel.error()));
  auto constraint = GetString(body, "constraint");
  if (!constraint) return reply(ErrorReply(constraint.error()));
  auto expr = ParseConstraint(*constraint);
  if (!expr) return reply(ErrorReply(expr.error()));
  auto format = GetString(body, "format");
  if (!format) return reply(ErrorReply(format.error()));
  const char* type = *format == "json" ? "application/json" : "text/plain";
  bool history =
      body.contains("history") && body.at("history").is_bool() && body.at("history").as_bool();
  if (!history) {
    return SelectQueued(
        agent, std::move(*sel), *expr,
        [&agent, format = *format, type, reply](Result<std::vector<JobKey>> keys) {
          if (!keys) return reply(ErrorReply(keys.error()));
          if (format == "analyze")
            return reply(Reply(http::status::ok, agent.Analyze(*keys), type));
          std::vector<ListedJob> listed;
          listed.reserve(keys->size());
          for (JobKey k : *keys) {
            if (Job* j = agent.queue().Find(k)) listed.push_back({k, &j->ad, j->cluster});
          }
          reply(Reply(http::status::ok, FormatListing(format, listed, false, agent.queue().Now()),
                      type));
        });
  }
  size_t limit = 0;
  if (auto* l = body.if_contains("limit"); l && l->is_int64() && l->as_int64() > 0)
    limit = static_cast<size_t>(l->as_int64());
  SelectHistory(agent, std::move(*sel), *expr, limit,
                [&agent, format = *format, type, reply](Result<HistoryMatch> m) {
                  if (!m) return reply(ErrorReply(m.error()));
                  std::vector<ListedJob> listed;
                  listed.reserve(m->ads.size());
                  for (size_t i = 0; i < m->ads.size(); ++i)
                    listed.push_back({m->keys[i], &m->ads[i], nullptr});
                  reply(Reply(http::status::ok,
                              FormatListing(format, listed, true, agent.queue().Now()), type));
                });
}

struct ActVerb {
  const char* name;
  Agent::Action action;
  const char* verb;  // for the CLI's "N job(s) VERB"
  const char* via;   // in the default reason
};
constexpr ActVerb kActVerbs[] = {
    {"rm", Agent::Action::kRemove, "removed", "kite rm"},
    {"forcex", Agent::Action::kForceRemove, "removed", "kite rm --forcex"},
    {"hold", Agent::Action::kHold, "held", "kite hold"},
    {"release", Agent::Action::kRelease, "released", "kite release"},
    {"vacate", Agent::Action::kVacate, "vacated", "kite vacate"},
    {"checkpoint", Agent::Action::kCheckpoint, "asked for a checkpoint", "kite checkpoint"},
};

// Acts on the selected jobs once the constraint has been evaluated over them (in slices).
void ActOn(Agent& agent, const ActVerb& v, const std::vector<JobSelector>& sel,
           const std::vector<JobKey>& keys, const std::string& why,
           const std::function<void(ApiResponse)>& reply) {
  std::vector<Job*> jobs;
  for (JobKey k : keys) {
    if (Job* j = agent.queue().Find(k)) jobs.push_back(j);
  }
  // Ids that matched nothing are reported too, as condor_rm does. (Looked at before acting: a
  // job that leaves the queue in Act is gone afterwards.)
  std::vector<std::string> unmatched;
  for (auto& s : sel) {
    bool any = false;
    for (Job* j : jobs) any |= j->key.cluster == s.cluster && (s.proc < 0 || j->key.proc == s.proc);
    if (!any) {
      std::string id =
          std::to_string(s.cluster) + (s.proc >= 0 ? "." + std::to_string(s.proc) : "");
      unmatched.push_back((s.proc >= 0 ? "Job " : "Cluster ") + id + " not found");
    }
  }
  std::vector<std::string> errors;
  size_t matched = jobs.size();
  int changed = agent.Act(v.action, jobs, why, &errors);
  if (auto st = agent.queue().Flush(); !st) return reply(ErrorReply(st.error()));
  json::object o;
  o["matched"] = matched;
  o["changed"] = changed;
  o["verb"] = v.verb;
  json::array errs;
  for (auto& e : errors) errs.push_back(json::string(e));
  for (auto& e : unmatched) errs.push_back(json::string(e));
  o["errors"] = std::move(errs);
  reply(Reply(http::status::ok, json::serialize(o) + "\n"));
}

void HandleAct(Agent& agent, const json::object& body, const std::string& caller,
               std::function<void(ApiResponse)> reply) {
  auto action = GetString(body, "action");
  if (!action) return reply(ErrorReply(action.error()));
  const ActVerb* verb = nullptr;
  for (const auto& v : kActVerbs) {
    if (*action == v.name) verb = &v;
  }
  if (!verb)
    return reply(ErrorReply(http::status::bad_request,
                            "action must be rm, forcex, hold, release, vacate or checkpoint"));
  auto named = GetNamedJobs(body);
  if (!named) return reply(ErrorReply(named.error()));
  auto reason = GetString(body, "reason");
  if (!reason) return reply(ErrorReply(reason.error()));
  std::string why = *reason;
  if (why.empty()) {
    // Named from the socket's peer, not from anyone's $USER, which says nothing reliable.
    std::string user = caller.empty() ? UserNameOf(::geteuid()) : caller;
    why = std::string("via ") + verb->via + " (by user " + user + ")";
  }
  SelectQueued(agent, named->sel, named->constraint,
               [&agent, verb, sel = named->sel, why, reply](Result<std::vector<JobKey>> keys) {
                 if (!keys) return reply(ErrorReply(keys.error()));
                 ActOn(agent, *verb, sel, *keys, why, reply);
               });
}

// Attributes condor_qedit will not change: the job's identity, its status (changed only through
// hold, release and rm, which log it) and what the gridmanager owns.
constexpr std::string_view kProtectedAttrs[] = {"ClusterId",
                                                "ProcId",
                                                "JobStatus",
                                                "Owner",
                                                "MyType",
                                                "TargetType",
                                                "QDate",
                                                "GlobalJobId",
                                                "GridJobId",
                                                "GridJobStatus",
                                                "GridJobSiteStatus",
                                                "EnteredCurrentStatus"};

Status CheckEditable(const std::string& name) {
  bool ident =
      !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (unsigned char c : name) ident = ident && (std::isalnum(c) || c == '_');
  if (!ident) return Fail(ErrorCode::kInvalidInput, "'" + name + "' is not an attribute name");
  for (auto p : kProtectedAttrs) {
    if (p.size() == name.size() && std::equal(p.begin(), p.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      std::string hint = std::string(p) == "JobStatus" ? " (use kite hold, release or rm)" : "";
      return Fail(ErrorCode::kInvalidInput,
                  "attribute " + std::string(p) + " is protected and cannot be edited" + hint);
    }
  }
  return {};
}

// condor_qedit: sets attributes of the selected queued jobs, each value a ClassAd expression.
void HandleEdit(Agent& agent, const json::object& body, std::function<void(ApiResponse)> reply) {
  auto named = GetNamedJobs(body);
  if (!named) return reply(ErrorReply(named.error()));
  auto* a = body.if_contains("attributes");
  if (!a) return reply(ErrorReply(http::status::bad_request, "edit needs attributes"));
  auto attrs = ParseAttrs(*a);
  if (!attrs) return reply(ErrorReply(attrs.error()));
  if (attrs->empty()) return reply(ErrorReply(http::status::bad_request, "edit needs attributes"));
  std::vector<std::pair<std::string, classad::ExprPtr>> edits;
  for (auto& [name, text] : *attrs) {
    if (auto st = CheckEditable(name); !st) return reply(ErrorReply(st.error()));
    auto value = classad::ParseExpr(text);
    if (!value)
      return reply(ErrorReply(http::status::bad_request,
                              "value of " + name + ": " + value.error().message()));
    edits.emplace_back(name, std::move(*value));
  }
  SelectQueued(agent, named->sel, named->constraint,
               [&agent, edits = std::move(edits), reply](Result<std::vector<JobKey>> keys) {
                 if (!keys) return reply(ErrorReply(keys.error()));
                 size_t changed = 0;
                 for (JobKey k : *keys) {
                   Job* j = agent.queue().Find(k);
                   if (!j) continue;
                   for (auto& [name, value] : edits) agent.queue().SetAttr(*j, name, value);
                   ++changed;
                 }
                 if (auto st = agent.queue().Flush(); !st) return reply(ErrorReply(st.error()));
                 json::object o;
                 o["changed"] = changed;
                 reply(Reply(http::status::ok, json::serialize(o) + "\n"));
               });
}

json::object CountsJson(const WaitCounts& c) {
  json::object o;
  o["total"] = c.total;
  o["done"] = c.done;
  o["idle"] = c.idle;
  o["running"] = c.running;
  o["held"] = c.held;
  o["missing"] = c.missing;
  json::array m;
  for (auto& id : c.missing_ids) m.push_back(json::string(id));
  o["missing_ids"] = std::move(m);
  json::array stuck;
  for (auto& s : c.stuck) stuck.push_back(json::string(s));
  o["stuck"] = std::move(stuck);
  return o;
}

void HandleWait(Agent& agent, const json::object& body, std::function<void(ApiResponse)> reply) {
  auto sel = GetSelectors(body);
  if (!sel) return reply(ErrorReply(sel.error()));
  if (sel->empty()) return reply(ErrorReply(http::status::bad_request, "wait needs job ids"));
  double timeout = 0;
  if (auto* t = body.if_contains("timeout"); t && t->is_number()) timeout = t->to_number<double>();
  timeout = std::clamp(timeout, 0.0, 60.0);
  auto now = agent.Count(*sel);
  bool finished =
      now.idle == 0 && now.running == 0 && now.held == static_cast<int>(now.stuck.size());
  if (timeout <= 0 || finished) {
    return reply(Reply(http::status::ok, json::serialize(CountsJson(now)) + "\n"));
  }
  agent.Wait(std::move(*sel), timeout, [reply](WaitCounts c) {
    reply(Reply(http::status::ok, json::serialize(CountsJson(c)) + "\n"));
  });
}

ApiResponse HandleEvents(Agent& agent, const json::object& body) {
  auto id = GetString(body, "id");
  if (!id) return ErrorReply(id.error());
  auto s = ParseJobSelector(*id);
  if (!s || s->proc < 0) return ErrorReply(http::status::bad_request, "events need a job id C.P");
  auto ev = agent.store().Events({s->cluster, s->proc});
  if (!ev) return ErrorReply(ev.error());
  if (ev->empty() && !agent.queue().Find({s->cluster, s->proc}))
    return ErrorReply(http::status::not_found, "job " + *id + " not found");
  json::array a;
  for (auto& e : *ev) {
    json::object o;
    o["time"] = e.time;
    o["code"] = e.code;
    o["text"] = e.text;
    a.push_back(std::move(o));
  }
  return Reply(http::status::ok, json::serialize(a) + "\n");
}

}  // namespace

Result<std::string> GetString(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) return std::string();
  if (!v->is_string())
    return Fail(ErrorCode::kInvalidInput, std::string(key) + " must be a string");
  return std::string(v->as_string());
}

ApiResponse ErrorReply(http::status status, const std::string& message) {
  json::object o;
  o["error"] = message;
  return Reply(status, json::serialize(o) + "\n");
}

ApiResponse ErrorReply(const Error& e) {
  return ErrorReply(static_cast<http::status>(HttpStatusFor(e.code())), e.message());
}

ApiResponse Reply(http::status status, std::string body, const char* type) {
  ApiResponse res{status, 11};
  res.set(http::field::content_type, type);
  res.body() = std::move(body);
  return res;
}

std::string UserNameOf(uid_t uid) {
  long hint = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(hint > 0 ? static_cast<size_t>(hint) : 4096);
  struct passwd pw;
  struct passwd* found = nullptr;
  int rc;
  while ((rc = ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found)) == ERANGE &&
         buf.size() < (1u << 20))
    buf.resize(buf.size() * 2);
  if (rc == 0 && found) return pw.pw_name;
  return std::to_string(uid);
}

namespace {

// What a handler is given: the agent, the request's JSON body (empty for a GET) and who asks.
struct ApiCall {
  Agent& agent;
  const json::object& body;
  const std::string& caller;
};
using Replier = std::function<void(ApiResponse)>;

// One endpoint. A handler answers at once (`now`), or takes the reply to give later (`later`:
// `kite wait`'s long poll, the gridmanager's job list, work done off the agent's thread).
struct Route {
  std::string_view path;
  http::verb method;
  ApiResponse (*now)(const ApiCall&) = nullptr;
  void (*later)(const ApiCall&, Replier) = nullptr;
};

ApiResponse Ping(const ApiCall& c) {
  json::object o;
  o["agent"] = "kite-agent";
  o["pid"] = ::getpid();
  o["jobs"] = c.agent.queue().jobs().size();
  o["home"] = c.agent.options().home;
  return Reply(http::status::ok, json::serialize(o) + "\n");
}

ApiResponse NewCluster(const ApiCall& c) {
  auto id = c.agent.queue().NewCluster();
  if (!id) return ErrorReply(id.error());
  json::object o;
  o["cluster"] = *id;
  return Reply(http::status::ok, json::serialize(o) + "\n");
}

ApiResponse ReturnCluster(const ApiCall& c) {
  auto id = ClusterIdOf(c.body);
  if (!id) return ErrorReply(id.error());
  if (auto st = c.agent.queue().ReturnCluster(*id); !st) return ErrorReply(st.error());
  return Reply(http::status::ok, "{}\n");
}

// {"startd": true}: the local startd stops too (its jobs are vacated). The agent stops after
// this reply is on its way.
ApiResponse Shutdown(const ApiCall& c) {
  bool startd = false;
  if (auto* v = c.body.if_contains("startd"); v && v->is_bool()) startd = v->as_bool();
  boost::asio::post(c.agent.io(), [&agent = c.agent, startd] { agent.Stop(startd); });
  return Reply(http::status::ok, "{\"stopping\":true}\n");
}

using V = http::verb;
// Every endpoint of the agent's socket (docs/api.md lists each).
constexpr Route kRoutes[] = {
    {"/v1/ping", V::get, Ping},
    {"/v1/cluster", V::post, NewCluster},
    {"/v1/cluster/return", V::post, ReturnCluster},
    {"/v1/submit", V::post, [](const ApiCall& c) { return HandleSubmit(c.agent, c.body); }},
    {"/v1/query", V::post, nullptr,
     [](const ApiCall& c, Replier r) { HandleQuery(c.agent, c.body, std::move(r)); }},
    {"/v1/act", V::post, nullptr,
     [](const ApiCall& c, Replier r) { HandleAct(c.agent, c.body, c.caller, std::move(r)); }},
    {"/v1/edit", V::post, nullptr,
     [](const ApiCall& c, Replier r) { HandleEdit(c.agent, c.body, std::move(r)); }},
    {"/v1/wait", V::post, nullptr,
     [](const ApiCall& c, Replier r) { HandleWait(c.agent, c.body, std::move(r)); }},
    {"/v1/events", V::post, [](const ApiCall& c) { return HandleEvents(c.agent, c.body); }},
    {"/v1/status", V::post, [](const ApiCall& c) { return HandlePoolStatus(c.agent, c.body); }},
    {"/v1/glidein/flood", V::post, [](const ApiCall& c) { return HandleFlood(c.agent, c.body); }},
    {"/v1/pool/credential", V::post,
     [](const ApiCall& c) { return HandlePoolCredential(c.agent, c.body); }},
    {"/v1/pool/listener", V::post,
     [](const ApiCall& c) { return HandlePoolListener(c.agent, c.body); }},
    {"/v1/dag/submit", V::post, [](const ApiCall& c) { return HandleDagSubmit(c.agent, c.body); }},
    {"/v1/dag/status", V::post, [](const ApiCall& c) { return HandleDagStatus(c.agent, c.body); }},
    {"/v1/grid/jobs", V::post, nullptr,
     [](const ApiCall& c, Replier r) { HandleGridJobs(c.agent, c.body, std::move(r)); }},
    {"/v1/grid/update", V::post,
     [](const ApiCall& c) { return HandleGridUpdate(c.agent, c.body); }},
    {"/v1/shutdown", V::post, Shutdown},
};

}  // namespace

std::vector<std::string> ApiEndpoints() {
  std::vector<std::string> out;
  for (const Route& r : kRoutes)
    out.push_back(std::string(http::to_string(r.method)) + " " + std::string(r.path));
  return out;
}

void HandleApiRequest(Agent& agent, const ApiRequest& req, std::function<void(ApiResponse)> reply) {
  std::string_view target = req.target();
  const Route* route = nullptr;
  for (const Route& r : kRoutes) {
    if (r.path == target) route = &r;
  }
  if (!route)
    return reply(ErrorReply(http::status::not_found, "no such endpoint: " + std::string(target)));
  if (req.method() != route->method)
    return reply(ErrorReply(
        http::status::method_not_allowed,
        "use " + std::string(http::to_string(route->method)) + " for " + std::string(target)));
  json::object none;
  Result<json::object> body = none;
  if (route->method == V::post) body = ParseBody(req);
  if (!body) return reply(ErrorReply(body.error()));
  ApiCall call{agent, *body, req.caller};
  if (route->now) return reply(route->now(call));
  route->later(call, std::move(reply));
}

}  // namespace kite::agent
