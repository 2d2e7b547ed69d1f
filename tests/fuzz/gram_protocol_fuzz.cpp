// libFuzzer target: every protocol message parser on arbitrary bytes. A parse that succeeds must
// survive a round trip through its JSON form.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gram/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace kite::gram;
  if (auto r = ParseSubmitRequest(text)) {
    auto again = ParseSubmitRequest(ToJson(*r));
    if (!again || !(again->job == r->job)) std::abort();
  }
  if (auto s = ParseJobStatus(text)) {
    auto again = ParseJobStatus(ToJson(*s));
    if (!again || !(*again == *s)) std::abort();
  }
  (void)ParseSimpleRequest(text);
  (void)ParseSignalRequest(text);
  (void)ParseDelegationStartRequest(text);
  (void)ParseDelegationCompleteRequest(text);
  (void)ParseDelegationReply(text);
  (void)ParseErrorReply(text);
  return 0;
}
