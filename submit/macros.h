// The submit file's definitions (commands and macros share one namespace, as in HTCondor) and
// $(NAME) expansion with HTCondor's macro functions. Internal to kite_submit.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "submit/lines.h"

namespace kite::submit {

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
  // `name = value` at `line`, stored under `key` (lower case; a command's canonical name when
  // `name` is one of its aliases). A reference to `name` itself inside `value` means its
  // previous value (HTCondor's `foo = $(foo) bar`); with no previous value it is left for
  // expansion to report.
  void Define(std::string_view key, std::string_view name, std::string_view value, int line,
              bool is_command);
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

// Macros condor_submit defines without the file saying so ($(SUBMIT_FILE), $(ARCH), ...).
struct BuiltinMacros {
  std::string cluster;
  std::string submit_file;
  std::string submit_time, year, month, day;
  std::string arch, opsys;
};

// Expands $(NAME), $(NAME:default), $(DOLLAR) and the macro functions $ENV() $F[fpdnxbqauw]()
// $BASENAME() $DIRNAME() $INT() $REAL() $STRING() $EVAL() $CHOICE() $SUBSTR() $RANDOM_CHOICE()
// $RANDOM_INTEGER(); leaves $$(...) (match-time substitution) untouched. An undefined name, an
// unknown function, a macro defined in terms of itself and an expansion longer than
// kMaxExpansion are errors ("file:line: ...").
class Expander {
 public:
  static constexpr size_t kMaxExpansion = 1 << 20;
  static constexpr size_t kMaxDepth = 64;

  Expander(const MacroTable& table, const SourceMap& map, BuiltinMacros builtins,
           std::function<uint32_t()> random);

  // nullptr while expanding a queue statement itself (no proc variables exist yet).
  void SetProc(const ProcVars* vars) { proc_ = vars; }
  // The directory $Ff() makes relative names absolute against (the job's Iwd, as in
  // condor_submit); `per_proc` when that directory differs between the procs of a statement.
  void SetFullPathBase(std::string dir, bool per_proc) {
    full_path_base_ = std::move(dir);
    base_per_proc_ = per_proc;
  }

  // Expands `text`, which sits at `line` (the line errors inside it are reported at).
  Result<std::string> Expand(std::string_view text, int line);

  // The expanded value of `lower_name` (a loop variable, a definition or an automatic variable)
  // with the line it came from (`queue_line` for loop variables), or nullopt when undefined.
  struct Value {
    std::string text;
    int line = 0;
  };
  Result<std::optional<Value>> ExpandName(const std::string& lower_name, int queue_line);

  // Set whenever a proc variable (Process, Step, Item, a loop variable, a random function...)
  // was read; the caller resets it to learn whether a value differs between the procs of a
  // queue statement.
  bool touched_proc_vars() const { return touched_; }
  // The macros expanded to nothing because nothing defines them: (line, name as written).
  const std::set<std::pair<int, std::string>>& undefined() const { return undefined_; }
  void ResetTouched() { touched_ = false; }
  // Marks what is being computed as differing between procs (it read something that does).
  void Touch() { touched_ = true; }

  // What the expansions since BeginRecording read: proc variables, or $Ff()'s directory (which
  // the Iwd handler sets). A value that read neither is the same for every proc of a statement.
  struct Reads {
    bool proc_vars = false;
    bool path_base = false;
  };
  // Starts recording what one value reads; returns what was recorded so far, for EndRecording
  // to fold back in (so the caller's own recording goes on).
  Reads BeginRecording() {
    Reads outer{touched_, path_base_read_};
    touched_ = path_base_read_ = false;
    return outer;
  }
  Reads EndRecording(Reads outer) {
    Reads inner{touched_, path_base_read_};
    touched_ = touched_ || outer.proc_vars;
    path_base_read_ = path_base_read_ || outer.path_base;
    return inner;
  }

 private:
  // A literal value (never expanded further) or a definition to expand.
  struct Lookup {
    std::optional<std::string> literal;
    const Definition* def = nullptr;
    bool expand = false;  // a queue item: its text may hold macros, expanded when used
  };
  std::set<std::pair<int, std::string>> undefined_;
  Lookup Find(const std::string& lower_name);
  Lookup FindBuiltin(const std::string& lower_name);
  Status ExpandInto(std::string& out, std::string_view text, int line);
  Status ExpandReference(std::string& out, std::string_view inner, int line);
  Status ExpandDefinition(std::string& out, const Definition& def, int line);
  // Appends a looked-up value: a definition or queue item expanded, any other literal as is.
  Status AppendFound(std::string& out, const Lookup& found, int line);
  Error Bad(int line, std::string_view message) const { return LineError(map_, line, message); }

  // Macro functions (macro_functions.cpp). `word` is the name after '$', `inner` what the
  // parentheses hold.
  Status ExpandFunction(std::string& out, std::string_view word, std::string_view inner, int line);
  // The value a function argument stands for: the expanded macro it names, or else the
  // argument itself, expanded.
  Result<std::string> ArgValue(std::string_view arg, int line);
  Result<long long> IntArg(std::string_view arg, std::string_view fn, int line);
  Status FnEnv(std::string& out, std::string_view inner, int line);
  Status FnFilename(std::string& out, std::string_view flags, std::string_view inner, int line);
  Status FnNumber(std::string& out, bool real, std::string_view inner, int line);
  Status FnString(std::string& out, bool eval, std::string_view inner, int line);
  Status FnChoice(std::string& out, std::string_view inner, int line);
  Status FnRandomChoice(std::string& out, std::string_view inner, int line);
  Status FnRandomInteger(std::string& out, std::string_view inner, int line);
  Status FnSubstr(std::string& out, std::string_view inner, int line);
  uint32_t Random();

  const MacroTable& table_;
  const SourceMap& map_;
  BuiltinMacros builtins_;
  std::function<uint32_t()> random_;
  const ProcVars* proc_ = nullptr;
  std::string full_path_base_;
  bool base_per_proc_ = false;
  std::vector<const Definition*> stack_;  // definitions being expanded, to catch cycles
  size_t item_depth_ = 0;                 // queue items being expanded (they may nest)
  bool touched_ = false;
  bool path_base_read_ = false;
};

// Index of the ')' closing the '(' at `open`, honouring nested parentheses; npos when missing.
size_t FindClose(std::string_view text, size_t open);

// Letters, digits, '_' and '.': what $(NAME) may name.
bool IsMacroName(std::string_view name);

}  // namespace kite::submit
