// retry_request_memory / retry_request_disk (and their _max / _increase forms, and a request
// written as a list "1GB, 2GB, 8GB"): condor_submit turns them into a job transform the schedd
// applies when the job is evicted for using too much (TransformOnEvict and TransformBody_<attr>,
// steps separated by the ASCII record separator).
#include "classad/classad.h"
#include "common/strings.h"
#include "submit/expr_util.h"
#include "submit/job_attrs.h"

namespace kite::submit {
namespace {

struct RetryKind {
  const char* request_key;  // request_memory
  const char* list_key;     // retry_request_memory
  const char* max_key;
  const char* increase_key;
  const char* attr;        // RequestMemory
  const char* list_attr;   // RetryRequestMemory
  const char* index_attr;  // RetryRequestMemoryIndex
  const char* max_attr;    // MaxRequestMemory
  const char* next_attr;   // NextRequestMemory
  int64_t unit;            // bytes per unit of the attribute
  // The evictions the transform applies to. Memory: HTCondor's own (startd-held for memory,
  // subcode 102; or out of resources, 34/102). Disk: the same codes with subcode 104, Kite's
  // reading of HTCondor's disk limit.
  const char* requirements;
};

constexpr RetryKind kKinds[] = {
    {"request_memory", "retry_request_memory", "retry_request_memory_max",
     "retry_request_memory_increase", "RequestMemory", "RetryRequestMemory",
     "RetryRequestMemoryIndex", "MaxRequestMemory", "NextRequestMemory", 1 << 20,
     "REQUIREMENTS (VacateReasonCode==21 && VacateReasonSubCode==102) || "
     "(VacateReasonCode == 34 && VacateReasonSubCode == 102)"},
    {"request_disk", "retry_request_disk", "retry_request_disk_max", "retry_request_disk_increase",
     "RequestDisk", "RetryRequestDisk", "RetryRequestDiskIndex", "MaxRequestDisk",
     "NextRequestDisk", 1 << 10,
     "REQUIREMENTS (VacateReasonCode==21 && VacateReasonSubCode==104) || "
     "(VacateReasonCode == 34 && VacateReasonSubCode == 104)"},
};

constexpr char kStep = '\x1e';  // between the steps of a transform body

// The retry sizes: retry_request_X's list, else what follows the first item of request_X.
Result<std::vector<int64_t>> RetrySizes(JobContext& ctx, const RetryKind& k) {
  auto list = ctx.Get(k.list_key);
  if (!list) return Fail(list.error());
  std::string key = *list ? k.list_key : k.request_key;
  std::vector<std::string> items;
  if (*list) {
    items = Split(**list, ',');
  } else if (auto req = ctx.Get(k.request_key);
             req && *req && (*req)->find(',') != std::string::npos &&
             ParseBytes((*req)->substr(0, (*req)->find(',')), k.unit)) {
    items = Split(**req, ',');
    items.erase(items.begin());
  }
  std::vector<int64_t> out;
  for (const auto& item : items) {
    auto n = ParseBytes(item, k.unit);
    if (!n) return Fail(ctx.ErrorAt(key, key + ": '" + item + "' is not a size like 2GB"));
    out.push_back(*n);
  }
  return out;
}

// The next request after `increase`: the request plus a size, or an expression of the job's
// attributes evaluated against the request now set (condor_submit's reading).
std::optional<long long> NextValue(JobContext& ctx, const RetryKind& k, const std::string& inc) {
  const std::string* now = ctx.Emitted(k.attr);
  if (now == nullptr) return std::nullopt;
  auto base = EvalInteger(*now);
  if (!base) return std::nullopt;
  if (auto n = ParseBytes(inc, k.unit)) return *base + *n;
  classad::ClassAd ad;
  ad.Assign(k.attr, static_cast<int64_t>(*base));
  if (!ad.InsertText("KiteNext", inc)) return std::nullopt;
  return ad.EvaluateInt("KiteNext");
}

// The transform body after its REQUIREMENTS line, and the attributes it reads; "" for none.
Result<std::string> Body(JobContext& ctx, const RetryKind& k) {
  auto sizes = RetrySizes(ctx, k);
  if (!sizes) return Fail(sizes.error());
  auto max = ctx.Get(k.max_key);
  if (!max) return Fail(max.error());
  auto inc = ctx.Get(k.increase_key);
  if (!inc) return Fail(inc.error());
  std::string attr = k.attr;
  if (sizes->size() == 1) return "SET " + attr + " " + std::to_string(sizes->front());
  if (sizes->size() > 1) {
    std::string list = "{ ";
    for (size_t i = 0; i < sizes->size(); ++i) list += (i ? "," : "") + std::to_string((*sizes)[i]);
    ctx.Emit(k.list_attr, list + " }");
    std::string list_attr = k.list_attr, index = k.index_attr;
    return "EVALSET " + attr + " " + list_attr + "[" + index + "?:0]" + kStep + "EVALSET " + index +
           " MIN({size(" + list_attr + ")-1, (" + index + "?:0)+1})";
  }
  std::optional<int64_t> max_n;
  if (*max) {
    max_n = ParseBytes(**max, k.unit);
    if (!max_n)
      return Fail(ctx.ErrorAt(k.max_key,
                              std::string(k.max_key) + ": '" + **max + "' is not a size like 2GB"));
  }
  if (!*inc) return max_n ? "SET " + attr + " " + std::to_string(*max_n) : std::string();
  std::string next =
      ParseBytes(**inc, k.unit) ? attr + " + " + std::to_string(*ParseBytes(**inc, k.unit)) : **inc;
  if (!classad::ParseExpr(next)) {
    return Fail(ctx.ErrorAt(k.increase_key, std::string(k.increase_key) + ": '" + **inc +
                                                "' is neither a size nor an expression"));
  }
  if (max_n) {
    ctx.Emit(k.max_attr, std::to_string(*max_n));
    ctx.Emit(k.next_attr, next);
    return "EVALSET " + attr + " MIN({" + k.next_attr + ", " + k.max_attr + "})";
  }
  if (auto n = NextValue(ctx, k, **inc)) return "SET " + attr + " " + std::to_string(*n);
  ctx.Emit(k.next_attr, next);
  return "EVALSET " + attr + " " + k.next_attr;
}

}  // namespace

Status EmitRetryRequests(JobContext& ctx) {
  std::string names;
  for (const auto& k : kKinds) {
    auto body = Body(ctx, k);
    if (!body) return Fail(body.error());
    if (body->empty()) continue;
    names += (names.empty() ? "" : ",") + std::string(k.attr);
    ctx.Emit(std::string("TransformBody_") + k.attr,
             Quoted(std::string(k.requirements) + kStep + *body));
  }
  if (!names.empty()) ctx.Emit("TransformOnEvict", Quoted(names));
  return {};
}

}  // namespace kite::submit
