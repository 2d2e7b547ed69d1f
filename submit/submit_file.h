// Parsing HTCondor submit description files into the job attributes of one cluster.
//
// The language is condor_submit's: `command = value` (commands case-insensitive; HTCondor's
// attribute names work as command names too, e.g. `OnExitRemove = false`), macros (any name that
// is not a command) with $(NAME) expansion and HTCondor's macro functions ($Fpnx(NAME), $INT(),
// $CHOICE(), ...), `+Attr = expr` / `MY.Attr = expr`, comments, '\' continuations,
// `include : FILE`, `include command : CMD` and queue statements (`queue`, `queue N`,
// `queue X in (...)`, `queue X,Y from FILE`, `queue X from CMD |`, `queue X matching GLOB`). Each
// queue statement adds procs built from the commands as they stand at that point. Every command
// HTCondor knows either sets the attributes condor_submit sets (see commands.h) or is refused
// with a message naming it; none is dropped. A malformed file fails as a whole with
// "file:line: message" (kInvalidInput) and yields no procs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "submit/command.h"

namespace kite::submit {

// Which files the parser looks at before accepting a file.
enum class FileChecks {
  kNone,    // none (fuzzing; syntax checks of files that name missing programs)
  kCondor,  // as condor_submit does by default: the executable exists (when it is transferred
            // and has no $$() in its name) and is not empty; initialdir exists
  kAll,     // kCondor, and the executable is executable, input files and transfer_input_files
            // are readable, output/error/log directories are writable (`skip_filechecks = true`
            // in the file turns these extra checks off, `= warn` makes them warnings)
};

struct SubmitOptions {
  // ClusterId of the new cluster and the value of $(Cluster) / $(ClusterId).
  long cluster_id = 0;
  // Owner attribute; empty means the login name of the effective user.
  std::string owner;
  // Directory relative paths start from, as condor_submit's current directory: the default Iwd,
  // the executable, `matching` globs. Empty means the process's current directory.
  std::string cwd;
  FileChecks file_checks = FileChecks::kAll;
  // A file that would queue more procs than this fails (a guard against `queue 1000000000`).
  size_t max_procs = 1000000;
  // `NAME = value` lines taken before the file (condor_submit FILE NAME=value): the file may
  // override them.
  std::vector<std::string> before_lines;
  // Submit lines taken just before each queue statement (condor_submit -append "cmd = value").
  std::vector<std::string> append_lines;
  // $(ARCH) / $(OPSYS) and the Arch / OpSys clauses of a vanilla job's Requirements; empty means
  // this machine's (uname: "X86_64", "LINUX").
  std::string arch, opsys;
  // FileSystemDomain of jobs that may use a shared file system; empty means this host's name.
  std::string filesystem_domain;
  // $(SUBMIT_TIME), $(Year), $(Month), $(Day); 0 means now.
  std::time_t submit_time = 0;
  // Source of $RANDOM_CHOICE() and $RANDOM_INTEGER(); empty means std::random_device.
  std::function<uint32_t()> random;
  // `include command` and `queue ... from CMD |` run commands; false refuses them (fuzzing).
  bool allow_commands = true;
  // How they run; empty means RunShellCommand.
  CommandRunner run_command;
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
  // commands after the last queue statement, ...) and for commands whose attribute Kite records
  // but does not act on in this job's universe.
  std::vector<std::string> warnings;
};

Result<ParsedCluster> ParseSubmitFile(const std::string& path, const SubmitOptions& options);
// `filename` names the text in messages, is $(SUBMIT_FILE), and anchors `include : FILE` and
// `queue ... from FILE` (relative to its directory, itself relative to options.cwd).
Result<ParsedCluster> ParseSubmitText(std::string_view text, const std::string& filename,
                                      const SubmitOptions& options);

// The full attribute list of proc `index`: common attributes followed by the proc's overrides.
std::vector<Attr> ProcAttrs(const ParsedCluster& cluster, size_t index);
// The expression text of attribute `name` (case-insensitive) in `attrs`, or nullptr.
const std::string* FindAttr(const std::vector<Attr>& attrs, std::string_view name);

}  // namespace kite::submit
