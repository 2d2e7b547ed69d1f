// The agent's API handlers (docs/api.md).
#include "agent/api.h"

#include <unistd.h>

#include <boost/json.hpp>
#include <string>

#include "agent/agent.h"
#include "agent/listing.h"
#include "classad/expr.h"
#include "classad/io.h"

namespace kite::agent {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

ApiResponse Reply(http::status status, std::string body, const char* type = "application/json") {
  ApiResponse res{status, 11};
  res.set(http::field::content_type, type);
  res.body() = std::move(body);
  return res;
}

ApiResponse ErrorReply(http::status status, const std::string& message) {
  json::object o;
  o["error"] = message;
  return Reply(status, json::serialize(o) + "\n");
}

ApiResponse ErrorReply(const Error& e) {
  auto status = http::status::bad_request;
  if (e.code() == ErrorCode::kNotFound) status = http::status::not_found;
  if (e.code() == ErrorCode::kConflict) status = http::status::conflict;
  if (e.code() == ErrorCode::kIo || e.code() == ErrorCode::kInternal)
    status = http::status::internal_server_error;
  return ErrorReply(status, e.message());
}

Result<json::object> ParseBody(const ApiRequest& req) {
  if (req.body().empty()) return json::object{};
  boost::system::error_code ec;
  auto v = json::parse(req.body(), ec);
  if (ec) return Fail(ErrorCode::kInvalidInput, "request body is not JSON: " + ec.message());
  if (!v.is_object()) return Fail(ErrorCode::kInvalidInput, "request body must be a JSON object");
  return std::move(v.as_object());
}

Result<std::string> GetString(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) return std::string();
  if (!v->is_string())
    return Fail(ErrorCode::kInvalidInput, std::string(key) + " must be a string");
  return std::string(v->as_string());
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

// Queued jobs matching the selectors (none: all) and the constraint (empty: all).
Result<std::vector<Job*>> Select(Agent& agent, const std::vector<JobSelector>& sel,
                                 const std::string& constraint) {
  classad::ExprPtr expr;
  if (!constraint.empty()) {
    auto e = classad::ParseExpr(constraint);
    if (!e) return Fail(ErrorCode::kInvalidInput, "constraint: " + e.error().message());
    expr = *e;
  }
  std::vector<Job*> out;
  auto consider = [&](Job& j) {
    if (!expr || classad::EvaluateExpr(*expr, &j.ad).IsTrue()) out.push_back(&j);
  };
  auto& jobs = agent.queue().jobs();
  if (sel.empty()) {
    for (auto& [k, j] : jobs) consider(j);
    return out;
  }
  for (auto& s : sel) {
    if (s.proc >= 0) {
      if (Job* j = agent.queue().Find({s.cluster, s.proc})) consider(*j);
      continue;
    }
    for (auto it = jobs.lower_bound({s.cluster, 0});
         it != jobs.end() && it->first.cluster == s.cluster; ++it)
      consider(it->second);
  }
  return out;
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

ApiResponse HandleSubmit(Agent& agent, const json::object& body) {
  SubmitRequest req;
  auto* c = body.if_contains("cluster");
  if (!c || !c->is_int64())
    return ErrorReply(http::status::bad_request, "cluster must be an integer");
  req.cluster = static_cast<int>(c->as_int64());
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

ApiResponse HandleQuery(Agent& agent, const json::object& body) {
  auto sel = GetSelectors(body);
  if (!sel) return ErrorReply(sel.error());
  auto constraint = GetString(body, "constraint");
  if (!constraint) return ErrorReply(constraint.error());
  auto format = GetString(body, "format");
  if (!format) return ErrorReply(format.error());
  bool history =
      body.contains("history") && body.at("history").is_bool() && body.at("history").as_bool();
  double now = agent.queue().Now();
  std::vector<ListedJob> listed;
  std::vector<classad::ClassAd> hist_ads;
  if (!history) {
    auto jobs = Select(agent, *sel, *constraint);
    if (!jobs) return ErrorReply(jobs.error());
    listed.reserve(jobs->size());
    for (Job* j : *jobs) listed.push_back({j->key, &j->ad, j->cluster});
  } else {
    classad::ExprPtr expr;
    if (!constraint->empty()) {
      auto e = classad::ParseExpr(*constraint);
      if (!e) return ErrorReply(http::status::bad_request, "constraint: " + e.error().message());
      expr = *e;
    }
    size_t limit = 0;
    if (auto* l = body.if_contains("limit"); l && l->is_int64() && l->as_int64() > 0)
      limit = static_cast<size_t>(l->as_int64());
    std::vector<JobKey> keys;
    auto take = [&](const store::HistoryRecord& h) {
      auto ad = classad::ParseOldAd(h.ad);
      if (!ad) return true;
      if (expr && !classad::EvaluateExpr(*expr, &*ad).IsTrue()) return true;
      hist_ads.push_back(std::move(*ad));
      keys.push_back(h.job);
      return limit == 0 || hist_ads.size() < limit;
    };
    std::vector<JobSelector> all = sel->empty() ? std::vector<JobSelector>{{-1, -1}} : *sel;
    for (auto& s : all) {
      auto st = agent.store().History(s.cluster, s.proc, 0, take);
      if (!st) return ErrorReply(st.error());
    }
    for (size_t i = 0; i < hist_ads.size(); ++i) listed.push_back({keys[i], &hist_ads[i], nullptr});
  }
  if (*format == "json") return Reply(http::status::ok, FormatJson(listed));
  std::string text;
  if (*format == "batch" && !history) {
    text = FormatBatchTable(listed, now);
  } else if (*format == "grid") {
    text = FormatGridTable(listed);
  } else {
    text = FormatJobTable(listed, now, history);
  }
  if (!history) text += "\n" + FormatTotals(listed);
  return Reply(http::status::ok, std::move(text), "text/plain");
}

ApiResponse HandleAct(Agent& agent, const json::object& body) {
  auto action = GetString(body, "action");
  if (!action) return ErrorReply(action.error());
  Agent::Action act;
  std::string verb;
  if (*action == "rm") {
    act = Agent::Action::kRemove;
    verb = "removed";
  } else if (*action == "hold") {
    act = Agent::Action::kHold;
    verb = "held";
  } else if (*action == "release") {
    act = Agent::Action::kRelease;
    verb = "released";
  } else if (*action == "forcex") {
    act = Agent::Action::kForceRemove;
    verb = "removed";
  } else {
    return ErrorReply(http::status::bad_request, "action must be rm, forcex, hold or release");
  }
  auto sel = GetSelectors(body);
  if (!sel) return ErrorReply(sel.error());
  auto constraint = GetString(body, "constraint");
  if (!constraint) return ErrorReply(constraint.error());
  if (sel->empty() && constraint->empty())
    return ErrorReply(http::status::bad_request, "name the jobs: ids or a constraint");
  auto jobs = Select(agent, *sel, *constraint);
  if (!jobs) return ErrorReply(jobs.error());
  auto reason = GetString(body, "reason");
  if (!reason) return ErrorReply(reason.error());
  std::string why = *reason;
  if (why.empty()) {
    const char* user = ::getenv("USER");
    std::string via = act == Agent::Action::kRemove        ? "kite rm"
                      : act == Agent::Action::kForceRemove ? "kite rm --forcex"
                      : act == Agent::Action::kHold        ? "kite hold"
                                                           : "kite release";
    why = "via " + via + " (by user " + (user ? user : "?") + ")";
  }
  // Ids that matched nothing are reported too, as condor_rm does. (Looked at before acting: a
  // job that leaves the queue in Act is gone afterwards.)
  std::vector<std::string> unmatched;
  for (auto& s : *sel) {
    bool any = false;
    for (Job* j : *jobs)
      any |= j->key.cluster == s.cluster && (s.proc < 0 || j->key.proc == s.proc);
    if (!any) {
      std::string id =
          std::to_string(s.cluster) + (s.proc >= 0 ? "." + std::to_string(s.proc) : "");
      unmatched.push_back((s.proc >= 0 ? "Job " : "Cluster ") + id + " not found");
    }
  }
  std::vector<std::string> errors;
  size_t matched = jobs->size();
  int changed = agent.Act(act, *jobs, why, &errors);
  if (auto st = agent.queue().Flush(); !st) return ErrorReply(st.error());
  json::object o;
  o["matched"] = matched;
  o["changed"] = changed;
  o["verb"] = verb;
  json::array errs;
  for (auto& e : errors) errs.push_back(json::string(e));
  for (auto& e : unmatched) errs.push_back(json::string(e));
  o["errors"] = std::move(errs);
  return Reply(http::status::ok, json::serialize(o) + "\n");
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
  bool finished = now.idle == 0 && now.running == 0 && now.held == 0;
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

void HandleGridJobs(Agent& agent, const json::object& body,
                    std::function<void(ApiResponse)> reply) {
  auto proxy = GetString(body, "proxy");
  if (!proxy) return reply(ErrorReply(proxy.error()));
  if (proxy->empty())
    return reply(ErrorReply(http::status::bad_request, "grid/jobs needs a proxy"));
  auto epoch = GetString(body, "epoch");
  if (!epoch) return reply(ErrorReply(epoch.error()));
  uint64_t since = 0;
  if (auto* v = body.if_contains("since")) {
    if (!v->is_int64() || v->as_int64() < 0)
      return reply(ErrorReply(http::status::bad_request, "since must be a non-negative integer"));
    since = static_cast<uint64_t>(v->as_int64());
  }
  double timeout = 0;
  if (auto* t = body.if_contains("timeout"); t && t->is_number()) timeout = t->to_number<double>();
  timeout = std::clamp(timeout, 0.0, 60.0);
  agent.GridPoll(*proxy, since, *epoch, timeout, [&agent, reply](Agent::GridPollResult r) {
    json::object o;
    o["epoch"] = r.epoch;
    o["generation"] = r.generation;
    json::array jobs;
    for (const JobKey& key : r.jobs) {
      Job* j = agent.queue().Find(key);
      if (!j) continue;
      jobs.push_back(json::object{
          {"id", JobIdString(key)}, {"status", j->status}, {"ad", agent.queue().FlatText(*j)}});
    }
    o["jobs"] = std::move(jobs);
    reply(Reply(http::status::ok, json::serialize(o) + "\n"));
  });
}

Result<Agent::GridUpdate> ParseGridUpdate(const json::object& o) {
  Agent::GridUpdate u;
  auto bad = [](const std::string& what) { return Fail(ErrorCode::kInvalidInput, what); };
  if (auto* set = o.if_contains("set")) {
    if (!set->is_object()) return bad("set must be an object of expressions");
    for (auto& [k, v] : set->as_object()) {
      if (!v.is_string()) return bad("set." + std::string(k) + " must be an expression string");
      u.set.emplace_back(std::string(k), std::string(v.as_string()));
    }
  }
  auto action = GetString(o, "action");
  if (!action) return Fail(action.error());
  u.action = *action;
  auto reason = GetString(o, "reason");
  if (!reason) return Fail(reason.error());
  u.reason = *reason;
  if (auto* c = o.if_contains("code"); c && c->is_int64()) u.code = static_cast<int>(c->as_int64());
  if (auto* c = o.if_contains("subcode"); c && c->is_int64())
    u.subcode = static_cast<int>(c->as_int64());
  if (auto* e = o.if_contains("exit")) {
    if (!e->is_object()) return bad("exit must be an object");
    auto& eo = e->as_object();
    auto* code = eo.if_contains("code");
    auto* sig = eo.if_contains("signaled");
    if (!code || !code->is_int64() || (sig && !sig->is_bool()))
      return bad("exit needs an integer code and a boolean signaled");
    u.exit.kind = sig && sig->as_bool() ? ExecStatus::Kind::kSignaled : ExecStatus::Kind::kExited;
    u.exit.code = static_cast<int>(code->as_int64());
    u.exit.end = u.exit.start = 0;
  } else if (u.action == "exited") {
    return bad("exited needs exit");
  }
  if (auto* e = o.if_contains("event")) {
    if (!e->is_object()) return bad("event must be an object");
    auto& eo = e->as_object();
    auto* code = eo.if_contains("code");
    auto* text = eo.if_contains("text");
    if (!code || !code->is_int64() || !text || !text->is_string())
      return bad("event needs an integer code and a text");
    u.event_code = static_cast<int>(code->as_int64());
    u.event_text = std::string(text->as_string());
  }
  return u;
}

// grid/update's optional "resources": [{"resource": "HOST:PORT", "reachable": B,
// "last_contact": T, "last_error": "..."}], kept for the REST endpoint. All or none are taken.
Status ApplyResourceReports(Agent& agent, const json::value& v) {
  auto bad = [] {
    return Fail(ErrorCode::kInvalidInput,
                "resources must be [{resource, reachable, last_contact, last_error}]");
  };
  if (!v.is_array()) return bad();
  std::vector<std::pair<std::string, Agent::GridResourceReport>> reports;
  double now = agent.queue().Now();
  for (auto& e : v.as_array()) {
    auto* o = e.if_object();
    if (!o) return bad();
    auto* name = o->if_contains("resource");
    auto* up = o->if_contains("reachable");
    auto* last = o->if_contains("last_contact");
    auto* why = o->if_contains("last_error");
    if (!name || !name->is_string() || name->as_string().empty() || !up || !up->is_bool() ||
        (last && !last->is_number()) || (why && !why->is_string()))
      return bad();
    Agent::GridResourceReport r;
    r.reachable = up->as_bool();
    r.last_contact = last ? last->to_number<double>() : 0;
    r.last_error = why ? std::string(why->as_string()) : "";
    r.reported = now;
    reports.emplace_back(std::string(name->as_string()), std::move(r));
  }
  for (auto& [name, r] : reports) agent.ReportGridResource(name, std::move(r));
  return {};
}

ApiResponse HandleGridUpdate(Agent& agent, const json::object& body) {
  auto* list = body.if_contains("updates");
  if (!list || !list->is_array())
    return ErrorReply(http::status::bad_request, "grid/update needs an updates array");
  if (auto* res = body.if_contains("resources")) {
    if (auto st = ApplyResourceReports(agent, *res); !st) return ErrorReply(st.error());
  }
  json::array results;
  for (auto& v : list->as_array()) {
    json::object res;
    if (!v.is_object() || !v.as_object().contains("id") || !v.as_object().at("id").is_string()) {
      res["error"] = "each update needs an id";
      results.push_back(std::move(res));
      continue;
    }
    std::string id(v.as_object().at("id").as_string());
    res["id"] = id;
    auto sel = ParseJobSelector(id);
    Job* j = sel && sel->proc >= 0 ? agent.queue().Find({sel->cluster, sel->proc}) : nullptr;
    if (!j || j->universe != kUniverseGrid) {
      res["error"] = "no grid job " + id + " in the queue";
      results.push_back(std::move(res));
      continue;
    }
    auto u = ParseGridUpdate(v.as_object());
    auto status = u ? agent.ApplyGridUpdate(*j, *u) : Result<int>(Fail(u.error()));
    if (status) {
      res["status"] = *status;
    } else {
      res["error"] = status.error().message();
    }
    results.push_back(std::move(res));
  }
  // Acknowledged means durable: the gridmanager acts on the reply.
  if (auto st = agent.queue().Flush(); !st) return ErrorReply(st.error());
  json::object o;
  o["results"] = std::move(results);
  return Reply(http::status::ok, json::serialize(o) + "\n");
}

}  // namespace

void HandleApiRequest(Agent& agent, const ApiRequest& req, std::function<void(ApiResponse)> reply) {
  std::string_view target = req.target();
  if (req.method() == http::verb::get && target == "/v1/ping") {
    json::object o;
    o["agent"] = "kite-agent";
    o["pid"] = ::getpid();
    o["jobs"] = agent.queue().jobs().size();
    o["home"] = agent.options().home;
    return reply(Reply(http::status::ok, json::serialize(o) + "\n"));
  }
  if (req.method() != http::verb::post)
    return reply(
        ErrorReply(http::status::method_not_allowed, "use POST for " + std::string(target)));
  auto body = ParseBody(req);
  if (!body) return reply(ErrorReply(body.error()));
  if (target == "/v1/cluster") {
    auto id = agent.queue().NewCluster();
    if (!id) return reply(ErrorReply(id.error()));
    json::object o;
    o["cluster"] = *id;
    return reply(Reply(http::status::ok, json::serialize(o) + "\n"));
  }
  if (target == "/v1/submit") return reply(HandleSubmit(agent, *body));
  if (target == "/v1/query") return reply(HandleQuery(agent, *body));
  if (target == "/v1/act") return reply(HandleAct(agent, *body));
  if (target == "/v1/wait") return HandleWait(agent, *body, std::move(reply));
  if (target == "/v1/events") return reply(HandleEvents(agent, *body));
  if (target == "/v1/grid/jobs") return HandleGridJobs(agent, *body, std::move(reply));
  if (target == "/v1/grid/update") return reply(HandleGridUpdate(agent, *body));
  if (target == "/v1/shutdown") {
    reply(Reply(http::status::ok, "{\"stopping\":true}\n"));
    boost::asio::post(agent.io(), [&agent] { agent.Stop(); });
    return;
  }
  reply(ErrorReply(http::status::not_found, "no such endpoint: " + std::string(target)));
}

}  // namespace kite::agent
