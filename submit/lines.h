// Splitting submit-file text into logical lines (continuations joined), and the map from a line
// number to the file (or included file or command) and line it came from. Internal to kite_submit.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace kite::submit {

// Every text the parser reads (the submit file, each `include : FILE`, each `include command`)
// is a source. Line N of source S is numbered S * kLinesPerSource + N, so one int names a line
// anywhere and "file:line" is recovered only when a message is written.
class SourceMap {
 public:
  static constexpr int kLinesPerSource = 1 << 21;  // a source holds at most 2,097,151 lines
  static constexpr int kMaxSources = 1000;         // the submit file and 999 includes

  // `name` is how messages call the submit file; `dir` anchors its relative paths.
  SourceMap(std::string name, std::string dir);

  // Registers an included source; returns the number its line 0 has (its lines follow).
  Result<int> Add(std::string name, std::string dir);

  // "name:line" for a line number of any source.
  std::string Where(int line) const;
  // The directory that paths written in the source holding `line` are relative to.
  const std::string& DirOf(int line) const;
  const std::string& main_name() const { return sources_.front().name; }

 private:
  struct Source {
    std::string name;
    std::string dir;
  };
  std::vector<Source> sources_;
};

// "file:line: message" as a kInvalidInput error.
Error LineError(const SourceMap& map, int line, std::string_view message);

struct LogicalLine {
  std::string text;  // physical lines joined where one ended in '\'; no trailing '\r'
  int line = 0;      // number of the first physical line (see SourceMap)
  int depth = 0;     // include nesting: 0 for the submit file itself
};

// A line whose last character is '\' continues on the next one (the '\' is dropped). A comment
// line (first non-blank character '#') never continues, so a commented-out continued command
// does not swallow the line after it. NUL bytes and sources longer than kLinesPerSource lines
// are refused with "file:line: ...". `base` is the source's number for its line 0.
Result<std::vector<LogicalLine>> SplitLines(std::string_view text, const SourceMap& map, int base,
                                            int depth = 0);

// True for a blank line or a comment.
bool IsBlankOrComment(std::string_view text);

}  // namespace kite::submit
