// Helpers shared by the built-in function files (library-internal).
#pragma once

#include <regex.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "classad/value.h"

namespace kite::classad {

// HTCondor's default string-list separators: blanks and commas.
inline constexpr std::string_view kDefaultListSeparators = " ,\t\n";

// Appends the text of a scalar: strings as they are, numbers and booleans as written.
// Returns false (appending nothing) for UNDEFINED, ERROR, lists and ads.
bool AppendAsText(std::string& out, const Value& v);

// The non-empty pieces of `s` between any of the `separators`.
std::vector<std::string_view> SplitStringList(std::string_view s, std::string_view separators);

// A compiled POSIX extended regex, cached per thread; nullptr when the pattern is invalid.
const regex_t* CachedRegex(std::string_view pattern, bool ignore_case);

// Parses the whole of `text` (blanks allowed around it) as an integer or real.
std::optional<Value> ParseNumber(std::string_view text);

}  // namespace kite::classad
