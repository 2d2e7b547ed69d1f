// The submit file's definitions (commands and macros share one namespace, as in HTCondor) and
// $(NAME) expansion. Internal to kite_submit.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.h"

namespace kite::submit {

// "file:line: message" as a kInvalidInput error.
Error LineError(std::string_view file, int line, std::string_view message);

struct Definition {
  std::string name;   // as written, for messages
  std::string value;  // raw text; a self reference $(name) was replaced by the previous value
  int line = 0;
  bool is_command = false;
  mutable bool used = false;  // read by a command or another macro; drives "unused" warnings
};

// Definitions keyed by lower-case name. Values stay unexpanded until a queue statement uses them,
// so a macro may be defined after the command that refers to it (HTCondor's late binding).
class MacroTable {
 public:
  // `name = value` at `line`. A reference to `name` itself inside `value` means its previous
  // value (HTCondor's `foo = $(foo) bar`); with no previous value it is left for expansion to
  // report.
  void Define(std::string_view name, std::string_view value, int line, bool is_command);
  const Definition* Find(std::string_view lower_name) const;
  const auto& all() const { return defs_; }

 private:
  // Transparent hashing: lookups by string_view allocate nothing.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, Definition, Hash, std::equal_to<>> defs_;
};

// The automatic variables of one proc while a queue statement runs.
struct ProcVars {
  long proc_id = 0;                                       // $(Process) / $(ProcId)
  long step = 0;                                          // $(Step): 0..count-1
  long item_index = 0;                                    // $(ItemIndex) / $(Row)
  const std::vector<std::string>* loop_names = nullptr;   // lower-case; e.g. {"item"}
  const std::vector<std::string>* loop_values = nullptr;  // same length as loop_names
};

// Expands $(NAME), $(NAME:default), $ENV(NAME) and $(DOLLAR); leaves $$(...) (match-time
// substitution) untouched. Every undefined name is an error, as is a macro defined in terms of
// itself or an expansion longer than kMaxExpansion.
class Expander {
 public:
  static constexpr size_t kMaxExpansion = 1 << 20;
  static constexpr size_t kMaxDepth = 64;

  Expander(const MacroTable& table, std::string file, long cluster_id);

  // nullptr while expanding a queue statement itself (no proc variables exist yet).
  void SetProc(const ProcVars* vars) { proc_ = vars; }

  // Expands `text`, which sits at `line` (the line errors inside it are reported at).
  Result<std::string> Expand(std::string_view text, int line);

  // The expanded value of `lower_name` (a loop variable, a definition or an automatic variable)
  // with the line it came from (`queue_line` for loop variables), or nullopt when undefined.
  struct Value {
    std::string text;
    int line = 0;
  };
  Result<std::optional<Value>> ExpandName(const std::string& lower_name, int queue_line);

  // Set whenever a proc variable (Process, Step, Item, a loop variable...) was read; the caller
  // resets it to learn whether a value differs between the procs of a queue statement.
  bool touched_proc_vars() const { return touched_; }
  void ResetTouched() { touched_ = false; }

 private:
  // A literal value (never expanded further) or a definition to expand.
  struct Lookup {
    std::optional<std::string> literal;
    const Definition* def = nullptr;
  };
  Lookup Find(const std::string& lower_name);
  Status ExpandInto(std::string& out, std::string_view text, int line);
  Status ExpandReference(std::string& out, std::string_view inner, int line);
  Status ExpandDefinition(std::string& out, const Definition& def, int line);
  Status ExpandEnv(std::string& out, std::string_view inner, int line);

  const MacroTable& table_;
  std::string file_;
  std::string cluster_;
  const ProcVars* proc_ = nullptr;
  std::vector<const Definition*> stack_;  // definitions being expanded, to catch cycles
  bool touched_ = false;
};

}  // namespace kite::submit
