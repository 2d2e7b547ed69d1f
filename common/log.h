// Logging setup. Libraries log through spdlog's default logger; daemons call InitLogging once.
#pragma once

#include <string>

namespace kite {

// Logs to `file` (empty: stderr) at `level` ("debug", "info", "warn", "error").
void InitLogging(const std::string& name, const std::string& file, const std::string& level);

}  // namespace kite
