// The table of HTCondor's submit commands and what Kite does with each: the attribute it sets
// (HTCondor's name and form), whether Kite acts on it or only records it, or why it is refused.
// Every command condor_submit knows is in the table; none is taken for a macro and dropped.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kite::submit {

// What Kite does with a command.
enum class KiteUse : uint8_t {
  kActs,     // Kite acts on it (runs, stages, mails, evaluates the policy, tells the site)
  kRecords,  // sets HTCondor's attribute, for HTCondor tools and Kite's pool; Kite itself does
             // not act on it (yet)
  kRefused,  // the file is refused with a message naming the command and `note`
};

// How a simple command's value becomes its attribute (condor_submit's f_as_* options).
enum class Form : uint8_t {
  kString,    // a ClassAd string
  kUnquoted,  // a ClassAd string; quotes around the whole value are removed first
  kList,      // a ClassAd string "a,b,c": blanks and commas separate the items
  kBool,      // true or false
  kInt,       // an integer, or an expression that evaluates to one
  kUInt,      // the same, not negative
  kExpr,      // a ClassAd expression, as written
  kLogPath,   // a ClassAd string: the path made absolute against Iwd
  kSpecial,   // handled by its own code, which may set several attributes
};

struct CommandInfo {
  const char* key;   // as condor_submit spells it (lower case)
  const char* attr;  // the attribute it sets; nullptr when it sets none or several
  Form form;
  KiteUse use;
  const char* note;     // kRefused: why; otherwise what Kite does with it (may be "")
  const char* aliases;  // other names condor_submit reads for it, '|'-separated, or ""
};

// Every command, in the order of the docs table (grouped by concern).
std::span<const CommandInfo> AllCommands();

// The command named `name` (any case), by its key, an alias, or its attribute name (condor_submit
// reads `OnExitRemove = ...` as on_exit_remove); nullptr for a macro name. Prefix commands
// (request_<res>, require_<res>, ec2_tag_<name>, ...) return their family's entry.
const CommandInfo* FindCommand(std::string_view name);

// True when `lower_name` is a command, an alias of one or a prefix command (not a macro).
bool IsCommand(std::string_view lower_name);

// The names (key first, then aliases) a command's value may be written under.
std::span<const std::string> CommandNames(const CommandInfo& info);

}  // namespace kite::submit
