// Turning the commands in force at a queue statement into job attributes, one proc at a time.
// Internal to kite_submit.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "submit/lines.h"
#include "submit/macros.h"
#include "submit/submit_file.h"

namespace kite::submit {

// `+Attr = expr` or `MY.Attr = expr`.
struct CustomAttr {
  std::string name;   // as written, without the prefix
  std::string value;  // raw; macros are expanded per proc
  int line = 0;
};

// Facts about the whole parse that handlers need: options with their defaults filled in.
struct ParseEnv {
  const SubmitOptions* options = nullptr;
  const SourceMap* map = nullptr;
  const MacroTable* table = nullptr;  // every definition, for prefix commands (request_<res>)
  std::string cwd;                    // absolute
  std::string owner;                  // options.owner or the login name
  std::string arch;                   // options.arch or uname's ("X86_64")
  std::string opsys;                  // options.opsys or "LINUX"
  std::string fs_domain;
};

// What a command handler sees while building one proc: expanded command values, the options,
// and where to put attributes and warnings.
class JobContext {
 public:
  JobContext(Expander& expander, const ParseEnv& env, int queue_line,
             std::vector<std::string>* warnings);

  // The expanded, trimmed value of command `key` (its canonical lower-case name), read under the
  // key or else under one of its aliases (commands.h); nullopt when unset or empty.
  Result<std::optional<std::string>> Get(const std::string& key);
  // True when `key` (or an alias) is defined at all, even as empty.
  bool IsSet(const std::string& key);
  // Expands text written at `line` (custom attribute values).
  Result<std::string> Expand(std::string_view text, int line) {
    return expander_.Expand(text, line);
  }

  // "file:line: message" at the line that set `key` (the queue statement's line when unset).
  Error ErrorAt(const std::string& key, std::string_view message) const;
  Error ErrorAtLine(int line, std::string_view message) const;
  // Adds "file:line: warning: message" once, at the line that set `key`.
  void WarnAt(const std::string& key, std::string_view message);

  // Adds an attribute unless a custom attribute of the same name overrides it.
  void Emit(std::string name, std::string expr);
  // Adds a custom attribute, which overrides a built-in one of the same name.
  void EmitOverride(std::string name, std::string expr);
  // The expression of an attribute already emitted for this proc, or nullptr. Reading one that
  // differs between procs marks the reader as differing too.
  const std::string* Emitted(std::string_view name);

  const SubmitOptions& options() const { return *env_.options; }
  const ParseEnv& env() const { return env_; }
  const std::string& cwd() const { return env_.cwd; }
  int queue_line() const { return queue_line_; }
  Expander& expander() { return expander_; }
  const SourceMap& map() const { return *env_.map; }
  // Definitions whose lower-case name starts with `prefix` and is longer, as (name, line).
  std::vector<std::pair<std::string, int>> DefinedWithPrefix(std::string_view prefix) const;

  // Memoised file-system check of a directory, so 10000 procs writing out.$(Process) into one
  // directory cost one stat: `check` runs once per distinct `dir`.
  const std::string& CheckDirOnce(const std::string& dir, std::string (*check)(const std::string&));

  // Where Emit writes: the current handler's output, the proc's own attributes (already sorted
  // out by earlier handlers) and the statement's shared ones.
  void set_output(std::vector<Attr>* out, const std::vector<Attr>* proc,
                  const std::vector<Attr>* shared) {
    out_ = out, proc_ = proc, shared_ = shared;
  }
  void set_overridden(const std::set<std::string>* lower_names) { overridden_ = lower_names; }

 private:
  Expander& expander_;
  const ParseEnv& env_;
  int queue_line_;
  std::vector<std::string>* warnings_;  // deduplicated: a warning is given once
  // What Get learnt about a command: the names it is read under, the line of the value last
  // read (0: none), and its value once known to be the same for every proc of the statement
  // (it read no proc variable).
  struct Key {
    std::span<const std::string> names;
    int line = 0;
    bool same_for_all = false;
    std::optional<std::string> value;
  };
  Key& KeyOf(const std::string& key);
  Result<std::optional<std::string>> Lookup(const std::string& key, Key& k);
  std::unordered_map<std::string, Key> keys_;
  std::unordered_map<std::string, std::string> dir_checks_;
  std::vector<Attr>* out_ = nullptr;
  const std::vector<Attr>* proc_ = nullptr;
  const std::vector<Attr>* shared_ = nullptr;
  const std::set<std::string>* overridden_ = nullptr;
};

using Handler = std::function<Status(JobContext&)>;

// The handlers for every command Kite knows, in the order condor_submit builds a job ad,
// followed by one per custom attribute (which override built-in attributes of the same name)
// and the handlers that read what the others produced (Requirements, RequireGPUs).
std::vector<Handler> MakeHandlers(const std::vector<CustomAttr>& customs);

// Attributes only Kite sets; `+ProcId = 3` and the like are refused.
bool IsReservedAttr(std::string_view name);

// HTCondor's JobUniverse codes.
inline constexpr int kVanillaUniverse = 5;
inline constexpr int kGridUniverse = 9;
inline constexpr int kLocalUniverse = 12;

// Fails, naming `key`, when `text` is not a ClassAd expression.
Status ValidateExpr(JobContext& ctx, const std::string& key, std::string_view text);
// true/false/yes/no/t/f/1/0 in any case, else an error naming `key`.
Result<bool> GetBool(JobContext& ctx, const std::string& key, bool default_value);
// An integer (or an expression that evaluates to one), else an error naming `key`.
Result<std::optional<long long>> GetInt(JobContext& ctx, const std::string& key);
// JobUniverse code of the `universe` command (vanilla when unset).
Result<int> GetUniverse(JobContext& ctx);
// Absolute Iwd: initialdir (or an alias) relative to the current directory, else that directory.
Result<std::string> GetIwd(JobContext& ctx);
// The ClassAd string literal for `s` as condor_submit stores it.
std::string Quoted(std::string_view s);

// Handlers, by concern (job_core.cpp, job_files.cpp, job_resources.cpp, job_policy.cpp,
// job_grid.cpp, job_requirements.cpp).
Status EmitFixed(JobContext& ctx);
Status EmitUniverse(JobContext& ctx);
Status EmitArguments(JobContext& ctx);
Status EmitEnvironment(JobContext& ctx);
Status EmitHold(JobContext& ctx);
Status EmitNotification(JobContext& ctx);
struct CommandInfo;
Status EmitSimple(JobContext& ctx, const CommandInfo& c);
// "90", "90s", "15m", "2h", "1d" -> seconds; nullopt otherwise (Kite's durations).
std::optional<long long> ParseDuration(std::string_view s);
Status EmitCustom(JobContext& ctx, const CustomAttr& c);

Status EmitIwd(JobContext& ctx);
Status EmitExecutable(JobContext& ctx);
Status EmitStdFiles(JobContext& ctx);
Status EmitUserLog(JobContext& ctx);
Status EmitTransferFiles(JobContext& ctx);
Status EmitSizes(JobContext& ctx);
Status EmitProxy(JobContext& ctx);

Status EmitRequests(JobContext& ctx);
Status EmitGpus(JobContext& ctx);
Status EmitCustomResources(JobContext& ctx);
Status EmitRetryRequests(JobContext& ctx);

Status EmitRank(JobContext& ctx);
Status EmitRetries(JobContext& ctx);
Status EmitLeaveInQueue(JobContext& ctx);
Status EmitDeferral(JobContext& ctx);
Status EmitKillSignals(JobContext& ctx);
Status EmitMiscPolicy(JobContext& ctx);
Status EmitParallel(JobContext& ctx);
Status EmitAccounting(JobContext& ctx);

Status EmitGridResource(JobContext& ctx);
Status EmitGridParams(JobContext& ctx);
Status CheckBatchNames(JobContext& ctx);

Status EmitRequirements(JobContext& ctx);
Status EmitAutoAttributes(JobContext& ctx);

}  // namespace kite::submit
