// String helpers shared by the parsers.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kite {

std::string_view Trim(std::string_view s);
std::string ToLower(std::string_view s);
// The whole of `s` as a whole number of 0 or more ("12"); nullopt for anything else ("", "-1",
// "1.5", "12x", out of range).
std::optional<int64_t> ParseCount(std::string_view s);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
// Splits on `sep`, trimming each piece; empty pieces are dropped when `skip_empty`.
std::vector<std::string> Split(std::string_view s, char sep, bool skip_empty = true);
bool StartsWith(std::string_view s, std::string_view prefix);
// The shortest decimal text that reads back as exactly `v` ("60", "0.25"): for numbers passed to
// another process on its command line.
std::string ExactNumber(double v);
// "HOST:PORT" or "[V6 ADDRESS]:PORT" -> host (without its brackets) and port, neither checked
// further; nullopt when the text has neither form.
std::optional<std::pair<std::string_view, std::string_view>> SplitHostPort(std::string_view text);
// A port number: decimal digits only, at most 65535.
std::optional<unsigned> ParsePort(std::string_view text);
// Text from another party (a startd, a job, a site) made safe for one log line: control
// characters, '\\' and bytes above 0x7e written as \xNN, and cut after `max` bytes of the input
// ("..." marks the cut), so nobody can forge or flood log lines through it.
std::string ForLog(std::string_view s, size_t max = 300);

// The name of an enumerator whose values count from 0 in the order of `names`; "?" for any other.
template <class Enum, size_t N>
std::string_view EnumName(Enum value, const std::array<std::string_view, N>& names) {
  auto i = static_cast<size_t>(value);
  return i < N ? names[i] : "?";
}

}  // namespace kite
