// The pool's endpoint of the agent's API: the slot ads.
#include "agent/pool_api.h"

#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <optional>

#include "agent/agent.h"
#include "agent/pool.h"
#include "agent/pool_authority.h"
#include "agent/pool_tls.h"
#include "classad/expr.h"
#include "classad/io.h"
#include "common/clock.h"

namespace kite::agent {

namespace http = boost::beast::http;
namespace json = boost::json;

ApiResponse HandlePoolStatus(Agent& agent, const json::object& body) {
  classad::ExprPtr constraint;
  if (auto* c = body.if_contains("constraint"); c && !c->is_null()) {
    if (!c->is_string())
      return Reply(http::status::bad_request, R"({"error":"constraint must be a string"})");
    if (!c->as_string().empty()) {
      auto e = classad::ParseExpr(std::string_view(c->as_string()));
      if (!e) {
        json::object o{{"error", "constraint: " + e.error().message()}};
        return Reply(http::status::bad_request, json::serialize(o) + "\n");
      }
      constraint = *e;
    }
  }
  std::string out = "[";
  bool first = true;
  if (auto* g = body.if_contains("grid"); g && g->is_bool() && g->as_bool()) {
    for (const auto& site : agent.broker().Sites()) {
      if (constraint && !classad::EvaluateExpr(*constraint, &site.ad).IsTrue()) continue;
      if (!first) out += ",\n";
      first = false;
      classad::AppendJson(out, site.ad);
    }
    out += "]\n";
    return Reply(http::status::ok, std::move(out));
  }
  for (const auto& slot : agent.pool().Slots()) {
    classad::ClassAd ad = *slot.ad;
    if (slot.job) ad.Assign("JobId", JobIdString(*slot.job));
    if (constraint && !classad::EvaluateExpr(*constraint, &ad).IsTrue()) continue;
    if (!first) out += ",\n";
    first = false;
    classad::AppendJson(out, ad);
  }
  out += "]\n";
  return Reply(http::status::ok, std::move(out));
}

ApiResponse HandleFlood(Agent& agent, const json::object& body) {
  if (auto* stop = body.if_contains("stop"); stop && stop->is_bool() && stop->as_bool()) {
    if (auto st = agent.flood().Clear(); !st) {
      return Reply(http::status::internal_server_error,
                   json::serialize(json::object{{"error", st.error().message()}}) + "\n");
    }
  } else if (auto* req = body.if_contains("request")) {
    if (!req->is_object()) {
      return Reply(http::status::bad_request, R"({"error":"request must be an object"})");
    }
    auto f = glidein::FloodFromJson(json::serialize(*req));
    Status st = f ? agent.flood().Configure(std::move(*f)) : Status(Fail(f.error()));
    if (!st) {
      return Reply(http::status::bad_request,
                   json::serialize(json::object{{"error", st.error().message()}}) + "\n");
    }
    agent.flood().Tick();
  }
  return Reply(http::status::ok,
               json::serialize(json::object{{"status", agent.flood().Describe()}}) + "\n");
}

namespace {

ApiResponse Error(http::status status, const std::string& why) {
  return Reply(status, json::serialize(json::object{{"error", why}}) + "\n");
}

// A whole number of `min` to `max` at `key` of `o`; nullopt (and `why` set) otherwise.
std::optional<int64_t> Whole(const json::object& o, const char* key, int64_t min, int64_t max,
                             std::string* why) {
  const json::value* v = o.if_contains(key);
  if (v && v->is_int64() && v->as_int64() >= min && v->as_int64() <= max) return v->as_int64();
  if (v && v->is_uint64() && v->as_uint64() <= static_cast<uint64_t>(max) &&
      static_cast<int64_t>(v->as_uint64()) >= min)
    return static_cast<int64_t>(v->as_uint64());
  *why = std::string(key) + " must be a whole number from " + std::to_string(min) + " to " +
         std::to_string(max);
  return std::nullopt;
}

}  // namespace

ApiResponse HandlePoolCredential(Agent& agent, const json::object& body) {
  PoolAuthority& authority = agent.pool_authority();
  std::string why;
  constexpr int64_t kMaxLifetime = 10 * 365 * 86400;
  if (const json::value* g = body.if_contains("glideins"); g && g->is_object()) {
    const json::object& o = g->as_object();
    auto cluster = Whole(o, "cluster", 1, kMaxJobId, &why);
    auto count = cluster ? Whole(o, "count", 1, 10000, &why) : std::nullopt;
    auto slots = count ? Whole(o, "slots", 1, pool::kMaxCredentialSlots, &why) : std::nullopt;
    auto lifetime = slots ? Whole(o, "lifetime", 0, kMaxLifetime, &why) : std::nullopt;
    if (!lifetime) return Error(http::status::bad_request, "glideins: " + why);
    // Only for glide-ins about to be submitted: no credential for a job that exists already.
    if (!agent.queue().IsReserved(static_cast<int>(*cluster)))
      return Error(http::status::conflict, "cluster " + std::to_string(*cluster) +
                                               " is not a fresh cluster id (ask for one first)");
    std::string dir = agent.options().home + "/glidein";
    if (auto st =
            IssueGlideinCredentials(authority, static_cast<int>(*cluster), static_cast<int>(*count),
                                    static_cast<int>(*slots), static_cast<double>(*lifetime), dir);
        !st) {
      return Error(http::status::internal_server_error, st.error().message());
    }
    return Reply(http::status::ok, json::serialize(json::object{{"dir", dir}}) + "\n");
  }
  if (const json::value* c = body.if_contains("create"); c && c->is_object()) {
    const json::object& o = c->as_object();
    const json::value* name = o.if_contains("name");
    if (!name || !name->is_string())
      return Error(http::status::bad_request, "create: name must be a string");
    std::string n(name->as_string());
    if (auto st = pool::CheckStartdName(n); !st)
      return Error(http::status::bad_request, st.error().message());
    if (n.starts_with("glidein-"))
      return Error(http::status::bad_request,
                   "create: names starting with glidein- are the glide-ins' own");
    auto slots = Whole(o, "slots", 1, pool::kMaxCredentialSlots, &why);
    auto lifetime = slots ? Whole(o, "lifetime", 1, kMaxLifetime, &why) : std::nullopt;
    if (!lifetime) return Error(http::status::bad_request, "create: " + why);
    std::string text = authority.Issue(
        pool::CredentialClaims{.kind = pool::CredentialKind::kStartd,
                               .name = n,
                               .slots = static_cast<int>(*slots),
                               .expires = static_cast<int64_t>(authority.Now()) + *lifetime});
    auto claims = pool::ParseCredential(text);
    if (!claims) return Error(http::status::internal_server_error, claims.error().message());
    spdlog::info("agent: pool: issued startd credential {} for '{}' ({} slot(s), until {})",
                 claims->id, n, claims->slots, FormatUtc(static_cast<double>(claims->expires)));
    return Reply(http::status::ok,
                 json::serialize(json::object{
                     {"credential", text}, {"id", claims->id}, {"expires", claims->expires}}) +
                     "\n");
  }
  if (const json::value* r = body.if_contains("revoke"); r && r->is_string()) {
    std::string id(r->as_string());
    if (auto st = authority.Revoke(id); !st)
      return Error(st.error().code() == ErrorCode::kInvalidInput
                       ? http::status::bad_request
                       : http::status::internal_server_error,
                   st.error().message());
    spdlog::info("agent: pool: credential {} revoked", id);
    agent.RecheckPool();  // a startd holding it is shown out now
    return Reply(http::status::ok, json::serialize(json::object{{"revoked", id}}) + "\n");
  }
  return Error(http::status::bad_request,
               "say one of glideins (an object), create (an object) or revoke (an id)");
}

ApiResponse HandlePoolListener(Agent& agent, const json::object& body) {
  PoolTlsListener* tls = agent.pool_tls();
  if (tls == nullptr) return Error(http::status::service_unavailable, "the agent is starting");
  if (const json::value* r = body.if_contains("recheck"); r && r->is_bool() && r->as_bool())
    tls->Recheck();
  auto v = tls->Describe();
  json::object o{{"configured", v.configured},
                 {"listening", v.listening},
                 {"address", v.address},
                 {"problem", v.problem}};
  return Reply(http::status::ok, json::serialize(o) + "\n");
}

}  // namespace kite::agent
