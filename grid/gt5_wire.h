// The lines the gridmanager's GRAM5 link and kite-gt5-helper exchange (docs/grid-gt5.md): fields
// separated by tabs, with tab, newline, carriage return and backslash escaped, so any field may
// carry any text. Header-only: the helper, which links only Globus, includes it too.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kite::grid::gt5 {

inline std::string JoinLine(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += '\t';
    for (char c : fields[i]) {
      switch (c) {
        case '\\':
          out += "\\\\";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        default:
          out += c;
      }
    }
  }
  return out;
}

// The fields of one line (without its newline). An unknown escape keeps the character after the
// backslash; a lone trailing backslash is dropped.
inline std::vector<std::string> SplitLine(std::string_view line) {
  std::vector<std::string> fields(1);
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == '\t') {
      fields.emplace_back();
    } else if (c == '\\') {
      if (++i == line.size()) break;
      char e = line[i];
      fields.back() += e == 't' ? '\t' : e == 'n' ? '\n' : e == 'r' ? '\r' : e;
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

}  // namespace kite::grid::gt5
