// Parsing HTCondor submit description files into the job attributes of one cluster.
//
// The language is condor_submit's: `command = value` (commands case-insensitive), macros (any
// name that is not a command) with $(NAME) expansion, `+Attr = expr` / `MY.Attr = expr`, comments,
// '\' continuations and queue statements (`queue`, `queue N`, `queue X in (...)`,
// `queue X,Y from FILE`, `queue X matching GLOB`). Each queue statement adds procs built from the
// commands as they stand at that point. A malformed file fails as a whole with
// "file:line: message" (kInvalidInput) and yields no procs.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace kite::submit {

struct SubmitOptions {
  // ClusterId of the new cluster and the value of $(Cluster) / $(ClusterId).
  long cluster_id = 0;
  // Owner attribute; empty means the login name of the effective user.
  std::string owner;
  // Directory relative paths start from, as condor_submit's current directory: the default Iwd,
  // the executable, `matching` globs. Empty means the process's current directory.
  std::string cwd;
  // Check the file system at submit time: the executable exists and is executable, input files
  // are readable, initialdir is a directory, output/error/log directories are writable. Fuzzing
  // turns this off.
  bool check_files = true;
  // A file that would queue more procs than this fails (a guard against `queue 1000000000`).
  size_t max_procs = 1000000;
};

// One job attribute: its HTCondor name and its value as ClassAd expression text (strings quoted
// and escaped, numbers and booleans literal, expression commands as written).
struct Attr {
  std::string name;
  std::string expr;
  bool operator==(const Attr&) const = default;
};

struct ParsedCluster {
  // Attributes with the same value in every proc (ClusterId, Cmd, Owner, ...).
  std::vector<Attr> common;
  // One entry per proc, in ProcId order: the attributes that differ between procs, ProcId first.
  // A proc's full ad is `common` plus its overrides (see ProcAttrs).
  std::vector<std::vector<Attr>> procs;
  // "file:line: warning: ..." for things condor_submit would warn about (unused macros,
  // commands after the last queue statement, ...).
  std::vector<std::string> warnings;
};

Result<ParsedCluster> ParseSubmitFile(const std::string& path, const SubmitOptions& options);
// `filename` names the text in messages and anchors `queue ... from FILE` (relative to its
// directory, itself relative to options.cwd).
Result<ParsedCluster> ParseSubmitText(std::string_view text, const std::string& filename,
                                      const SubmitOptions& options);

// The full attribute list of proc `index`: common attributes followed by the proc's overrides.
std::vector<Attr> ProcAttrs(const ParsedCluster& cluster, size_t index);
// The expression text of attribute `name` (case-insensitive) in `attrs`, or nullptr.
const std::string* FindAttr(const std::vector<Attr>& attrs, std::string_view name);

}  // namespace kite::submit
