// Policy handlers: rank, retries (max_retries, success_exit_code, retry_until folded into
// OnExitRemove as condor_submit does), leave_in_queue, deferral and cron, kill signals, and the
// commands that shape scheduling (parallel scheduling, accounting groups, materialization).
#include <csignal>
#include <utility>

#include "classad/expr.h"
#include "common/strings.h"
#include "submit/expr_util.h"
#include "submit/job_attrs.h"

namespace kite::submit {
namespace {

// retry_until: an exit code (ExitCode =?= N) or an expression, parenthesised for ||.
Result<std::string> RetryUntil(JobContext& ctx) {
  auto v = ctx.Get("retry_until");
  if (!v) return Fail(v.error());
  if (!*v) return std::string();
  auto parsed = classad::ParseExpr(**v);
  if (!parsed) {
    return Fail(ctx.ErrorAt("retry_until",
                            "retry_until must be an exit code or a boolean "
                            "expression, not '" +
                                **v + "'"));
  }
  if ((*parsed)->kind() == classad::ExprKind::kLiteral) {
    if (auto code = EvalInteger(**v); code && *code >= INT32_MIN && *code <= INT32_MAX) {
      return "ExitCode =?= " + std::to_string(*code);
    }
  }
  return WrapForJoin(**v, JoinOp::kOr);
}

constexpr struct {
  const char* name;
  int number;
} kSignals[] = {
    {"SIGHUP", SIGHUP},       {"SIGINT", SIGINT},   {"SIGQUIT", SIGQUIT},   {"SIGILL", SIGILL},
    {"SIGTRAP", SIGTRAP},     {"SIGABRT", SIGABRT}, {"SIGBUS", SIGBUS},     {"SIGFPE", SIGFPE},
    {"SIGKILL", SIGKILL},     {"SIGUSR1", SIGUSR1}, {"SIGSEGV", SIGSEGV},   {"SIGUSR2", SIGUSR2},
    {"SIGPIPE", SIGPIPE},     {"SIGALRM", SIGALRM}, {"SIGTERM", SIGTERM},   {"SIGCHLD", SIGCHLD},
    {"SIGCONT", SIGCONT},     {"SIGSTOP", SIGSTOP}, {"SIGTSTP", SIGTSTP},   {"SIGTTIN", SIGTTIN},
    {"SIGTTOU", SIGTTOU},     {"SIGURG", SIGURG},   {"SIGXCPU", SIGXCPU},   {"SIGXFSZ", SIGXFSZ},
    {"SIGVTALRM", SIGVTALRM}, {"SIGPROF", SIGPROF}, {"SIGWINCH", SIGWINCH}, {"SIGIO", SIGIO},
    {"SIGSYS", SIGSYS},
};

// "15", "TERM", "sigterm" -> "SIGTERM"; "" when it names no signal.
std::string SignalName(std::string_view v) {
  std::string up(v);
  for (auto& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!up.starts_with("SIG")) up = "SIG" + up;
  auto n = EvalInteger(v);
  for (const auto& s : kSignals) {
    if ((n && *n == s.number) || up == s.name) return s.name;
  }
  return "";
}

}  // namespace

Status EmitRank(JobContext& ctx) {
  auto v = ctx.Get("rank");
  if (!v) return Fail(v.error());
  if (!*v) {
    ctx.Emit("Rank", "0.0");
    return {};
  }
  if (auto st = ValidateExpr(ctx, "rank", **v); !st) return st;
  ctx.Emit("Rank", **v);
  return {};
}

// As condor_submit's SetJobRetries: with none of max_retries, success_exit_code and
// retry_until, on_exit_remove and on_exit_hold are set only when given. With any of them,
// JobMaxRetries (default 2), OnExitHold (default false) and
//   OnExitRemove = NumJobCompletions > JobMaxRetries || ExitCode =?= <JobSuccessExitCode or 0>
//                  [|| <retry_until>] [|| (<on_exit_remove>)]
// so a job exiting 42 with max_retries = 3 runs 4 times, once the agent counts completions.
Status EmitRetries(JobContext& ctx) {
  auto remove = ctx.Get("on_exit_remove");
  if (!remove) return Fail(remove.error());
  auto hold = ctx.Get("on_exit_hold");
  if (!hold) return Fail(hold.error());
  for (auto [key, v] : {std::pair{"on_exit_remove", &*remove}, std::pair{"on_exit_hold", &*hold}}) {
    if (*v) {
      if (auto st = ValidateExpr(ctx, key, **v); !st) return st;
    }
  }
  auto retries = ctx.Get("max_retries");
  if (!retries) return Fail(retries.error());
  auto success = ctx.Get("success_exit_code");
  if (!success) return Fail(success.error());
  auto until = RetryUntil(ctx);
  if (!until) return Fail(until.error());
  if (!*retries && !*success && until->empty()) {
    if (*remove) ctx.Emit("OnExitRemove", **remove);
    if (*hold) ctx.Emit("OnExitHold", **hold);
    return {};
  }
  long long max = 2;  // HTCondor's DEFAULT_JOB_MAX_RETRIES
  if (*retries) {
    auto n = EvalInteger(**retries);
    if (!n || *n < 0) {
      return Fail(ctx.ErrorAt(
          "max_retries", "max_retries must be a non-negative integer, not '" + **retries + "'"));
    }
    max = *n;
  }
  ctx.Emit("JobMaxRetries", std::to_string(max));
  ctx.Emit("OnExitHold", *hold ? **hold : "false");
  std::string code = "0";
  if (*success) {
    auto n = EvalInteger(**success);
    if (!n || *n < INT32_MIN || *n > INT32_MAX) {
      return Fail(ctx.ErrorAt("success_exit_code",
                              "success_exit_code must be an integer, not '" + **success + "'"));
    }
    ctx.Emit("JobSuccessExitCode", std::to_string(*n));
    code = "JobSuccessExitCode";
  }
  std::string expr = "NumJobCompletions > JobMaxRetries || ExitCode =?= " + code;
  if (!until->empty()) expr += " || " + *until;
  if (*remove) expr += " || " + WrapForJoin(**remove, JoinOp::kOr);
  ctx.Emit("OnExitRemove", expr);
  return {};
}

Status EmitLeaveInQueue(JobContext& ctx) {
  auto v = ctx.Get("leave_in_queue");
  if (!v) return Fail(v.error());
  if (!*v) {
    ctx.Emit("LeaveJobInQueue", "false");
    return {};
  }
  if (auto st = ValidateExpr(ctx, "leave_in_queue", **v); !st) return st;
  if (!EqualsIgnoreCase(**v, "false")) {
    ctx.WarnAt("leave_in_queue",
               "leave_in_queue is recorded (LeaveJobInQueue) but Kite's agent moves finished jobs "
               "to the history all the same (see kite history)");
  }
  ctx.Emit("LeaveJobInQueue", **v);
  return {};
}

// deferral_time, and the window and prep time any deferral (a cron_* command too) brings along
// (defaults 0 and 300 s, and ScheddInterval for the Requirements clause).
Status EmitDeferral(JobContext& ctx) {
  auto when = ctx.Get("deferral_time");
  if (!when) return Fail(when.error());
  if (*when) {
    auto n = EvalInteger(**when);
    auto parsed = classad::ParseExpr(**when);
    if (!parsed || ((*parsed)->kind() == classad::ExprKind::kLiteral && (!n || *n < 0))) {
      return Fail(ctx.ErrorAt("deferral_time",
                              "deferral_time must be a time (seconds since 1970) "
                              "or an expression, not '" +
                                  **when + "'"));
    }
    ctx.Emit("DeferralTime", **when);
  }
  static const std::pair<const char*, const char*> kCron[] = {
      {"CronMinute", "cron_minute"},           {"CronHour", "cron_hour"},
      {"CronDayOfMonth", "cron_day_of_month"}, {"CronMonth", "cron_month"},
      {"CronDayOfWeek", "cron_day_of_week"},   {"DeferralTime", "deferral_time"}};
  const char* cause = nullptr;  // the command that defers the job
  for (auto [attr, key] : kCron) {
    if (cause == nullptr && ctx.Emitted(attr) != nullptr) cause = key;
  }
  if (cause == nullptr) return {};
  struct Setting {
    const char* key;
    const char* alt;
    const char* attr;
    const char* dflt;
  };
  for (Setting s : {Setting{"cron_window", "deferral_window", "DeferralWindow", "0"},
                    Setting{"cron_prep_time", "deferral_prep_time", "DeferralPrepTime", "300"}}) {
    auto v = ctx.Get(s.key);
    if (!v) return Fail(v.error());
    const char* key = s.key;
    if (!*v) {
      v = ctx.Get(s.alt);
      if (!v) return Fail(v.error());
      key = s.alt;
    }
    auto n = *v ? EvalInteger(**v) : std::optional<long long>(0);
    if (*v && (!n || *n < 0)) {
      return Fail(ctx.ErrorAt(
          key, std::string(key) + " must be a non-negative integer, not '" + **v + "'"));
    }
    ctx.Emit(s.attr, *v ? **v : s.dflt);
  }
  ctx.Emit("ScheddInterval", "300");
  auto universe = GetUniverse(ctx);
  if (!universe) return Fail(universe.error());
  if (*universe != kVanillaUniverse) {
    ctx.WarnAt(cause, std::string(cause) +
                          " is recorded for HTCondor tools, but Kite starts local and "
                          "grid jobs at once (it does not defer them)");
  }
  return {};
}

Status EmitKillSignals(JobContext& ctx) {
  struct Sig {
    const char* key;
    const char* attr;
  };
  auto universe = GetUniverse(ctx);
  if (!universe) return Fail(universe.error());
  for (Sig s : {Sig{"kill_sig", "KillSig"}, Sig{"remove_kill_sig", "RemoveKillSig"},
                Sig{"hold_kill_sig", "HoldKillSig"}}) {
    auto v = ctx.Get(s.key);
    if (!v) return Fail(v.error());
    if (!*v) {
      // condor_submit names SIGTERM for every universe but vanilla.
      if (std::string_view(s.key) == "kill_sig" && *universe != kVanillaUniverse) {
        ctx.Emit(s.attr, Quoted("SIGTERM"));
      }
      continue;
    }
    std::string name = SignalName(**v);
    if (name.empty())
      return Fail(ctx.ErrorAt(s.key, std::string(s.key) + ": '" + **v + "' is not a signal"));
    ctx.Emit(s.attr, Quoted(name));
  }
  auto timeout = GetInt(ctx, "kill_sig_timeout");
  if (!timeout) return Fail(timeout.error());
  if (*timeout) ctx.Emit("KillSigTimeout", std::to_string(**timeout));
  return {};
}

}  // namespace kite::submit
