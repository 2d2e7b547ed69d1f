// Core handlers: fixed attributes, universe, arguments, environment, hold, notification, the
// simple commands of the table and custom attributes.
#include <fnmatch.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>

#include "classad/expr.h"
#include "common/strings.h"
#include "submit/commands.h"
#include "submit/expr_util.h"
#include "submit/job_attrs.h"
#include "submit/quoting.h"

extern char** environ;

namespace kite::submit {
namespace {

std::optional<bool> ParseBoolText(std::string_view s) {
  std::string v = ToLower(s);
  if (v == "true" || v == "t" || v == "yes" || v == "y" || v == "1") return true;
  if (v == "false" || v == "f" || v == "no" || v == "n" || v == "0") return false;
  return std::nullopt;
}

std::string_view StripQuotes(std::string_view s) {
  s = Trim(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

// HTCondor's StringList: items separated by blanks and/or commas, joined with ','.
std::string CanonicalList(std::string_view v) {
  std::string out, item;
  auto flush = [&] {
    if (!item.empty()) out += (out.empty() ? "" : ",") + item;
    item.clear();
  };
  for (char c : v) {
    if (c == ',' || c == ' ' || c == '\t') {
      flush();
    } else {
      item += c;
    }
  }
  flush();
  return out;
}

// The arguments as given: `arguments2` (new syntax only) wins over `arguments`/`args`.
Status ReadArguments(JobContext& ctx, std::optional<std::string>& v, std::string& key) {
  auto args1 = ctx.Get("arguments");
  if (!args1) return Fail(args1.error());
  auto args2 = ctx.Get("arguments2");
  if (!args2) return Fail(args2.error());
  auto allow_v1 = GetBool(ctx, "allow_arguments_v1", false);
  if (!allow_v1) return Fail(allow_v1.error());
  if (*args1 && *args2 && !*allow_v1) {
    return Fail(ctx.ErrorAt("arguments2",
                            "arguments and arguments2 are both given; add "
                            "'allow_arguments_v1 = true' to keep both (arguments2 is used)"));
  }
  if (*args2 && !IsV2Quoted(**args2)) {
    return Fail(
        ctx.ErrorAt("arguments2", "arguments2 must be in the new syntax, in double quotes"));
  }
  key = *args2 ? "arguments2" : "arguments";
  v = *args2 ? *args2 : *args1;
  return {};
}

}  // namespace

Status ValidateExpr(JobContext& ctx, const std::string& key, std::string_view text) {
  auto parsed = classad::ParseExpr(text);
  if (!parsed) {
    return Fail(ctx.ErrorAt(
        key, key + ": bad expression '" + std::string(text) + "': " + parsed.error().message()));
  }
  return {};
}

Status EmitFixed(JobContext& ctx) {
  ctx.Emit("ClusterId", std::to_string(ctx.options().cluster_id));
  ctx.Emit("Owner", Quoted(ctx.env().owner));
  return {};
}

Status EmitUniverse(JobContext& ctx) {
  auto u = GetUniverse(ctx);
  if (!u) return Fail(u.error());
  ctx.Emit("JobUniverse", std::to_string(*u));
  return {};
}

// Old syntax lands in Args (HTCondor's V1 raw), new syntax in Arguments (V2 raw); no arguments
// at all is Arguments = "", as condor_submit writes it.
Status EmitArguments(JobContext& ctx) {
  std::optional<std::string> v;
  std::string key;
  if (auto st = ReadArguments(ctx, v, key); !st) return st;
  if (!v) {
    ctx.Emit("Arguments", "\"\"");
    return {};
  }
  auto args = SplitArguments(*v);
  if (!args) return Fail(ctx.ErrorAt(key, key + ": " + args.error().message()));
  if (IsV2Quoted(*v)) {
    ctx.Emit("Arguments", Quoted(JoinArgumentsV2(*args)));
  } else {
    ctx.Emit("Args", Quoted(JoinArgumentsV1(*args)));
  }
  return {};
}

namespace {

void MergeEnv(std::vector<EnvEntry>& env, EnvEntry entry, bool replace) {
  for (auto& e : env) {
    if (e.first == entry.first) {
      if (replace) e.second = std::move(entry.second);
      return;
    }
  }
  env.push_back(std::move(entry));
}

// getenv: true copies the submitter's environment, false nothing; otherwise a list of names
// (shell patterns; a leading '!' excludes) chooses the variables to copy.
Status ImportEnvironment(JobContext& ctx, std::vector<EnvEntry>& env) {
  auto v = ctx.Get("getenv");
  if (!v) return Fail(v.error());
  if (!*v) return {};
  std::optional<bool> all = ParseBoolText(**v);
  if (all && !*all) return {};
  std::vector<std::string> include, exclude;
  if (!all) {
    for (auto& p : Split(CanonicalList(**v), ',')) {
      (p[0] == '!' ? exclude : include).push_back(p[0] == '!' ? p.substr(1) : p);
    }
  }
  auto matches = [](const std::vector<std::string>& pats, const std::string& name) {
    return std::any_of(pats.begin(), pats.end(), [&](const std::string& p) {
      return ::fnmatch(p.c_str(), name.c_str(), FNM_CASEFOLD) == 0;
    });
  };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq == 0 || eq == std::string_view::npos) continue;
    std::string name(entry.substr(0, eq));
    if (!all && (!matches(include, name) || matches(exclude, name))) continue;
    MergeEnv(env, {name, std::string(entry.substr(eq + 1))}, false);  // the file's values win
  }
  return {};
}

}  // namespace

// `environment` (either syntax), `env` (old syntax preferred: Env and EnvDelim), `environment2`
// (new syntax), then getenv's variables that are not set yet.
Status EmitEnvironment(JobContext& ctx) {
  auto env1 = ctx.Get("environment");
  if (!env1) return Fail(env1.error());
  std::string key1 = "environment";
  if (!*env1) {
    env1 = ctx.Get("env");
    if (!env1) return Fail(env1.error());
    key1 = "env";
  }
  auto env2 = ctx.Get("environment2");
  if (!env2) return Fail(env2.error());
  auto allow_v1 = GetBool(ctx, "allow_environment_v1", false);
  if (!allow_v1) return Fail(allow_v1.error());
  if (*env1 && *env2 && !*allow_v1) {
    return Fail(ctx.ErrorAt("environment2",
                            "environment and environment2 are both given; add "
                            "'allow_environment_v1 = true' to keep both (environment2 is used)"));
  }
  bool prefer_v1 = *env1 && !*env2 && key1 == "env" && !IsV2Quoted(**env1);
  std::vector<EnvEntry> env;
  if (*env2 || *env1) {
    const std::string& key = *env2 ? std::string("environment2") : key1;
    const std::string& text = *env2 ? **env2 : **env1;
    if (*env2 && !IsV2Quoted(text)) {
      return Fail(ctx.ErrorAt(key, "environment2 must be in the new syntax, in double quotes"));
    }
    auto given = SplitEnvironment(text);
    if (!given) return Fail(ctx.ErrorAt(key, key + ": " + given.error().message()));
    env = std::move(*given);
  }
  if (auto st = ImportEnvironment(ctx, env); !st) return st;
  if (prefer_v1) {
    ctx.Emit("Env", Quoted(JoinEnvironmentV1(env)));
    ctx.Emit("EnvDelim", Quoted(";"));
  } else {
    ctx.Emit("Environment", Quoted(JoinEnvironmentV2(env)));
  }
  return {};
}

Status EmitHold(JobContext& ctx) {
  auto hold = GetBool(ctx, "hold", false);
  if (!hold) return Fail(hold.error());
  if (!*hold) {
    ctx.Emit("JobStatus", "1");
    return {};
  }
  ctx.Emit("JobStatus", "5");
  ctx.Emit("HoldReasonCode", "15");
  ctx.Emit("HoldReason", Quoted("submitted on hold at user's request"));
  return {};
}

// HTCondor's default is Never, even when notify_user is set; Kite keeps that and warns.
Status EmitNotification(JobContext& ctx) {
  auto v = ctx.Get("notification");
  if (!v) return Fail(v.error());
  int code = 0;
  if (*v) {
    std::string n = ToLower(**v);
    code = n == "never" ? 0 : n == "always" ? 1 : n == "complete" ? 2 : n == "error" ? 3 : -1;
    if (code < 0) {
      return Fail(ctx.ErrorAt("notification",
                              "notification must be Never, Always, Complete or "
                              "Error, not '" +
                                  **v + "'"));
    }
  } else {
    auto user = ctx.Get("notify_user");
    if (!user) return Fail(user.error());
    if (*user) {
      ctx.WarnAt("notify_user",
                 "notify_user is set but notification defaults to Never; add "
                 "'notification = Complete' (or Error, Always) to get e-mail");
    }
  }
  if (auto user = ctx.Get("notify_user"); user && *user) {
    std::string who = ToLower(**user);
    if (who == "never" || who == "false") {
      ctx.WarnAt("notify_user", "notify_user = " + **user +
                                    " mails that user; write 'notification = never' for no mail");
    }
  }
  ctx.Emit("JobNotification", std::to_string(code));
  return {};
}

// A command of the table that sets one attribute from its value (condor_submit's
// do_simple_commands).
Status EmitSimple(JobContext& ctx, const CommandInfo& c) {
  std::string key = c.key;
  auto got = ctx.Get(key);
  if (!got) return Fail(got.error());
  if (!*got) return {};
  const std::string& v = **got;
  switch (c.form) {
    case Form::kString:
      ctx.Emit(c.attr, Quoted(v));
      return {};
    case Form::kUnquoted:
      ctx.Emit(c.attr, Quoted(StripQuotes(v)));
      return {};
    case Form::kList:
      ctx.Emit(c.attr, Quoted(CanonicalList(v)));
      return {};
    case Form::kBool: {
      auto b = ParseBoolText(v);
      if (!b) return Fail(ctx.ErrorAt(key, key + " must be true or false, not '" + v + "'"));
      ctx.Emit(c.attr, *b ? "true" : "false");
      return {};
    }
    case Form::kInt:
    case Form::kUInt: {
      auto n = EvalInteger(v);
      if (!n || (c.form == Form::kUInt && *n < 0)) {
        return Fail(ctx.ErrorAt(key, key + " must be " +
                                         (c.form == Form::kUInt ? "a non-negative " : "an ") +
                                         "integer, not '" + v + "'"));
      }
      ctx.Emit(c.attr, std::to_string(*n));
      return {};
    }
    case Form::kExpr:
      if (auto st = ValidateExpr(ctx, key, v); !st) return st;
      ctx.Emit(c.attr, v);
      return {};
    case Form::kLogPath: {
      auto iwd = GetIwd(ctx);
      if (!iwd) return Fail(iwd.error());
      ctx.Emit(c.attr, Quoted(v[0] == '/' ? v : *iwd + "/" + v));
      return {};
    }
    case Form::kSpecial:
      break;
  }
  return {};
}

Status EmitCustom(JobContext& ctx, const CustomAttr& c) {
  auto v = ctx.Expand(c.value, c.line);
  if (!v) return Fail(v.error());
  std::string_view text = Trim(*v);
  if (text.empty()) return Fail(ctx.ErrorAtLine(c.line, "+" + c.name + " needs a value"));
  auto parsed = classad::ParseExpr(text);
  if (!parsed) {
    return Fail(ctx.ErrorAtLine(c.line, "+" + c.name + ": bad expression '" + std::string(text) +
                                            "': " + parsed.error().message()));
  }
  ctx.EmitOverride(c.name, std::string(text));
  return {};
}

}  // namespace kite::submit
