// The pool's endpoint of the agent's API: the slot ads.
#include "agent/pool_api.h"

#include <boost/json.hpp>

#include "agent/agent.h"
#include "agent/pool.h"
#include "classad/expr.h"
#include "classad/io.h"

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

}  // namespace kite::agent
