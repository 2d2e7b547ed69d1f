// The queue statement: `queue [N] [VARS] [in|from|matching ...]` and its list of items.
// Internal to kite_submit.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "submit/command.h"
#include "submit/lines.h"

namespace kite::submit {

struct QueueSpec {
  long count = 1;                              // procs per item (`queue 3 X in (...)` -> 3)
  bool foreach = false;                        // an in/from/matching list was given
  std::vector<std::string> vars;               // lower-case loop variable names ({"item"})
  std::vector<std::vector<std::string>> rows;  // selected items, one value per variable
  std::vector<long> item_index;                // each row's index in the full list
};

struct QueueContext {
  const SourceMap* map = nullptr;  // names the lines in messages
  int line = 0;                    // the queue statement's line
  std::string list_dir;            // `from FILE` is read, `from CMD |` runs, relative to this (the
                                   // directory of the file holding the statement)
  std::string glob_dir;            // `matching PATTERN` is relative to this (the current directory)
  const CommandRunner* run_command = nullptr;  // nullptr: `from CMD |` is refused
};

// Parses `args`, the macro-expanded text after the keyword `queue`: [COUNT] [VARS] [in|from|
// matching ...], COUNT being an integer or a ClassAd expression that evaluates to one
// (`queue 15*1000`). A list that opens with '(' and does not close on the same line continues
// until a line starting with ')'; those lines are taken from `lines` starting at `*next`, and
// `*next` moves past them. Blank lines and '#' comments of a list, a `from FILE` or a
// `from CMD |` are not items. Errors carry "file:line: " of the queue statement.
Result<QueueSpec> ParseQueue(std::string_view args, const QueueContext& ctx,
                             const std::vector<LogicalLine>& lines, size_t* next);

// The column values of one item line: split on commas and/or blanks into `n` values, the last
// one taking the rest of the line; missing values are empty.
std::vector<std::string> SplitColumns(std::string_view line, size_t n);

}  // namespace kite::submit
