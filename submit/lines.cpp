// Logical lines of a submit file.
#include "submit/lines.h"

#include "common/strings.h"
#include "submit/macros.h"

namespace kite::submit {

bool IsBlankOrComment(std::string_view text) {
  auto t = Trim(text);
  return t.empty() || t.front() == '#';
}

Result<std::vector<LogicalLine>> SplitLines(std::string_view text, std::string_view file) {
  std::vector<LogicalLine> out;
  bool continuing = false;
  int number = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view phys = text.substr(pos, end - pos);
    pos = end + 1;
    ++number;
    if (phys.find('\0') != std::string_view::npos) {
      return Fail(LineError(file, number, "NUL character in submit file"));
    }
    if (!phys.empty() && phys.back() == '\r') phys.remove_suffix(1);
    bool comment = !continuing && !Trim(phys).empty() && Trim(phys).front() == '#';
    bool continues = !comment && !phys.empty() && phys.back() == '\\';
    if (continues) phys.remove_suffix(1);
    if (continuing) {
      out.back().text.append(phys);
    } else {
      out.push_back(LogicalLine{std::string(phys), number});
    }
    continuing = continues;
  }
  return out;
}

}  // namespace kite::submit
