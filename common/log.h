// Logging setup. Libraries log through spdlog's default logger; daemons call InitLogging once.
#pragma once

#include <string>

namespace kite {

// Logs to `file` (empty: stderr) at `level` ("debug", "info", "warn", "error").
void InitLogging(const std::string& name, const std::string& file, const std::string& level);

// Ends a daemon whose work is done: the logs are flushed and the process exits with `code` at
// once, with no destructor run. Signal handlers stay installed to the very end, so a SIGTERM that
// comes late (a batch system signals every process of a job, and wrappers forward their own
// copy) is caught rather than turning the exit into a death by signal, as it could once a
// signal_set's destructor restored the default action (blocking does not help: any thread, a
// resolver's say, may take the signal).
[[noreturn]] void FlushLogsAndExit(int code);

}  // namespace kite
