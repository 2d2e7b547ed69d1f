// libFuzzer target: arbitrary bytes as the answer to a remote call, decoded as kite-rsc-fuse and
// the preloaded library decode what the starter's socket brings (rsc/wire.h): a reply, the Stat it
// may carry, a folder's names. Must never crash, and what decodes must encode back to the same
// bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rsc/wire.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto r = kite::rsc::DecodeReply(in)) Check(kite::rsc::Encode(*r) == in);
  if (auto s = kite::rsc::DecodeStat(in)) Check(kite::rsc::Encode(*s) == in);
  if (auto names = kite::rsc::DecodeNames(in)) {
    std::string back;
    for (const auto& n : *names) {
      Check(!n.empty() && n.find('/') == std::string::npos && n.find('\0') == std::string::npos);
      back += n;
      back.push_back('\0');
    }
    Check(back == in);
  }
  return 0;
}
