// Running a shell command whose standard output is submit text (`include command : CMD`) or a
// list of items (`queue X from CMD |`).
#pragma once

#include <functional>
#include <string>

#include "common/error.h"

namespace kite::submit {

// Runs `command` with /bin/sh -c in directory `dir` and returns what it wrote on standard output.
// Fails (kInvalidInput, with the first line of standard error) when it exits non-zero or is killed,
// (kTimeout) when it runs longer than `timeout_seconds` (it is then killed), and (kInvalidInput)
// when it writes more than `max_output` bytes.
Result<std::string> RunShellCommand(const std::string& command, const std::string& dir,
                                    int timeout_seconds = 60, size_t max_output = 16 << 20);

// The seam SubmitOptions uses so tests and the fuzzer can replace the shell.
using CommandRunner =
    std::function<Result<std::string>(const std::string& command, const std::string& dir)>;

}  // namespace kite::submit
