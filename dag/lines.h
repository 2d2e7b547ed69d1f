// The lines of a DAG file as its commands see them: comments and blank lines gone, continued
// lines joined, SUBMIT-DESCRIPTION blocks taken out with their bodies. INCLUDE is left to the
// caller (it names a file to read). Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "dag/dag.h"

namespace kite::dag {

struct Line {
  Where where;
  std::string text;  // the command line, trimmed
  // The lines of a block: a SUBMIT-DESCRIPTION (text is then "SUBMIT-DESCRIPTION NAME") or a
  // node's inline submit description (JOB NAME { ... }: text is then "JOB NAME {").
  std::string body;
  bool block = false;
};

// kInvalidInput with "file:line: what".
Error ErrorAt(const Where& where, std::string_view what);

// Splits `text` (the contents of `file`) into lines. Refuses a line longer than `max_line`
// bytes, a NUL byte, and a SUBMIT-DESCRIPTION block that never ends.
Result<std::vector<Line>> SplitLines(const std::string& file, std::string_view text,
                                     size_t max_line);

// Words of a command line, separated by blanks; `Rest` is what follows the words taken so far.
class Words {
 public:
  explicit Words(std::string_view text) : text_(text) {}
  // The next word, or "" at the end.
  std::string_view Next();
  std::string_view Peek() const;
  // What is left after the words taken, trimmed.
  std::string_view Rest() const;
  bool AtEnd() const { return Peek().empty(); }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

// A whole decimal int (an optional sign, digits), or nullopt.
std::optional<int> ParseInt(std::string_view s);

// VARS' `name="value" ...`: `\"` and `\\` are the quote and the backslash; any other backslash
// is kept as it is (DAGMan's rule, so `"a\.b"` stays a\.b).
Status ParseVars(std::string_view text, bool prepend, std::vector<Var>* vars);

}  // namespace kite::dag
