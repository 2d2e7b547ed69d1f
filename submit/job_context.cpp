// JobContext, the shared value helpers, and the order handlers run in.
#include <algorithm>

#include "common/strings.h"
#include "submit/commands.h"
#include "submit/expr_util.h"
#include "submit/job_attrs.h"
#include "submit/quoting.h"

namespace kite::submit {
namespace {

std::optional<bool> ParseBool(std::string_view s) {
  for (const char* t : {"true", "t", "yes", "y", "1"}) {
    if (EqualsIgnoreCase(s, t)) return true;
  }
  for (const char* f : {"false", "f", "no", "n", "0"}) {
    if (EqualsIgnoreCase(s, f)) return false;
  }
  return std::nullopt;
}

// The names `key` may be written under: its own and its aliases.
std::span<const std::string> NamesOf(const std::string& key) {
  const CommandInfo* info = FindCommand(key);
  if (info == nullptr || CommandNames(*info).empty()) return {};
  return CommandNames(*info);
}

}  // namespace

JobContext::JobContext(Expander& expander, const ParseEnv& env, int queue_line,
                       std::vector<std::string>* warnings)
    : expander_(expander), env_(env), queue_line_(queue_line), warnings_(warnings) {}

JobContext::Key& JobContext::KeyOf(const std::string& key) {
  auto [it, fresh] = keys_.try_emplace(key);
  if (fresh) it->second.names = NamesOf(key);
  return it->second;
}

// Procs of one statement mostly share their values: a value that read no proc variable is
// looked up once per statement, not once per proc.
Result<std::optional<std::string>> JobContext::Get(const std::string& key) {
  Key& k = KeyOf(key);
  if (k.same_for_all) return k.value;
  auto outer = expander_.BeginRecording();
  auto value = Lookup(key, k);
  auto reads = expander_.EndRecording(outer);
  if (value && !reads.proc_vars && !reads.path_base) k.same_for_all = true, k.value = *value;
  return value;
}

Result<std::optional<std::string>> JobContext::Lookup(const std::string& key, Key& k) {
  std::span<const std::string> only_key(&key, 1);
  for (const std::string& name : k.names.empty() ? only_key : k.names) {
    auto v = expander_.ExpandName(name, queue_line_);
    if (!v) return Fail(v.error());
    if (!*v) continue;
    k.line = (*v)->line;
    std::string_view t = Trim((*v)->text);
    if (t.empty()) continue;  // condor_submit treats an empty value as unset
    return std::optional<std::string>(std::string(t));
  }
  return std::optional<std::string>();
}

bool JobContext::IsSet(const std::string& key) {
  auto names = KeyOf(key).names;
  if (names.empty()) return env_.table->Find(key) != nullptr;
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return env_.table->Find(n) != nullptr; });
}

std::vector<std::pair<std::string, int>> JobContext::DefinedWithPrefix(
    std::string_view prefix) const {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& [key, def] : env_.table->all()) {
    if (key.size() > prefix.size() && key.starts_with(prefix)) out.emplace_back(key, def.line);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  return out;
}

const std::string& JobContext::CheckDirOnce(const std::string& dir,
                                            std::string (*check)(const std::string&)) {
  auto it = dir_checks_.find(dir);
  if (it == dir_checks_.end()) it = dir_checks_.emplace(dir, check(dir)).first;
  return it->second;
}

Error JobContext::ErrorAt(const std::string& key, std::string_view message) const {
  auto it = keys_.find(key);
  int line = it == keys_.end() || it->second.line == 0 ? queue_line_ : it->second.line;
  return LineError(*env_.map, line, message);
}

Error JobContext::ErrorAtLine(int line, std::string_view message) const {
  return LineError(*env_.map, line, message);
}

void JobContext::WarnAt(const std::string& key, std::string_view message) {
  auto it = keys_.find(key);
  int line = it == keys_.end() || it->second.line == 0 ? queue_line_ : it->second.line;
  std::string w = env_.map->Where(line) + ": warning: " + std::string(message);
  if (std::find(warnings_->begin(), warnings_->end(), w) == warnings_->end()) {
    warnings_->push_back(std::move(w));
  }
}

void JobContext::Emit(std::string name, std::string expr) {
  if (overridden_ != nullptr &&
      std::any_of(overridden_->begin(), overridden_->end(),
                  [&](const std::string& lower) { return EqualsIgnoreCase(lower, name); })) {
    return;
  }
  out_->push_back(Attr{std::move(name), std::move(expr)});
}

void JobContext::EmitOverride(std::string name, std::string expr) {
  out_->push_back(Attr{std::move(name), std::move(expr)});
}

const std::string* JobContext::Emitted(std::string_view name) {
  if (const std::string* v = FindAttr(*out_, name)) return v;
  if (proc_ != nullptr && proc_ != out_) {
    if (const std::string* v = FindAttr(*proc_, name)) {
      expander_.Touch();  // a per-proc input makes this handler per-proc
      return v;
    }
  }
  return shared_ != nullptr ? FindAttr(*shared_, name) : nullptr;
}

std::string Quoted(std::string_view s) {
  return QuoteClassAdString(s);
}

Result<bool> GetBool(JobContext& ctx, const std::string& key, bool default_value) {
  auto v = ctx.Get(key);
  if (!v) return Fail(v.error());
  if (!*v) return default_value;
  auto b = ParseBool(**v);
  if (!b) return Fail(ctx.ErrorAt(key, key + " must be true or false, not '" + **v + "'"));
  return *b;
}

Result<std::optional<long long>> GetInt(JobContext& ctx, const std::string& key) {
  auto v = ctx.Get(key);
  if (!v) return Fail(v.error());
  if (!*v) return std::optional<long long>();
  auto n = EvalInteger(**v);
  if (!n) return Fail(ctx.ErrorAt(key, key + " must be an integer, not '" + **v + "'"));
  return std::optional<long long>(*n);
}

Result<int> GetUniverse(JobContext& ctx) {
  auto v = ctx.Get("universe");
  if (!v) return Fail(v.error());
  if (!*v) return kVanillaUniverse;
  std::string u = ToLower(**v);
  if (u == "vanilla" || u == "5") return kVanillaUniverse;
  // The standard universe is a vanilla job with remote I/O and transparent checkpoints
  // (EmitMiscPolicy), which Kite gives unmodified programs.
  if (u == "standard" || u == "1") return kVanillaUniverse;
  // HTCondor's scheduler universe runs the job on the submit host at once, as the local universe
  // does (DAGMan's tests use it for node jobs): Kite runs it as a local job (JobUniverse 12).
  if (u == "local" || u == "12" || u == "scheduler" || u == "7") return kLocalUniverse;
  if (u == "grid" || u == "globus" || u == "9") return kGridUniverse;
  static const char* kKnown[] = {"pipe",     "linda", "pvm",    "mpi",      "java",
                                 "parallel", "vm",    "docker", "container"};
  bool known = std::find(std::begin(kKnown), std::end(kKnown), u) != std::end(kKnown) ||
               (u.size() <= 2 && EvalInteger(u).value_or(0) > 0);
  return Fail(ctx.ErrorAt(
      "universe", "universe = " + **v +
                      (known ? " is not supported by Kite" : " is not a universe HTCondor knows") +
                      " (Kite runs vanilla, standard, local and grid jobs)"));
}

bool IsReservedAttr(std::string_view name) {
  return EqualsIgnoreCase(name, "ClusterId") || EqualsIgnoreCase(name, "ProcId") ||
         EqualsIgnoreCase(name, "JobStatus") || EqualsIgnoreCase(name, "Owner");
}

std::vector<Handler> MakeHandlers(const std::vector<CustomAttr>& customs) {
  std::vector<Handler> h = {
      EmitFixed,           EmitUniverse,      EmitIwd,         EmitExecutable,   EmitArguments,
      EmitGridResource,    EmitGridParams,    EmitParallel,    EmitEnvironment,  EmitHold,
      EmitStdFiles,        EmitUserLog,       EmitProxy,       EmitNotification, EmitRank,
      EmitLeaveInQueue,    EmitRetries,       EmitKillSignals, EmitRequests,     EmitGpus,
      EmitCustomResources, EmitRetryRequests, EmitAccounting,  EmitMiscPolicy,
  };
  for (const auto& c : AllCommands()) {
    if (c.form == Form::kSpecial || c.use == KiteUse::kRefused) continue;
    h.push_back([&c](JobContext& ctx) { return EmitSimple(ctx, c); });
  }
  for (Handler f :
       {EmitDeferral, EmitSizes, EmitTransferFiles, EmitAutoAttributes, CheckBatchNames}) {
    h.push_back(f);
  }
  for (const auto& c : customs) {
    h.push_back([&c](JobContext& ctx) { return EmitCustom(ctx, c); });
  }
  h.push_back(EmitRequirements);
  return h;
}

}  // namespace kite::submit
