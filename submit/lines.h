// Splitting submit-file text into logical lines (continuations joined). Internal to kite_submit.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace kite::submit {

struct LogicalLine {
  std::string text;  // physical lines joined where one ended in '\'; no trailing '\r'
  int line = 0;      // 1-based number of the first physical line
};

// A line whose last character is '\' continues on the next one (the '\' is dropped). A comment
// line (first non-blank character '#') never continues, so a commented-out continued command
// does not swallow the line after it. NUL bytes are refused with "file:line: ...".
Result<std::vector<LogicalLine>> SplitLines(std::string_view text, std::string_view file);

// True for a blank line or a comment.
bool IsBlankOrComment(std::string_view text);

}  // namespace kite::submit
