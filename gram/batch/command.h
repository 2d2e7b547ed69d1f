// Running a batch system's command-line tools (sbatch, squeue, ...) and collecting what they
// print, with a deadline: the job manager's one thread waits for them, so none may hang it.
#pragma once

#include <chrono>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "gram/batch/batch_adapter.h"

namespace kite::gram::batch {

struct CommandResult {
  int exit_code = -1;  // -1 when killed by a signal (the deadline's SIGKILL included)
  bool timed_out = false;
  std::string out;  // standard output
  std::string err;  // standard error
};

// Runs argv[0] (an absolute path) with exactly `env`, standard input /dev/null, and collects its
// output until it exits or `timeout` passes (then it is killed and `timed_out` set). Fails only
// when it cannot be started.
Result<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env,
                                 std::chrono::milliseconds timeout);

// The first executable file named `name` in the colon-separated directory list `path`; empty
// when there is none.
std::string FindInPath(std::string_view name, std::string_view path);

// True when `text` contains any of `words` (a batch tool's messages, matched by fixed phrases).
bool MentionsAny(std::string_view text, std::initializer_list<std::string_view> words);

// The first line of a tool's output, trimmed; "no message" when there is none.
std::string FirstLine(const std::string& s);

// A word for /bin/sh: single-quoted, each ' written as '\''.
std::string ShellQuote(std::string_view word);

// The line of a batch script that runs `spec` under kite-exec: `exec 'KITE-EXEC' --dir ... --
// 'PROGRAM' 'ARG'...`, every word quoted, ending in a newline. kite-exec then records the job's
// exact end in control_dir/status whatever the batch system reports.
std::string ExecLine(const JobSpec& spec, const std::string& exec_path);

// Writes a small file whose loss in a machine crash costs nothing (it can be found again): no
// fsync. False when it could not be written.
bool WriteQuick(const std::string& path, const std::string& text);

}  // namespace kite::gram::batch
