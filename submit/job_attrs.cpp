// Command handlers: the table of simple commands, universe, arguments, environment, hold,
// notification, grid resource, resource requests and custom attributes.
#include "submit/job_attrs.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "classad/expr.h"
#include "common/strings.h"
#include "submit/quoting.h"

extern char** environ;

namespace kite::submit {
namespace {

enum class Kind { kString, kBool, kCount, kInt, kDuration, kDurationList, kExpr, kEnum };

struct SimpleCommand {
  const char* key;
  const char* attr;
  Kind kind;
  const char* default_expr;  // emitted when the command is unset; nullptr emits nothing
  const char* choices;       // kEnum: '|'-separated upper-case values
};

// Commands that map one value to one attribute. Defaults follow condor_submit's job ad.
constexpr SimpleCommand kSimpleCommands[] = {
    {"requirements", "Requirements", Kind::kExpr, "true", nullptr},
    {"rank", "Rank", Kind::kExpr, "0.0", nullptr},
    {"periodic_hold", "PeriodicHold", Kind::kExpr, "false", nullptr},
    {"periodic_hold_reason", "PeriodicHoldReason", Kind::kExpr, nullptr, nullptr},
    {"periodic_hold_subcode", "PeriodicHoldSubCode", Kind::kExpr, nullptr, nullptr},
    {"periodic_release", "PeriodicRelease", Kind::kExpr, "false", nullptr},
    {"periodic_remove", "PeriodicRemove", Kind::kExpr, "false", nullptr},
    {"on_exit_remove", "OnExitRemove", Kind::kExpr, "true", nullptr},
    {"on_exit_hold", "OnExitHold", Kind::kExpr, "false", nullptr},
    {"on_exit_hold_reason", "OnExitHoldReason", Kind::kExpr, nullptr, nullptr},
    {"on_exit_hold_subcode", "OnExitHoldSubCode", Kind::kExpr, nullptr, nullptr},
    {"leave_in_queue", "LeaveJobInQueue", Kind::kExpr, nullptr, nullptr},
    {"globus_resubmit", "GlobusResubmit", Kind::kExpr, nullptr, nullptr},
    {"notify_user", "NotifyUser", Kind::kString, nullptr, nullptr},
    {"stream_output", "StreamOut", Kind::kBool, "false", nullptr},
    {"stream_error", "StreamErr", Kind::kBool, "false", nullptr},
    {"transfer_executable", "TransferExecutable", Kind::kBool, nullptr, nullptr},
    {"transfer_input", "TransferIn", Kind::kBool, nullptr, nullptr},
    {"transfer_output", "TransferOut", Kind::kBool, nullptr, nullptr},
    {"transfer_error", "TransferErr", Kind::kBool, nullptr, nullptr},
    {"should_transfer_files", "ShouldTransferFiles", Kind::kEnum, nullptr, "YES|NO|IF_NEEDED"},
    {"when_to_transfer_output", "WhenToTransferOutput", Kind::kEnum, nullptr,
     "ON_EXIT|ON_EXIT_OR_EVICT"},
    {"batch_queue", "BatchQueue", Kind::kString, nullptr, nullptr},
    {"batch_project", "BatchProject", Kind::kString, nullptr, nullptr},
    {"batch_runtime", "BatchRuntime", Kind::kDuration, nullptr, nullptr},
    {"batch_name", "JobBatchName", Kind::kString, nullptr, nullptr},
    {"description", "JobDescription", Kind::kString, nullptr, nullptr},
    {"globus_rsl", "GlobusRSL", Kind::kString, nullptr, nullptr},
    {"remote_initialdir", "RemoteIwd", Kind::kString, nullptr, nullptr},
    {"max_retries", "MaxRetries", Kind::kCount, nullptr, nullptr},
    {"priority", "JobPrio", Kind::kInt, nullptr, nullptr},
    {"job_lease_duration", "JobLeaseDuration", Kind::kDuration, nullptr, nullptr},
    {"credential_alarm", "CredentialAlarm", Kind::kDurationList, nullptr, nullptr},
};

// Commands with their own handler (or read by one).
constexpr const char* kOtherCommands[] = {
    "universe",
    "executable",
    "arguments",
    "environment",
    "getenv",
    "initialdir",
    "initial_dir",
    "input",
    "output",
    "error",
    "log",
    "hold",
    "notification",
    "grid_resource",
    "x509userproxy",
    "transfer_input_files",
    "transfer_output_files",
    "request_cpus",
    "request_memory",
    "request_disk",
};

std::string ToUpper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::optional<bool> ParseBool(std::string_view s) {
  std::string v = ToLower(s);
  if (v == "true" || v == "t" || v == "yes" || v == "y" || v == "1") return true;
  if (v == "false" || v == "f" || v == "no" || v == "n" || v == "0") return false;
  return std::nullopt;
}

std::optional<long long> ParseInt(std::string_view s) {
  long long n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return n;
}

// "90", "90s", "15m", "2h", "1d" -> seconds.
std::optional<long long> ParseDuration(std::string_view s) {
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  auto n = ParseInt(s.substr(0, digits));
  std::string unit = ToLower(Trim(s.substr(digits)));
  if (!n) return std::nullopt;
  long long mult = unit.empty() || unit == "s" ? 1
                   : unit == "m"               ? 60
                   : unit == "h"               ? 3600
                   : unit == "d"               ? 86400
                                               : 0;
  if (mult == 0 || *n > (1LL << 40)) return std::nullopt;
  return *n * mult;
}

Status ValidateExpr(JobContext& ctx, const std::string& key, std::string_view text) {
  auto parsed = classad::ParseExpr(text);
  if (!parsed) {
    return Fail(ctx.ErrorAt(
        key, key + ": bad expression '" + std::string(text) + "': " + parsed.error().message()));
  }
  return {};
}

Result<std::string> SimpleValue(JobContext& ctx, const SimpleCommand& c, const std::string& v) {
  std::string key = c.key;
  switch (c.kind) {
    case Kind::kString:
      return QuoteClassAdString(v);
    case Kind::kBool: {
      auto b = ParseBool(v);
      if (!b) return Fail(ctx.ErrorAt(key, key + " must be true or false, not '" + v + "'"));
      return std::string(*b ? "true" : "false");
    }
    case Kind::kCount:
    case Kind::kInt: {
      auto n = ParseInt(v);
      if (!n || (c.kind == Kind::kCount && *n < 0)) {
        return Fail(ctx.ErrorAt(key, key + " must be " +
                                         (c.kind == Kind::kCount ? "a non-negative " : "an ") +
                                         "integer, not '" + v + "'"));
      }
      return std::to_string(*n);
    }
    case Kind::kDuration: {
      auto n = ParseDuration(v);
      if (!n) {
        return Fail(ctx.ErrorAt(
            key, key + " must be a duration like 3600, 90m, 12h or 2d, not '" + v + "'"));
      }
      return std::to_string(*n);
    }
    case Kind::kDurationList: {
      // "2h, 30m": one duration is an integer, several a list of them.
      std::vector<std::string> items;
      for (const auto& piece : Split(v, ',', false)) {
        auto n = ParseDuration(piece);
        if (!n || *n <= 0) {
          return Fail(ctx.ErrorAt(
              key, key + " must be a duration like 2h or a list like 2h, 30m, not '" + v + "'"));
        }
        items.push_back(std::to_string(*n));
      }
      if (items.size() == 1) return items.front();
      std::string list = "{";
      for (auto& i : items) list += (list.size() > 1 ? ", " : "") + i;
      return list + "}";
    }
    case Kind::kExpr:
      if (auto st = ValidateExpr(ctx, key, v); !st) return Fail(st.error());
      return v;
    case Kind::kEnum: {
      std::string up = ToUpper(v);
      for (const auto& choice : Split(c.choices, '|')) {
        if (choice == up) return QuoteClassAdString(up);
      }
      std::string list = c.choices;
      for (auto& ch : list) ch = ch == '|' ? ',' : ch;
      return Fail(ctx.ErrorAt(key, key + " must be one of " + list + ", not '" + v + "'"));
    }
  }
  return Fail(ErrorCode::kInternal, "unknown command kind");
}

Status EmitSimple(JobContext& ctx, const SimpleCommand& c) {
  auto v = ctx.Get(c.key);
  if (!v) return Fail(v.error());
  if (!*v) {
    if (c.default_expr != nullptr) ctx.Emit(c.attr, c.default_expr);
    return {};
  }
  auto expr = SimpleValue(ctx, c, **v);
  if (!expr) return Fail(expr.error());
  ctx.Emit(c.attr, std::move(*expr));
  return {};
}

Status EmitFixed(JobContext& ctx) {
  ctx.Emit("ClusterId", std::to_string(ctx.options().cluster_id));
  std::string owner = ctx.options().owner;
  if (owner.empty()) {
    const passwd* pw = ::getpwuid(::geteuid());
    owner = pw != nullptr ? pw->pw_name : std::to_string(::geteuid());
  }
  ctx.Emit("Owner", QuoteClassAdString(owner));
  return {};
}

Status EmitUniverse(JobContext& ctx) {
  auto u = GetUniverse(ctx);
  if (!u) return Fail(u.error());
  ctx.Emit("JobUniverse", std::to_string(*u));
  return {};
}

Status EmitArguments(JobContext& ctx) {
  auto v = ctx.Get("arguments");
  if (!v) return Fail(v.error());
  if (!*v) {
    ctx.Emit("Arguments", "\"\"");
    return {};
  }
  auto args = SplitArguments(**v);
  if (!args) return Fail(ctx.ErrorAt("arguments", "arguments: " + args.error().message()));
  ctx.Emit("Arguments", QuoteClassAdString(JoinArgumentsV2(*args)));
  ctx.Emit("RawArguments", QuoteClassAdString(**v));
  return {};
}

void MergeEnv(std::vector<EnvEntry>& env, EnvEntry entry) {
  for (auto& e : env) {
    if (e.first == entry.first) {
      e.second = std::move(entry.second);
      return;
    }
  }
  env.push_back(std::move(entry));
}

Status EmitEnvironment(JobContext& ctx) {
  auto getenv = GetBool(ctx, "getenv", false);
  if (!getenv) return Fail(getenv.error());
  std::vector<EnvEntry> env;
  if (*getenv) {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::string_view entry(*e);
      auto eq = entry.find('=');
      if (eq == 0 || eq == std::string_view::npos) continue;
      env.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
    }
  }
  auto v = ctx.Get("environment");
  if (!v) return Fail(v.error());
  if (*v) {
    auto given = SplitEnvironment(**v);
    if (!given) return Fail(ctx.ErrorAt("environment", "environment: " + given.error().message()));
    for (auto& e : *given) MergeEnv(env, std::move(e));  // environment wins over getenv
  }
  ctx.Emit("Environment", QuoteClassAdString(JoinEnvironmentV2(env)));
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
  ctx.Emit("HoldReason", QuoteClassAdString("submitted on hold"));
  ctx.Emit("HoldReasonCode", "15");
  ctx.Emit("HoldReasonSubCode", "0");
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
  ctx.Emit("JobNotification", std::to_string(code));
  return {};
}

// "HOST:PORT[/BATCH]" of `grid_resource = kite ...`; HOST may be a bracketed IPv6 address.
bool ValidKiteContact(std::string_view c) {
  if (c.empty() || c.find_first_of(" \t") != std::string_view::npos) return false;
  size_t host_end = c.front() == '[' ? c.find(']') : c.find(':');
  if (host_end == std::string_view::npos || host_end == 0) return false;
  if (c.front() == '[') ++host_end;
  if (host_end >= c.size() || c[host_end] != ':') return false;
  std::string_view rest = c.substr(host_end + 1);
  size_t slash = rest.find('/');
  auto port = ParseInt(rest.substr(0, slash));
  if (!port || *port < 1 || *port > 65535) return false;
  if (slash == std::string_view::npos) return true;
  std::string_view batch = rest.substr(slash + 1);
  if (batch.empty()) return false;
  for (char ch : batch) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') return false;
  }
  return true;
}

Status EmitGridResource(JobContext& ctx) {
  auto u = GetUniverse(ctx);
  if (!u) return Fail(u.error());
  auto v = ctx.Get("grid_resource");
  if (!v) return Fail(v.error());
  if (*u != kGridUniverse) {
    if (*v) ctx.WarnAt("grid_resource", "grid_resource is ignored unless universe = grid");
    return {};
  }
  if (!*v) {
    return Fail(ctx.ErrorAt("universe",
                            "universe = grid needs grid_resource (e.g. "
                            "grid_resource = kite gk.example.org:9618/slurm)"));
  }
  std::string_view text = **v;
  auto space = text.find_first_of(" \t");
  std::string type(text.substr(0, space));
  std::string_view contact = space == std::string_view::npos ? "" : Trim(text.substr(space));
  if (!EqualsIgnoreCase(type, "kite")) {
    return Fail(ctx.ErrorAt("grid_resource", "unsupported grid type '" + type +
                                                 "' in grid_resource (Kite supports: kite)"));
  }
  if (!ValidKiteContact(contact)) {
    return Fail(ctx.ErrorAt("grid_resource", "grid_resource = kite needs HOST:PORT[/BATCH], not '" +
                                                 std::string(contact) + "'"));
  }
  ctx.Emit("GridResource", QuoteClassAdString("kite " + std::string(contact)));
  return {};
}

// A size such as "2GB", "512 M", "1.5g" or "100" (in `unit` bytes) rounded up to `unit`; nullopt
// when `v` does not look like a size (it is then a ClassAd expression).
Result<std::optional<long long>> ParseSize(JobContext& ctx, const std::string& key,
                                           const std::string& v, double unit) {
  size_t num_end = 0;
  while (num_end < v.size() &&
         (std::isdigit(static_cast<unsigned char>(v[num_end])) || v[num_end] == '.')) {
    ++num_end;
  }
  std::string suffix = ToLower(Trim(std::string_view(v).substr(num_end)));
  bool letters = std::all_of(suffix.begin(), suffix.end(),
                             [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
  if (num_end == 0 || !letters) {
    if (v.size() > 1 && v[0] == '-' && std::isdigit(static_cast<unsigned char>(v[1]))) {
      return Fail(ctx.ErrorAt(key, key + " must not be negative"));
    }
    return std::optional<long long>();
  }
  char* end = nullptr;
  std::string number = v.substr(0, num_end);
  double n = std::strtod(number.c_str(), &end);
  double mult = suffix.empty()                                       ? unit
                : suffix == "b"                                      ? 1
                : suffix == "k" || suffix == "kb" || suffix == "kib" ? 1024.0
                : suffix == "m" || suffix == "mb" || suffix == "mib" ? 1048576.0
                : suffix == "g" || suffix == "gb" || suffix == "gib" ? 1073741824.0
                : suffix == "t" || suffix == "tb" || suffix == "tib" ? 1099511627776.0
                                                                     : 0;
  if (end != number.c_str() + number.size() || mult == 0 || n * mult / unit > 1e15) {
    return Fail(ctx.ErrorAt(key, key + ": '" + v + "' is not a size like 512, 2GB or 1.5 GiB"));
  }
  return std::optional<long long>(static_cast<long long>(std::ceil(n * mult / unit)));
}

Status EmitRequest(JobContext& ctx, const std::string& key, const char* attr, double unit,
                   const char* default_expr) {
  auto v = ctx.Get(key);
  if (!v) return Fail(v.error());
  if (!*v) {
    if (default_expr != nullptr) ctx.Emit(attr, default_expr);
    return {};
  }
  if (key == "request_cpus") {
    // A count, not a size: "4", or an expression; "2.5" and "2GB" are mistakes.
    const std::string& text = **v;
    bool numeric = std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.' ||
                   (text.size() > 1 && text[0] == '-');
    if (numeric) {
      auto n = ParseInt(text);
      if (!n) {
        return Fail(
            ctx.ErrorAt(key, "request_cpus must be a whole number of CPUs, not '" + text + "'"));
      }
      if (*n < 1) return Fail(ctx.ErrorAt(key, "request_cpus must be at least 1"));
      ctx.Emit(attr, std::to_string(*n));
      return {};
    }
  } else {
    auto size = ParseSize(ctx, key, **v, unit);
    if (!size) return Fail(size.error());
    if (*size) {
      ctx.Emit(attr, std::to_string(**size));
      return {};
    }
  }
  if (auto st = ValidateExpr(ctx, key, **v); !st) return st;
  ctx.Emit(attr, **v);
  return {};
}

Status EmitRequests(JobContext& ctx) {
  if (auto st = EmitRequest(ctx, "request_cpus", "RequestCpus", 1, "1"); !st) return st;
  if (auto st = EmitRequest(ctx, "request_memory", "RequestMemory", 1048576.0, nullptr); !st) {
    return st;
  }
  return EmitRequest(ctx, "request_disk", "RequestDisk", 1024.0, nullptr);
}

// What a grid job names for the site's batch system reaches its commands as one argument: only
// the characters every batch system takes in a queue or account name (the site checks the same).
Status CheckBatchNames(JobContext& ctx) {
  auto u = GetUniverse(ctx);
  if (!u) return Fail(u.error());
  if (*u != kGridUniverse) return {};
  for (const std::string key : {"batch_queue", "batch_project"}) {
    auto v = ctx.Get(key);
    if (!v) return Fail(v.error());
    if (!*v) continue;
    bool ok = (*v)->size() <= 64;
    for (char ch : **v) {
      ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' ||
                  ch == '+' || ch == '-');
    }
    if (!ok) {
      return Fail(ctx.ErrorAt(key, key +
                                       " must be 1 to 64 of A-Z a-z 0-9 _ . + - (a name the "
                                       "site's batch system knows), not '" +
                                       **v + "'"));
    }
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

}  // namespace

JobContext::JobContext(Expander& expander, const SubmitOptions& options, std::string file,
                       std::string cwd, int queue_line, std::vector<std::string>* warnings)
    : expander_(expander),
      options_(options),
      file_(std::move(file)),
      cwd_(std::move(cwd)),
      queue_line_(queue_line),
      warnings_(warnings) {}

Result<std::optional<std::string>> JobContext::Get(const std::string& key) {
  auto v = expander_.ExpandName(key, queue_line_);
  if (!v) return Fail(v.error());
  if (!*v) return std::optional<std::string>();
  lines_[key] = (*v)->line;
  std::string_view t = Trim((*v)->text);
  if (t.empty()) return std::optional<std::string>();
  return std::optional<std::string>(std::string(t));
}

const std::string& JobContext::CheckDirOnce(const std::string& dir,
                                            std::string (*check)(const std::string&)) {
  auto it = dir_checks_.find(dir);
  if (it == dir_checks_.end()) it = dir_checks_.emplace(dir, check(dir)).first;
  return it->second;
}

Error JobContext::ErrorAt(const std::string& key, std::string_view message) const {
  auto it = lines_.find(key);
  return LineError(file_, it == lines_.end() ? queue_line_ : it->second, message);
}

Error JobContext::ErrorAtLine(int line, std::string_view message) const {
  return LineError(file_, line, message);
}

void JobContext::WarnAt(const std::string& key, std::string_view message) {
  auto it = lines_.find(key);
  int line = it == lines_.end() ? queue_line_ : it->second;
  std::string w = file_ + ":" + std::to_string(line) + ": warning: " + std::string(message);
  if (std::find(warnings_->begin(), warnings_->end(), w) == warnings_->end()) {
    warnings_->push_back(std::move(w));
  }
}

void JobContext::Emit(std::string name, std::string expr) {
  if (overridden_ != nullptr && !overridden_->empty() && overridden_->count(ToLower(name)) != 0) {
    return;
  }
  out_->push_back(Attr{std::move(name), std::move(expr)});
}

void JobContext::EmitOverride(std::string name, std::string expr) {
  out_->push_back(Attr{std::move(name), std::move(expr)});
}

Result<bool> GetBool(JobContext& ctx, const std::string& key, bool default_value) {
  auto v = ctx.Get(key);
  if (!v) return Fail(v.error());
  if (!*v) return default_value;
  auto b = ParseBool(**v);
  if (!b) return Fail(ctx.ErrorAt(key, key + " must be true or false, not '" + **v + "'"));
  return *b;
}

Result<int> GetUniverse(JobContext& ctx) {
  auto v = ctx.Get("universe");
  if (!v) return Fail(v.error());
  if (!*v) return kVanillaUniverse;
  std::string u = ToLower(**v);
  if (u == "vanilla") return kVanillaUniverse;
  if (u == "local") return kLocalUniverse;
  if (u == "grid") return kGridUniverse;
  return Fail(ctx.ErrorAt(
      "universe", "unknown universe '" + **v + "' (Kite runs vanilla, local and grid jobs)"));
}

std::vector<Handler> MakeHandlers(const std::vector<CustomAttr>& customs) {
  std::vector<Handler> h = {EmitFixed,        EmitUniverse, EmitExecutable,    EmitArguments,
                            EmitEnvironment,  EmitIwd,      EmitInput,         EmitOutput,
                            EmitError,        EmitUserLog,  EmitHold,          EmitNotification,
                            EmitGridResource, EmitProxy,    EmitTransferFiles, EmitRequests,
                            CheckBatchNames};
  for (const auto& c : kSimpleCommands) {
    h.push_back([&c](JobContext& ctx) { return EmitSimple(ctx, c); });
  }
  for (const auto& c : customs) {
    h.push_back([&c](JobContext& ctx) { return EmitCustom(ctx, c); });
  }
  return h;
}

bool IsCommand(std::string_view lower_key) {
  for (const auto& c : kSimpleCommands) {
    if (lower_key == c.key) return true;
  }
  for (const char* k : kOtherCommands) {
    if (lower_key == k) return true;
  }
  return false;
}

bool IsReservedAttr(std::string_view name) {
  return EqualsIgnoreCase(name, "ClusterId") || EqualsIgnoreCase(name, "ProcId") ||
         EqualsIgnoreCase(name, "JobStatus") || EqualsIgnoreCase(name, "Owner");
}

}  // namespace kite::submit
