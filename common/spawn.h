// Starting processes with posix_spawn (vfork semantics: cheap from a large daemon, see
// physical-limits.md), in a new session so a whole job tree can be signalled at once.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/error.h"

namespace kite {

struct SpawnOptions {
  std::string program;            // absolute path
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // "NAME=value"; the whole environment of the child
  bool new_session = true;        // setsid(): the child leads its own process group
  std::string stdin_path = "/dev/null";
  std::string stdout_path;        // empty: inherit; otherwise opened for appending (created 0644)
  std::string stderr_path;        // empty: inherit (or stdout's, with stderr_to_stdout)
  bool stderr_to_stdout = false;  // stderr is stdout's file (stderr_path is then unused)
  std::string cwd;                // empty: the parent's
  bool search_path = false;       // a `program` without '/' is looked for in $PATH
};

Result<pid_t> Spawn(const SpawnOptions& options);

// The current process's environment as "NAME=value" strings.
std::vector<std::string> CurrentEnvironment();

}  // namespace kite
