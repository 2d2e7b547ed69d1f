// Turning the commands in force at a queue statement into job attributes, one proc at a time.
// Internal to kite_submit.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "submit/macros.h"
#include "submit/submit_file.h"

namespace kite::submit {

// `+Attr = expr` or `MY.Attr = expr`.
struct CustomAttr {
  std::string name;   // as written, without the prefix
  std::string value;  // raw; macros are expanded per proc
  int line = 0;
};

// What a command handler sees while building one proc: expanded command values, the options,
// and where to put attributes and warnings.
class JobContext {
 public:
  JobContext(Expander& expander, const SubmitOptions& options, std::string file, std::string cwd,
             int queue_line, std::vector<std::string>* warnings);

  // The expanded, trimmed value of command `key` (lower-case); nullopt when unset or empty.
  Result<std::optional<std::string>> Get(const std::string& key);
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

  const SubmitOptions& options() const { return options_; }
  const std::string& cwd() const { return cwd_; }
  const std::string& file() const { return file_; }
  int queue_line() const { return queue_line_; }
  Expander& expander() { return expander_; }

  // Memoised file-system check of a directory, so 10000 procs writing out.$(Process) into one
  // directory cost one stat: `check` runs once per distinct `dir`.
  const std::string& CheckDirOnce(const std::string& dir, std::string (*check)(const std::string&));

  void set_output(std::vector<Attr>* out) { out_ = out; }
  void set_overridden(const std::set<std::string>* lower_names) { overridden_ = lower_names; }

 private:
  Expander& expander_;
  const SubmitOptions& options_;
  std::string file_;
  std::string cwd_;
  int queue_line_;
  std::vector<std::string>* warnings_;          // deduplicated: a warning is given once
  std::unordered_map<std::string, int> lines_;  // key -> line of the value last read
  std::unordered_map<std::string, std::string> dir_checks_;
  std::vector<Attr>* out_ = nullptr;
  const std::set<std::string>* overridden_ = nullptr;
};

using Handler = std::function<Status(JobContext&)>;

// The handlers for every command Kite knows, in attribute order, followed by one per custom
// attribute (which override built-in attributes of the same name).
std::vector<Handler> MakeHandlers(const std::vector<CustomAttr>& customs);

// True when `lower_key` is a submit command (not a macro).
bool IsCommand(std::string_view lower_key);

// Attributes only Kite sets; `+ProcId = 3` and the like are refused.
bool IsReservedAttr(std::string_view name);

// Shared by the handler files (job_attrs.cpp, job_files.cpp).
inline constexpr int kVanillaUniverse = 5;
inline constexpr int kGridUniverse = 9;
inline constexpr int kLocalUniverse = 12;
// true/false/yes/no/t/f/1/0 in any case, else an error naming `key`.
Result<bool> GetBool(JobContext& ctx, const std::string& key, bool default_value);
// JobUniverse code of the `universe` command (vanilla when unset).
Result<int> GetUniverse(JobContext& ctx);
// Absolute Iwd: initialdir (or initial_dir) relative to the current directory, else that directory.
Result<std::string> GetIwd(JobContext& ctx);

// File-related handlers (job_files.cpp).
Status EmitExecutable(JobContext& ctx);
Status EmitIwd(JobContext& ctx);
Status EmitInput(JobContext& ctx);
Status EmitOutput(JobContext& ctx);
Status EmitError(JobContext& ctx);
Status EmitUserLog(JobContext& ctx);
Status EmitTransferFiles(JobContext& ctx);
Status EmitProxy(JobContext& ctx);

}  // namespace kite::submit
