// Logging setup.
#include "common/log.h"

#include <unistd.h>

#include <cstdio>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace kite {

void InitLogging(const std::string& name, const std::string& file, const std::string& level) {
  std::shared_ptr<spdlog::logger> logger;
  if (file.empty()) {
    logger = spdlog::stderr_logger_mt(name);
  } else {
    logger = spdlog::basic_logger_mt(name, file);
  }
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %n[%P] %l: %v");
  spdlog::set_default_logger(logger);
}

void FlushLogsAndExit(int code) {
  spdlog::shutdown();
  std::fflush(nullptr);
  ::_exit(code);
}

}  // namespace kite
