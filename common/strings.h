// String helpers shared by the parsers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kite {

std::string_view Trim(std::string_view s);
std::string ToLower(std::string_view s);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
// Splits on `sep`, trimming each piece; empty pieces are dropped when `skip_empty`.
std::vector<std::string> Split(std::string_view s, char sep, bool skip_empty = true);
bool StartsWith(std::string_view s, std::string_view prefix);
// The shortest decimal text that reads back as exactly `v` ("60", "0.25"): for numbers passed to
// another process on its command line.
std::string ExactNumber(double v);

}  // namespace kite
