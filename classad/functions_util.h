// Helpers shared by the built-in function files (library-internal).
//
// The built-ins are split by concern: functions.cpp (the name table, type predicates, control
// and evaluation), functions_strings.cpp, functions_lists.cpp (lists and string lists),
// functions_math.cpp (conversions and arithmetic), functions_time.cpp and functions_regex.cpp.
// Each file exposes its entries through one *Functions() table that FindBuiltin searches.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "classad/eval.h"
#include "classad/value.h"

namespace kite::classad {

struct BuiltinEntry {
  std::string_view name;  // matched case-insensitively
  BuiltinFn fn;
};

std::span<const BuiltinEntry> StringFunctions();
std::span<const BuiltinEntry> ListFunctions();
std::span<const BuiltinEntry> MathFunctions();
std::span<const BuiltinEntry> TimeFunctions();
std::span<const BuiltinEntry> RegexFunctions();

// Evaluates argument `i` of the call. REQUIRES: i < c.args.size().
inline Value Arg(Evaluator& ev, const CallExpr& c, const Frame& f, size_t i) {
  return ev.Eval(*c.args[i], f);
}

// ---- HTCondor's conversions (its convertValueTo*Value) ----

// Appends the value as HTCondor's string() gives it: strings as they are; numbers, booleans,
// lists and ads as HTCondor unparses them (reals as "1.500000000000000E+00", 0.0 as "0.0", lists
// as "{ 1,2 }", ads as "[ a = 1; b = 2 ]"); instants as "2004-01-01T00:00:00+01:00". Returns
// false, appending nothing, for UNDEFINED and ERROR.
bool AppendConverted(std::string& out, const Value& v);
// The converted text as a Value: a string, or UNDEFINED / ERROR as the input was.
Value ToStringValue(const Value& v);
// A whole value unparsed as HTCondor writes it (strings quoted and escaped).
void AppendHTCondorUnparse(std::string& out, const Value& v);

// A real: numbers and booleans as they are, instants as their seconds, strings read as C's
// strtod reads them (blanks, hexadecimal, "inf" and "nan" accepted, trailing text ignored).
// UNDEFINED for UNDEFINED, ERROR for anything else.
Value ToRealValue(const Value& v);
// An integer: as ToRealValue, then truncated toward zero; ERROR when that does not fit.
Value ToIntegerValue(const Value& v);

// ---- string lists ----

// Calls fn(item) for each non-empty piece of `s` between any of the `separators` (with blanks
// trimmed from each piece, and pieces left empty skipped, when `trim`), until fn returns true.
// Returns whether it did. Allocates nothing.
template <typename Fn>
bool AnyItem(std::string_view s, std::string_view separators, bool trim, Fn&& fn) {
  constexpr std::string_view kBlanks = " \t\n\r\f\v";
  size_t i = 0;
  while (i < s.size()) {
    size_t start = s.find_first_not_of(separators, i);
    if (start == std::string_view::npos) break;
    size_t end = s.find_first_of(separators, start);
    if (end == std::string_view::npos) end = s.size();
    std::string_view item = s.substr(start, end - start);
    i = end;
    if (trim) {
      size_t a = item.find_first_not_of(kBlanks);
      if (a == std::string_view::npos) continue;
      item = item.substr(a, item.find_last_not_of(kBlanks) - a + 1);
    }
    if (fn(item)) return true;
  }
  return false;
}

// The non-empty pieces of `s` between any of the `separators`.
std::vector<std::string_view> SplitStringList(std::string_view s, std::string_view separators);

// ---- regular expressions (functions_regex.cpp) ----

// Matches `subject` against `pattern` with HTCondor's option letters (i, m, s, x; others are
// ignored). Returns true/false, or ERROR for an invalid pattern or a match that exceeds the
// per-match budget (see kRegexMatchLimit in functions_regex.cpp).
Value RegexMatches(std::string_view pattern, std::string_view subject, std::string_view options);

}  // namespace kite::classad
