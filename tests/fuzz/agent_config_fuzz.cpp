// Fuzzes config.toml parsing: any text gives options or a clear error, never a crash.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "agent/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto o = kite::agent::ParseAgentOptions("/h", text, "config.toml");
  if (!o && o.error().message().rfind("config.toml", 0) != 0) std::abort();
  return 0;
}
