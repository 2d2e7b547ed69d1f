// The remaining special commands: job lease, checkpoint exit code, concurrency limits,
// materialization limits, Remote_ universes, copy_to_spool, credential_alarm, parallel
// scheduling, accounting groups, and the attributes condor_submit adds last (SetAutoAttributes).
#include <algorithm>
#include <charconv>

#include "classad/expr.h"
#include "common/strings.h"
#include "submit/expr_util.h"
#include "submit/job_attrs.h"

namespace kite::submit {

// "90", "90s", "15m", "2h", "1d" -> seconds; nullopt otherwise.
std::optional<long long> ParseDuration(std::string_view s) {
  s = Trim(s);
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  long long n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + digits, n);
  if (digits == 0 || ec != std::errc() || n > (1LL << 40)) return std::nullopt;
  std::string unit = ToLower(Trim(s.substr(digits)));
  long long mult = unit.empty() || unit == "s" ? 1
                   : unit == "m"               ? 60
                   : unit == "h"               ? 3600
                   : unit == "d"               ? 86400
                                               : 0;
  if (mult == 0) return std::nullopt;
  return n * mult;
}

namespace {

Status EmitLease(JobContext& ctx) {
  auto v = ctx.Get("job_lease_duration");
  if (!v) return Fail(v.error());
  if (!*v) return {};
  if (auto secs = ParseDuration(**v)) {
    if (*secs > 0 && *secs < 20) {
      ctx.WarnAt("job_lease_duration",
                 "JobLeaseDuration less than 20 seconds is not allowed, "
                 "using 20 instead");
      *secs = 20;
    }
    ctx.Emit("JobLeaseDuration", std::to_string(*secs));
    return {};
  }
  if (auto st = ValidateExpr(ctx, "job_lease_duration", **v); !st) return st;
  ctx.Emit("JobLeaseDuration", **v);
  return {};
}

// credential_alarm = 2h, 30m: one duration is an integer, several a list of them (Kite's own).
Status EmitCredentialAlarm(JobContext& ctx) {
  auto v = ctx.Get("credential_alarm");
  if (!v) return Fail(v.error());
  if (!*v) return {};
  std::vector<std::string> items;
  for (const auto& piece : Split(**v, ',', false)) {
    auto n = ParseDuration(piece);
    if (!n || *n <= 0) {
      return Fail(ctx.ErrorAt("credential_alarm",
                              "credential_alarm must be a duration like 2h or "
                              "a list like 2h, 30m, not '" +
                                  **v + "'"));
    }
    items.push_back(std::to_string(*n));
  }
  if (items.size() == 1) {
    ctx.Emit("CredentialAlarm", items.front());
    return {};
  }
  std::string list = "{";
  for (auto& i : items) list += (list.size() > 1 ? ", " : "") + i;
  ctx.Emit("CredentialAlarm", list + "}");
  return {};
}

Status EmitConcurrency(JobContext& ctx) {
  auto limits = ctx.Get("concurrency_limits");
  if (!limits) return Fail(limits.error());
  auto expr = ctx.Get("concurrency_limits_expr");
  if (!expr) return Fail(expr.error());
  if (*limits && *expr) {
    return Fail(
        ctx.ErrorAt("concurrency_limits_expr",
                    "concurrency_limits and concurrency_limits_expr can't be used together"));
  }
  if (*limits) {
    std::vector<std::string> items;
    for (auto& item : Split(ToLower(**limits), ',')) {
      for (auto& word : Split(item, ' ')) items.push_back(word);
    }
    std::sort(items.begin(), items.end());
    std::string joined;
    for (auto& i : items) joined += (joined.empty() ? "" : ",") + i;
    ctx.Emit("ConcurrencyLimits", Quoted(joined));
  } else if (*expr) {
    if (auto st = ValidateExpr(ctx, "concurrency_limits_expr", **expr); !st) return st;
    ctx.Emit("ConcurrencyLimits", **expr);
  }
  if (*limits || *expr) {
    const char* key = *limits ? "concurrency_limits" : "concurrency_limits_expr";
    ctx.WarnAt(key, std::string(key) +
                        " is recorded (ConcurrencyLimits) but Kite does not limit how many such "
                        "jobs run at once");
  }
  return {};
}

// max_materialize / max_idle: HTCondor materializes a few jobs at a time; Kite queues them all.
Status EmitMaterialize(JobContext& ctx) {
  struct M {
    const char* key;
    const char* attr;
  };
  for (M m :
       {M{"max_materialize", "JobMaterializeLimit"}, M{"max_idle", "JobMaterializeMaxIdle"}}) {
    auto v = ctx.Get(m.key);
    if (!v) return Fail(v.error());
    if (!*v) continue;
    if (auto st = ValidateExpr(ctx, m.key, **v); !st) return st;
    ctx.Emit(m.attr, **v);
    ctx.WarnAt(m.key, std::string(m.key) + " is recorded (" + m.attr +
                          ") but Kite queues every job of the cluster at once");
  }
  return {};
}

// HTCondor's additions to an ARC job's description: recorded (as kString commands), not yet sent.
Status WarnArcAdditions(JobContext& ctx) {
  for (const char* key : {"arc_rte", "arc_resources", "arc_application"}) {
    auto v = ctx.Get(key);
    if (!v) return Fail(v.error());
    if (*v) {
      ctx.WarnAt(key,
                 std::string(key) +
                     " is recorded but Kite does not send it to ARC CEs yet (docs/grid-arc.md)");
    }
  }
  return {};
}

Status EmitRemoteUniverses(JobContext& ctx) {
  struct R {
    const char* key;
    const char* attr;
  };
  static const char* kNames[] = {"",        "standard", "pipe",      "linda", "pvm",
                                 "vanilla", "pvmd",     "scheduler", "mpi",   "grid",
                                 "java",    "parallel", "local",     "vm"};
  for (R r : {R{"remote_universe", "Remote_JobUniverse"},
              R{"remote_remote_universe", "Remote_Remote_JobUniverse"}}) {
    auto v = ctx.Get(r.key);
    if (!v) return Fail(v.error());
    if (!*v) continue;
    long long code = EvalInteger(**v).value_or(0);
    for (size_t i = 1; i < std::size(kNames) && code == 0; ++i) {
      if (EqualsIgnoreCase(**v, kNames[i])) code = static_cast<long long>(i);
    }
    if (code <= 0 || code >= static_cast<long long>(std::size(kNames))) {
      return Fail(ctx.ErrorAt(r.key, std::string(r.key) + ": unknown universe '" + **v + "'"));
    }
    ctx.Emit(r.attr, std::to_string(code));
  }
  return {};
}

}  // namespace

namespace {

// `checkpoint = transparent`, and `universe = standard`, which is it with remote I/O
// (docs/checkpoints.md); `checkpoint_interval` in seconds.
Status EmitTransparentCheckpoints(JobContext& ctx, bool own_checkpoints) {
  auto kind = ctx.Get("checkpoint");
  if (!kind) return Fail(kind.error());
  auto universe = ctx.Get("universe");
  if (!universe) return Fail(universe.error());
  std::string u = *universe ? ToLower(Trim(**universe)) : "";
  bool standard = u == "standard" || u == "1";
  bool transparent = standard;
  if (*kind) {
    std::string k = ToLower(Trim(**kind));
    if (k != "transparent" && k != "none") {
      return Fail(ctx.ErrorAt("checkpoint",
                              "checkpoint must be transparent or none, not '" + **kind + "'"));
    }
    transparent = k == "transparent";
  }
  auto interval = GetInt(ctx, "checkpoint_interval");
  if (!interval) return Fail(interval.error());
  if (*interval && **interval <= 0)
    return Fail(ctx.ErrorAt("checkpoint_interval",
                            "checkpoint_interval must be a positive number of seconds"));
  if (!transparent) {
    if (*interval) {
      return Fail(ctx.ErrorAt("checkpoint_interval",
                              "checkpoint_interval needs checkpoint = transparent (a program with "
                              "checkpoint_exit_code chooses its own moments)"));
    }
    return {};
  }
  if (own_checkpoints) {
    return Fail(ctx.ErrorAt("checkpoint_exit_code",
                            "checkpoint_exit_code and transparent checkpoints exclude each other "
                            "(the program saves its own state, or Kite does)"));
  }
  ctx.Emit("TransparentCheckpoint", "true");
  if (*interval) ctx.Emit("CheckpointInterval", std::to_string(**interval));
  if (standard) {
    auto rio = ctx.Get("want_remote_io");
    if (!rio) return Fail(rio.error());
    if (!*rio) ctx.Emit("WantRemoteIO", "true");
  }
  return {};
}

// remote_io_method = auto | fuse | preload (docs/remote-io.md): how a want_remote_io job reaches
// its files. Kite's own; anything else is refused rather than taken for the default.
Status EmitRemoteIoMethod(JobContext& ctx) {
  auto v = ctx.Get("remote_io_method");
  if (!v) return Fail(v.error());
  if (!*v) return {};
  std::string m = ToLower(**v);
  if (m != "auto" && m != "fuse" && m != "preload") {
    return Fail(ctx.ErrorAt("remote_io_method",
                            "remote_io_method must be auto, fuse or preload, not '" + **v + "'"));
  }
  ctx.Emit("WantRemoteIOMethod", Quoted(m));
  return {};
}

}  // namespace

Status EmitMiscPolicy(JobContext& ctx) {
  for (auto f : {EmitLease, EmitCredentialAlarm, EmitConcurrency, EmitMaterialize, WarnArcAdditions,
                 EmitRemoteUniverses, EmitRemoteIoMethod}) {
    if (auto st = f(ctx); !st) return st;
  }
  auto spool = GetBool(ctx, "copy_to_spool", false);
  if (!spool) return Fail(spool.error());
  if (*spool) {
    return Fail(ctx.ErrorAt("copy_to_spool",
                            "copy_to_spool = true is not supported by Kite (it "
                            "does not spool executables)"));
  }
  auto code = GetInt(ctx, "checkpoint_exit_code");
  if (!code) return Fail(code.error());
  if (*code) ctx.Emit("CheckpointExitCode", std::to_string(**code));
  if (auto st = EmitTransparentCheckpoints(ctx, code->has_value()); !st) return st;
  auto noop = ctx.Get("noop_job");
  if (!noop) return Fail(noop.error());
  if (*noop && !EqualsIgnoreCase(**noop, "false")) {
    ctx.WarnAt("noop_job", "noop_job is recorded (IsNoopJob) but Kite runs the job all the same");
  }
  return {};
}

// WantParallelScheduling with machine_count (or node_count): MinHosts = MaxHosts = the count.
Status EmitParallel(JobContext& ctx) {
  auto want = GetBool(ctx, "wantparallelscheduling", false);
  if (!want) return Fail(want.error());
  auto count = GetInt(ctx, "machine_count");
  if (!count) return Fail(count.error());
  if (!*want) {
    if (*count) {
      ctx.WarnAt("machine_count",
                 "machine_count has no effect without WantParallelScheduling = "
                 "true (Kite does not run universe = parallel)");
    }
    return {};
  }
  if (!*count) {
    return Fail(
        ctx.ErrorAt("wantparallelscheduling", "WantParallelScheduling = true needs machine_count"));
  }
  ctx.Emit("WantParallelScheduling", "true");
  ctx.Emit("MinHosts", std::to_string(**count));
  ctx.Emit("MaxHosts", std::to_string(**count));
  return {};
}

// accounting_group[_user] and nice_user (the group "nice-user", as HTCondor's default config).
Status EmitAccounting(JobContext& ctx) {
  auto group = ctx.Get("accounting_group");
  if (!group) return Fail(group.error());
  auto user = ctx.Get("accounting_group_user");
  if (!user) return Fail(user.error());
  auto nice = GetBool(ctx, "nice_user", false);
  if (!nice) return Fail(nice.error());
  std::optional<std::string> g = *group;
  if (*nice) {
    if (g) {
      ctx.WarnAt("nice_user", "nice_user conflicts with accounting_group; nice_user is ignored");
    } else {
      g = "nice-user";
    }
    ctx.Emit("MaxJobRetirementTime", "0");
  }
  if (!g && !*user) return {};
  std::string who = user->value_or(ctx.env().owner);
  for (const std::string* name : {g ? &*g : nullptr, &who}) {
    if (name != nullptr && name->find_first_of(" \t\"'@") != std::string::npos) {
      return Fail(ctx.ErrorAt(name == &who ? "accounting_group_user" : "accounting_group",
                              "invalid accounting group name '" + *name + "'"));
    }
  }
  ctx.Emit("AcctGroupUser", Quoted(who));
  if (g) {
    ctx.Emit("AcctGroup", Quoted(*g));
    ctx.Emit("AccountingGroup", Quoted(*g + "." + who));
  } else {
    ctx.Emit("AccountingGroup", Quoted(who));
  }
  return {};
}

// What condor_submit adds after everything else: hosts counters, JobPrio, checkpoint transfer.
Status EmitAutoAttributes(JobContext& ctx) {
  if (ctx.Emitted("MaxHosts") == nullptr) {
    ctx.Emit("MinHosts", "1");
    ctx.Emit("MaxHosts", "1");
  }
  ctx.Emit("CurrentHosts", "0");
  if (ctx.Emitted("JobPrio") == nullptr) ctx.Emit("JobPrio", "0");
  if (ctx.Emitted("CheckpointExitCode") != nullptr) ctx.Emit("WantFTOnCheckpoint", "true");
  return {};
}

}  // namespace kite::submit
