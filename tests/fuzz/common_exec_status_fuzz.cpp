// Fuzzes the reading of kite-exec's lock file and status record: any bytes give an owner, a pid
// and a status record or none, never a crash; a status record that parses, written again,
// reads back the same.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/exec_status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto lock = kite::ParseExecLock(text);
  if (lock.pid < 0) std::abort();
  for (const std::string& status : {std::string(text), lock.status.value_or("")}) {
    auto st = kite::ParseExecStatus(status);
    if (!st) continue;
    auto again = kite::ParseExecLock("owner x\n" + kite::FormatExecStatusRecord(*st));
    if (!again.status) std::abort();
    auto back = kite::ParseExecStatus(*again.status);
    if (!back || kite::FormatExecStatus(*back) != kite::FormatExecStatus(*st)) std::abort();
  }
  return 0;
}
