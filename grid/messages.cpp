// The agent <-> gridmanager messages and their JSON forms.
#include "grid/messages.h"

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <cmath>
#include <limits>

#include "classad/expr.h"
#include "classad/value.h"
#include "grid/codes.h"

namespace kite::grid {
namespace {

namespace json = boost::json;

constexpr std::array<std::pair<GridAction, std::string_view>, 6> kActionNames = {{
    {GridAction::kNone, ""},
    {GridAction::kRunning, "running"},
    {GridAction::kExited, "exited"},
    {GridAction::kIdle, "idle"},
    {GridAction::kHold, "hold"},
    {GridAction::kRetire, "retire"},
}};

struct AttrInfo {
  GridAttr attr;
  std::string_view name;
  AttrType type;
};
constexpr std::array<AttrInfo, 9> kAttrs = {{
    {GridAttr::kJobId, "GridJobId", AttrType::kString},
    {GridAttr::kJobStatus, "GridJobStatus", AttrType::kString},
    {GridAttr::kJobSiteStatus, "GridJobSiteStatus", AttrType::kString},
    {GridAttr::kAttempt, "GridAttempt", AttrType::kInteger},
    {GridAttr::kFinal, "GridFinal", AttrType::kBool},
    {GridAttr::kExitCode, "GridExitCode", AttrType::kInteger},
    {GridAttr::kExitBySignal, "GridExitBySignal", AttrType::kBool},
    {GridAttr::kFailureCode, "GridFailureCode", AttrType::kString},
    {GridAttr::kFailureMessage, "GridFailureMessage", AttrType::kString},
}};

std::unexpected<Error> Bad(std::string what) {
  return Fail(ErrorCode::kInvalidInput, std::move(what));
}

// Members read with the agent's conventions: absent or null is the default.
Result<std::string> GetString(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) return std::string();
  if (!v->is_string()) return Bad(std::string(key) + " must be a string");
  return std::string(v->as_string());
}

Result<int> GetInt(const json::object& o, std::string_view key, int fallback = 0) {
  auto* v = o.if_contains(key);
  if (!v || v->is_null()) return fallback;
  if (!v->is_int64() || v->as_int64() < std::numeric_limits<int>::min() ||
      v->as_int64() > std::numeric_limits<int>::max())
    return Bad(std::string(key) + " must be an integer");
  return static_cast<int>(v->as_int64());
}

// Strings go back out as JSON, which carries only UTF-8 (a ClassAd escape can make any byte).
bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

// `text` as a literal of `attr`'s type, or undefined.
Result<AttrValue> ParseAttrValue(GridAttr attr, std::string_view text) {
  std::string name(GridAttrName(attr));
  auto e = classad::ParseExpr(text);
  classad::Value v;
  if (!e || !classad::IsLiteral(**e, &v))
    return Bad("set." + name + " must be a literal, not '" + std::string(text) + "'");
  if (v.IsUndefined()) return AttrValue{};
  switch (GridAttrType(attr)) {
    case AttrType::kString:
      if (v.IsString() && !ValidUtf8(v.AsString())) return Bad("set." + name + " is not UTF-8");
      if (v.IsString()) return AttrValue{std::string(v.AsString())};
      break;
    case AttrType::kInteger:
      if (v.IsInteger()) return AttrValue{v.AsInteger()};
      break;
    case AttrType::kBool:
      if (v.IsBool()) return AttrValue{v.AsBool()};
      break;
  }
  return Bad("set." + name + " has the wrong type");
}

Result<std::vector<AttrChange>> ParseSet(const json::value& v) {
  if (!v.is_object()) return Bad("set must be an object of expressions");
  std::vector<AttrChange> out;
  for (auto& [k, text] : v.as_object()) {
    auto attr = ParseGridAttrName(k);
    if (!attr) return Bad("set." + std::string(k) + " is not an attribute a gridmanager sets");
    if (!text.is_string()) return Bad("set." + std::string(k) + " must be an expression string");
    auto value = ParseAttrValue(*attr, text.as_string());
    if (!value) return Fail(value.error());
    out.push_back({*attr, std::move(*value)});
  }
  return out;
}

Result<ExitInfo> ParseExit(const json::value& v) {
  auto* o = v.if_object();
  auto* code = o ? o->if_contains("code") : nullptr;
  auto* sig = o ? o->if_contains("signaled") : nullptr;
  if (!code || !code->is_int64() || (sig && !sig->is_bool()) ||
      code->as_int64() < std::numeric_limits<int>::min() ||
      code->as_int64() > std::numeric_limits<int>::max())
    return Bad("exit needs an integer code and a boolean signaled");
  return ExitInfo{sig && sig->as_bool(), static_cast<int>(code->as_int64())};
}

Result<LogEvent> ParseEvent(const json::value& v) {
  auto* o = v.if_object();
  if (!o) return Bad("event must be an object");
  auto* code = o->if_contains("code");
  auto* text = o->if_contains("text");
  if (!code || !code->is_int64() || code->as_int64() < 0 ||
      code->as_int64() > std::numeric_limits<int>::max() || !text || !text->is_string())
    return Bad("event needs an integer code and a text");
  return LogEvent{static_cast<int>(code->as_int64()), std::string(text->as_string())};
}

// The members of an update after its id.
Status ParseUpdateBody(const json::object& o, GridUpdate& u) {
  if (auto* set = o.if_contains("set")) {
    auto s = ParseSet(*set);
    if (!s) return Fail(s.error());
    u.set = std::move(*s);
  }
  auto action = GetString(o, "action");
  if (!action) return Fail(action.error());
  auto a = ParseGridAction(*action);
  if (!a) return Bad("unknown action '" + *action + "'");
  u.action = *a;
  auto reason = GetString(o, "reason");
  if (!reason) return Fail(reason.error());
  u.reason = std::move(*reason);
  auto code = GetInt(o, "code");
  if (!code) return Fail(code.error());
  auto subcode = GetInt(o, "subcode");
  if (!subcode) return Fail(subcode.error());
  u.hold_code = *code;
  u.hold_subcode = *subcode;
  if (auto* e = o.if_contains("exit"); e && !e->is_null()) {
    auto exit = ParseExit(*e);
    if (!exit) return Fail(exit.error());
    u.exit = *exit;
  }
  if (u.action == GridAction::kExited && !u.exit) return Bad("exited needs exit");
  if (u.action != GridAction::kExited && u.exit) return Bad("exit goes only with exited");
  if (auto* e = o.if_contains("event"); e && !e->is_null()) {
    auto ev = ParseEvent(*e);
    if (!ev) return Fail(ev.error());
    u.event = std::move(*ev);
  }
  return {};
}

// The latest unix time a message may carry (the year 5138); past it a double parsed from JSON may
// not read back the same.
constexpr double kLatestTime = 1e11;

Result<ResourceReport> ParseResourceReport(const json::value& e) {
  auto* o = e.if_object();
  auto* name = o ? o->if_contains("resource") : nullptr;
  auto* up = o ? o->if_contains("reachable") : nullptr;
  auto* last = o ? o->if_contains("last_contact") : nullptr;
  auto* why = o ? o->if_contains("last_error") : nullptr;
  if (!name || !name->is_string() || name->as_string().empty() || !up || !up->is_bool() ||
      (last && !last->is_number()) || (why && !why->is_string()))
    return Bad("resources must be [{resource, reachable, last_contact, last_error}]");
  double contact = last ? last->to_number<double>() : 0;
  if (!(contact >= 0 && contact <= kLatestTime)) return Bad("last_contact is out of range");
  // Whole milliseconds: such a number is written and read back as the same double.
  return ResourceReport{std::string(name->as_string()), up->as_bool(),
                        std::round(contact * 1000) / 1000,
                        why ? std::string(why->as_string()) : ""};
}

json::value ToJsonValue(const ResourceReport& r) {
  return json::object{{"resource", r.resource},
                      {"reachable", r.reachable},
                      {"last_contact", r.last_contact},
                      {"last_error", r.last_error}};
}

// "moving": true, for an Idle job only; absent: false.
Result<bool> MovingFlag(const json::object& o, int status) {
  const json::value* m = o.if_contains("moving");
  if (!m) return false;
  if (!m->is_bool()) return Bad("moving must be true or false");
  if (m->as_bool() && status != kite::kIdle) return Bad("only an idle job can be moving");
  return m->as_bool();
}

Result<UpdateResult> ParseUpdateResult(const json::value& v) {
  auto* o = v.if_object();
  if (!o) return Bad("each result must be an object");
  UpdateResult r;
  auto id = GetString(*o, "id");
  auto error = GetString(*o, "error");
  auto status = GetInt(*o, "status");
  if (!id || !error || !status)
    return Bad("a result needs a string id and error, an integer status");
  r.id = std::move(*id);
  r.error = std::move(*error);
  r.status = r.error.empty() ? *status : 0;  // an update not applied has no status
  auto moving = MovingFlag(*o, r.status);
  if (!moving) return Fail(moving.error());
  r.moving = *moving;
  return r;
}

Result<PollJob> ParsePollJob(const json::value& v) {
  auto* o = v.if_object();
  if (!o) return Bad("each job must be an object");
  auto* id = o->if_contains("id");
  if (!id || !id->is_string() || id->as_string().empty()) return Bad("each job needs an id");
  auto status = GetInt(*o, "status", -1);
  if (!status || (*status < kStatusLeftQueue || *status > kite::kHeld))
    return Bad("job " + std::string(id->as_string()) + " needs a status from 0 to 5");
  PollJob j{std::string(id->as_string()), *status, ""};
  auto moving = MovingFlag(*o, j.status);
  if (!moving) return Fail(moving.error());
  j.moving = *moving;
  if (j.status == kStatusLeftQueue) return j;
  auto* ad = o->if_contains("ad");
  if (!ad || !ad->is_string()) return Bad("job " + j.id + " needs an ad");
  j.ad = std::string(ad->as_string());
  return j;
}

}  // namespace

std::string_view GridActionName(GridAction action) {
  for (const auto& [a, name] : kActionNames)
    if (a == action) return name;
  return "?";
}

std::optional<GridAction> ParseGridAction(std::string_view name) {
  for (const auto& [a, n] : kActionNames)
    if (n == name) return a;
  return std::nullopt;
}

std::string_view GridAttrName(GridAttr attr) {
  for (const auto& a : kAttrs)
    if (a.attr == attr) return a.name;
  return "?";
}

std::optional<GridAttr> ParseGridAttrName(std::string_view name) {
  for (const auto& a : kAttrs)
    if (a.name == name) return a.attr;
  return std::nullopt;
}

AttrType GridAttrType(GridAttr attr) {
  for (const auto& a : kAttrs)
    if (a.attr == attr) return a.type;
  return AttrType::kString;
}

std::string AttrValueText(const AttrValue& value) {
  struct Text {
    std::string operator()(std::monostate) const { return "undefined"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(const std::string& s) const {
      return classad::Unparse(*classad::MakeString(s));
    }
  };
  return std::visit(Text{}, value);
}

classad::ExprPtr AttrValueExpr(const AttrValue& value) {
  struct Expr {
    classad::ExprPtr operator()(std::monostate) const { return classad::MakeUndefined(); }
    classad::ExprPtr operator()(bool b) const { return classad::MakeBool(b); }
    classad::ExprPtr operator()(int64_t i) const { return classad::MakeInteger(i); }
    classad::ExprPtr operator()(const std::string& s) const { return classad::MakeString(s); }
  };
  return std::visit(Expr{}, value);
}

json::value ToJsonValue(const GridUpdate& u) {
  json::object o{{"id", u.id}};
  if (!u.set.empty()) {
    json::object set;
    for (const auto& c : u.set) set[GridAttrName(c.attr)] = AttrValueText(c.value);
    o["set"] = std::move(set);
  }
  if (u.action != GridAction::kNone) o["action"] = GridActionName(u.action);
  if (u.exit) o["exit"] = json::object{{"signaled", u.exit->signaled}, {"code", u.exit->code}};
  if (!u.reason.empty()) o["reason"] = u.reason;
  if (u.hold_code != 0) o["code"] = u.hold_code;
  if (u.hold_subcode != 0) o["subcode"] = u.hold_subcode;
  if (u.event) o["event"] = json::object{{"code", u.event->code}, {"text", u.event->text}};
  return o;
}

json::value ToJsonValue(const UpdateRequest& r) {
  json::array updates;
  for (const auto& u : r.updates) updates.push_back(ToJsonValue(u));
  json::object o{{"updates", std::move(updates)}};
  if (!r.resources.empty()) {
    json::array reports;
    for (const auto& rr : r.resources) reports.push_back(ToJsonValue(rr));
    o["resources"] = std::move(reports);
  }
  return o;
}

json::value ToJsonValue(const UpdateResponse& r) {
  json::array results;
  for (const auto& res : r.results) {
    json::object o;
    if (!res.id.empty()) o["id"] = res.id;
    if (res.error.empty()) {
      o["status"] = res.status;
      if (res.moving) o["moving"] = true;
    } else {
      o["error"] = res.error;
    }
    results.push_back(std::move(o));
  }
  return json::object{{"results", std::move(results)}};
}

json::value ToJsonValue(const PollRequest& r) {
  return json::object{
      {"proxy", r.proxy}, {"since", r.since}, {"epoch", r.epoch}, {"timeout", r.timeout}};
}

json::value ToJsonValue(const PollResponse& r) {
  json::array jobs;
  for (const auto& j : r.jobs) {
    json::object o{{"id", j.id}, {"status", j.status}};
    if (j.moving) o["moving"] = true;
    if (j.status != kStatusLeftQueue) o["ad"] = j.ad;
    jobs.push_back(std::move(o));
  }
  return json::object{{"epoch", r.epoch}, {"generation", r.generation}, {"jobs", std::move(jobs)}};
}

template <class T>
std::string ToJson(const T& message) {
  return json::serialize(ToJsonValue(message));
}
template std::string ToJson(const GridUpdate&);
template std::string ToJson(const UpdateRequest&);
template std::string ToJson(const UpdateResponse&);
template std::string ToJson(const PollRequest&);
template std::string ToJson(const PollResponse&);

Result<GridUpdate> ParseGridUpdate(const json::value& v) {
  auto* o = v.if_object();
  auto* id = o ? o->if_contains("id") : nullptr;
  if (!id || !id->is_string() || id->as_string().empty()) return Bad("each update needs an id");
  GridUpdate u;
  u.id = std::string(id->as_string());
  if (auto st = ParseUpdateBody(*o, u); !st) return Fail(st.error());
  return u;
}

Result<ParsedUpdateRequest> ParseUpdateRequest(const json::object& o) {
  auto* list = o.if_contains("updates");
  if (!list || !list->is_array()) return Bad("grid/update needs an updates array");
  ParsedUpdateRequest r;
  if (auto* res = o.if_contains("resources")) {
    if (!res->is_array())
      return Bad("resources must be [{resource, reachable, last_contact, last_error}]");
    for (const auto& e : res->as_array()) {
      auto report = ParseResourceReport(e);
      if (!report) return Fail(report.error());
      r.resources.push_back(std::move(*report));
    }
  }
  for (const auto& e : list->as_array()) {
    std::string id;
    if (auto* eo = e.if_object()) {
      if (auto* i = eo->if_contains("id"); i && i->is_string()) id = std::string(i->as_string());
    }
    r.updates.push_back({std::move(id), ParseGridUpdate(e)});
  }
  return r;
}

Result<UpdateResponse> ParseUpdateResponse(const json::object& o) {
  auto* list = o.if_contains("results");
  if (!list || !list->is_array()) return Bad("the grid/update reply needs a results array");
  UpdateResponse r;
  for (const auto& e : list->as_array()) {
    auto res = ParseUpdateResult(e);
    if (!res) return Fail(res.error());
    r.results.push_back(std::move(*res));
  }
  return r;
}

Result<PollRequest> ParsePollRequest(const json::object& o) {
  PollRequest r;
  auto proxy = GetString(o, "proxy");
  if (!proxy) return Fail(proxy.error());
  if (proxy->empty()) return Bad("grid/jobs needs a proxy");
  r.proxy = std::move(*proxy);
  auto epoch = GetString(o, "epoch");
  if (!epoch) return Fail(epoch.error());
  r.epoch = std::move(*epoch);
  if (auto* s = o.if_contains("since")) {
    if (!s->is_int64() || s->as_int64() < 0) return Bad("since must be a non-negative integer");
    r.since = static_cast<uint64_t>(s->as_int64());
  }
  if (auto* t = o.if_contains("timeout"); t && t->is_number()) {
    // Held to the agent's 0..60 s and to whole milliseconds: a wait needs no more, and a number
    // that size is written and read back as the same double.
    double seconds = t->to_number<double>();
    if (!(seconds > 0)) seconds = 0;
    r.timeout = std::round(std::min(seconds, kMaxPollTimeout) * 1000) / 1000;
  }
  return r;
}

Result<PollResponse> ParsePollResponse(const json::object& o) {
  auto* epoch = o.if_contains("epoch");
  auto* gen = o.if_contains("generation");
  auto* jobs = o.if_contains("jobs");
  if (!epoch || !epoch->is_string() || !gen || !(gen->is_int64() || gen->is_uint64()) ||
      (gen->is_int64() && gen->as_int64() < 0) || !jobs || !jobs->is_array())
    return Bad("the grid/jobs reply needs an epoch, a generation and jobs");
  PollResponse r;
  r.epoch = std::string(epoch->as_string());
  r.generation = gen->is_uint64() ? gen->as_uint64() : static_cast<uint64_t>(gen->as_int64());
  for (const auto& e : jobs->as_array()) {
    auto j = ParsePollJob(e);
    if (!j) return Fail(j.error());
    r.jobs.push_back(std::move(*j));
  }
  return r;
}

Result<json::object> ParseJsonObject(std::string_view text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  if (ec) return Bad("not JSON: " + ec.message());
  if (!v.is_object()) return Bad("not a JSON object");
  return std::move(v.as_object());
}

StoredGridAttrs ReadGridAttrs(const classad::ClassAd& ad) {
  StoredGridAttrs s;
  s.attempt = static_cast<int>(ad.EvaluateInt("GridAttempt").value_or(0));
  s.job_id = ad.EvaluateString("GridJobId").value_or("");
  s.job_status = ad.EvaluateString("GridJobStatus").value_or("");
  s.job_site_status = ad.EvaluateString("GridJobSiteStatus").value_or("");
  s.final = ad.EvaluateBool("GridFinal").value_or(false);
  if (auto code = ad.EvaluateInt("GridExitCode")) {
    s.exit = ExitInfo{ad.EvaluateBool("GridExitBySignal").value_or(false), static_cast<int>(*code)};
  }
  s.failure_code = ad.EvaluateString("GridFailureCode").value_or("");
  s.failure_message = ad.EvaluateString("GridFailureMessage").value_or("");
  return s;
}

}  // namespace kite::grid
