// Resource requests: request_cpus/memory/disk (sizes in condor_submit's units: memory MiB, disk
// KiB), GPUs and their property limits, custom resources (request_<res>, require_<res>), and the
// retries with more memory or disk after an eviction for using too much (TransformOnEvict).
#include <algorithm>
#include <cctype>
#include <charconv>

#include "classad/expr.h"
#include "common/strings.h"
#include "submit/expr_util.h"
#include "submit/job_attrs.h"

namespace kite::submit {
namespace {

constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kKiB = 1 << 10;

bool LooksNumeric(std::string_view v) {
  return !v.empty() &&
         (std::isdigit(static_cast<unsigned char>(v[0])) || v[0] == '.' || v[0] == '-');
}

// An expression that computes the request, though it starts with a digit: what `$(Process) + 1`
// becomes. A lone number is not one (a size or count of its own, checked as such).
bool IsComputed(std::string_view v) {
  auto e = classad::ParseExpr(v);
  return e && (*e)->kind() != classad::ExprKind::kLiteral &&
         (*e)->kind() != classad::ExprKind::kUnary;  // -1 is a number here, not a formula
}

// A size in `base` units (or a ClassAd expression, kept as written); "undefined" sets nothing.
Result<std::optional<std::string>> SizeOrExpr(JobContext& ctx, const std::string& key,
                                              const std::string& v, int64_t base) {
  if (EqualsIgnoreCase(v, "undefined")) return std::optional<std::string>();
  if (v[0] == '-' && v.size() > 1 && std::isdigit(static_cast<unsigned char>(v[1]))) {
    return Fail(ctx.ErrorAt(key, key + " must not be negative"));
  }
  if (auto n = ParseBytes(v, base)) return std::optional<std::string>(std::to_string(*n));
  if (LooksNumeric(v) && !IsComputed(v)) {
    return Fail(ctx.ErrorAt(key, key + ": '" + v + "' is not a size like 512, 2GB or 1.5 GiB"));
  }
  if (auto st = ValidateExpr(ctx, key, v); !st) return Fail(st.error());
  return std::optional<std::string>(v);
}

// request_memory / request_disk: "1GB" or "1GB, 2GB, 8GB" (the request, then the retries).
Status EmitSizeRequest(JobContext& ctx, const std::string& key, const char* attr, int64_t base,
                       const char* default_expr) {
  auto v = ctx.Get(key);
  if (!v) return Fail(v.error());
  if (!*v) {
    if (default_expr != nullptr) ctx.Emit(attr, default_expr);
    return {};
  }
  std::string first = **v;
  if (ParseBytes(first.substr(0, first.find(',')), base))
    first = Trim(first.substr(0, first.find(',')));
  auto expr = SizeOrExpr(ctx, key, first, base);
  if (!expr) return Fail(expr.error());
  if (*expr) ctx.Emit(attr, **expr);
  return {};
}

// request_cpus: a count ("4") or an expression; "2.5" and "2GB" are mistakes Kite refuses.
Status EmitCpus(JobContext& ctx) {
  auto v = ctx.Get("request_cpus");
  if (!v) return Fail(v.error());
  if (!*v) {
    ctx.Emit("RequestCpus", "1");
    return {};
  }
  const std::string& text = **v;
  if (EqualsIgnoreCase(text, "undefined")) return {};
  if ((LooksNumeric(text) || (text.size() > 1 && text[0] == '+')) && !IsComputed(text)) {
    long long n = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || p != text.data() + text.size()) {
      return Fail(ctx.ErrorAt("request_cpus",
                              "request_cpus must be a whole number of CPUs, not '" + text + "'"));
    }
    if (n < 1) return Fail(ctx.ErrorAt("request_cpus", "request_cpus must be at least 1"));
    ctx.Emit("RequestCpus", std::to_string(n));
    return {};
  }
  if (auto st = ValidateExpr(ctx, "request_cpus", text); !st) return st;
  ctx.Emit("RequestCpus", text);
  return {};
}

}  // namespace

// Vanilla jobs get condor_submit's defaults for memory and disk (they are matched against
// machines); local and grid jobs do not: a site's batch system would take a default literally.
Status EmitRequests(JobContext& ctx) {
  auto universe = GetUniverse(ctx);
  if (!universe) return Fail(universe.error());
  bool vanilla = *universe == kVanillaUniverse;
  if (auto st = EmitCpus(ctx); !st) return st;
  if (auto st = EmitSizeRequest(ctx, "request_disk", "RequestDisk", kKiB,
                                vanilla ? "DiskUsage" : nullptr);
      !st) {
    return st;
  }
  return EmitSizeRequest(ctx, "request_memory", "RequestMemory", kMiB,
                         vanilla ? "ifthenelse(MemoryUsage =!= undefined, MemoryUsage, "
                                   "(ImageSize + 1023) / 1024)"
                                 : nullptr);
}

namespace {

// gpus_minimum_runtime: "12.1" -> 12010 (major * 1000 + minor * 10); a whole number above 1000
// is already in that form; anything else is an expression.
Result<std::string> GpuRuntime(JobContext& ctx, std::string_view t) {
  auto dot = t.find('.');
  size_t major_end = std::min(dot, t.size());
  long long major = 0, minor = 0;
  bool ok = major_end > 0 &&
            std::from_chars(t.data(), t.data() + major_end, major).ptr == t.data() + major_end;
  if (ok && dot != std::string_view::npos) {
    ok = dot + 1 < t.size() &&
         std::from_chars(t.data() + dot + 1, t.data() + t.size(), minor).ptr ==
             t.data() + t.size() &&
         minor < 100;
  }
  if (ok) {
    bool canonical = dot == std::string_view::npos && major > 1000;
    return std::to_string(canonical ? major : major * 1000 + minor * 10);
  }
  if (auto st = ValidateExpr(ctx, "gpus_minimum_runtime", t); !st) return Fail(st.error());
  return std::string(t);
}

// The GPU property limits, and the clauses they add to RequireGPUs unless require_gpus already
// constrains that property.
Result<std::string> GpuLimits(JobContext& ctx, const std::set<std::string>& refs) {
  std::string clauses;
  auto add = [&](const char* attr, const char* prop, const char* clause) {
    if (ctx.Emitted(attr) != nullptr && refs.count(prop) == 0) {
      clauses += (clauses.empty() ? "" : " && ") + std::string(clause);
    }
  };
  for (auto [key, attr] : {std::pair{"gpus_minimum_capability", "GPUsMinCapability"},
                           std::pair{"gpus_maximum_capability", "GPUsMaxCapability"}}) {
    auto v = ctx.Get(key);
    if (!v) return Fail(v.error());
    if (!*v) continue;
    if (auto st = ValidateExpr(ctx, key, **v); !st) return Fail(st.error());
    ctx.Emit(attr, **v);
  }
  auto mem = ctx.Get("gpus_minimum_memory");
  if (!mem) return Fail(mem.error());
  if (*mem) {
    auto e = SizeOrExpr(ctx, "gpus_minimum_memory", **mem, kMiB);
    if (!e) return Fail(e.error());
    if (*e) ctx.Emit("GPUsMinMemory", **e);
  }
  auto rt = ctx.Get("gpus_minimum_runtime");
  if (!rt) return Fail(rt.error());
  if (*rt) {
    auto r = GpuRuntime(ctx, **rt);
    if (!r) return Fail(r.error());
    ctx.Emit("GPUsMinRuntime", *r);
  }
  add("GPUsMinCapability", "capability", "Capability >= GPUsMinCapability");
  add("GPUsMaxCapability", "capability", "Capability <= GPUsMaxCapability");
  add("GPUsMinMemory", "globalmemorymb", "GlobalMemoryMb >= GPUsMinMemory");
  add("GPUsMinRuntime", "maxsupportedversion", "MaxSupportedVersion >= GPUsMinRuntime");
  return clauses;
}

}  // namespace

// request_gpus, and with it require_gpus and the GPU property limits, joined into RequireGPUs
// as condor_submit does.
Status EmitGpus(JobContext& ctx) {
  if (ctx.IsSet("request_gpu")) {
    ctx.WarnAt("request_gpu", "request_gpu is not a submit command; did you mean request_gpus?");
  }
  auto v = ctx.Get("request_gpus");
  if (!v) return Fail(v.error());
  if (!*v || EqualsIgnoreCase(**v, "undefined")) return {};
  if (auto st = ValidateExpr(ctx, "request_gpus", **v); !st) return st;
  ctx.Emit("RequestGPUs", **v);
  if (EvalInteger(**v).value_or(1) != 0)
    ctx.WarnAt("request_gpus",
               "request_gpus is recorded (RequestGPUs) but no Kite slot advertises GPUs: a pool "
               "job that asks for one matches no slot and stays idle");
  auto require = ctx.Get("require_gpus");
  if (!require) return Fail(require.error());
  if (*require) {
    if (auto st = ValidateExpr(ctx, "require_gpus", **require); !st) return st;
  }
  auto clauses = GpuLimits(ctx, *require ? ReferencedNames(**require) : std::set<std::string>{});
  if (!clauses) return Fail(clauses.error());
  if (*require && !clauses->empty()) {
    ctx.Emit("RequireGPUs", WrapForJoin(**require, JoinOp::kAnd) + " && " + *clauses);
  } else if (*require || !clauses->empty()) {
    ctx.Emit("RequireGPUs", *require ? **require : *clauses);
  }
  return {};
}

// request_<res> -> Request<res> and require_<res> -> Require<res>, for resources beyond cpus,
// memory, disk and GPUs (names as written after the prefix).
Status EmitCustomResources(JobContext& ctx) {
  static const char* kBuiltin[] = {"cpus", "memory", "disk", "gpus", "cpu", "gpu"};
  for (const char* prefix : {"request_", "require_"}) {
    for (const auto& [key, line] : ctx.DefinedWithPrefix(prefix)) {
      std::string res = key.substr(std::string_view(prefix).size());
      if (std::find(std::begin(kBuiltin), std::end(kBuiltin), res) != std::end(kBuiltin)) continue;
      if (res == "gpu_memory" || res == "gpus_memory") {
        return Fail(ctx.ErrorAtLine(line, key + " is not a submit command; use "
                                                "gpus_minimum_memory"));
      }
      if (res.size() < 2 || res[0] == '_') continue;
      auto v = ctx.Get(key);
      if (!v) return Fail(v.error());
      if (!*v) continue;
      if (auto st = ValidateExpr(ctx, key, **v); !st) return st;
      const auto* def = ctx.env().table->Find(key);
      std::string name = def->name.substr(std::string_view(prefix).size());
      ctx.Emit((std::string_view(prefix) == "request_" ? "Request" : "Require") + name, **v);
    }
  }
  return {};
}

}  // namespace kite::submit
