// Fuzz target: grid-mapfile parsing and lookup.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "credentials/gridmap.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto gm = kite::credentials::GridMap::Parse(text, "fuzz")) {
    (void)gm->DefaultAccount("/O=Grid/CN=x");
  }
  return 0;
}
