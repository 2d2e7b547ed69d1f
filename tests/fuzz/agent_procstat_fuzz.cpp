// libFuzzer target: the /proc/PID/stat reader the agent samples running jobs' use with. Any input
// is parsed or refused; a parsed line's pid is positive.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "agent/usage.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto st = kite::agent::ParseProcStat(text);
  if (st && st->pid <= 0) std::abort();
  return 0;
}
