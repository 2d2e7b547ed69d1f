// Fuzzes the pool protocol's frame reader: any bytes, fed in two pieces, give frames or a clear
// error, never a crash; every frame read survives encoding and reading again unchanged.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "pool/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kite::pool;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  FrameReader reader;
  size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  reader.Feed(bytes.substr(0, cut));
  for (int round = 0; round < 2; ++round) {
    for (;;) {
      auto f = reader.Next();
      if (!f) return 0;  // a malformed frame ends the connection
      if (!*f) break;
      std::string canonical = ToJson((*f)->msg);
      FrameReader again;
      again.Feed(EncodeFrame((*f)->msg, (*f)->body));
      auto back = again.Next();
      if (!back || !*back || ToJson((*back)->msg) != canonical || (*back)->body != (*f)->body)
        std::abort();
    }
    reader.Feed(bytes.substr(cut));
  }
  return 0;
}
