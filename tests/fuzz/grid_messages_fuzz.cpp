// Fuzzes the agent <-> gridmanager messages: bytes parsed as each message; whatever parses must
// survive ToJson and parse again to the same message.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "grid/messages.h"

namespace {

template <class T, class P>
void RoundTrip(const T& message, P parse) {
  auto again = kite::grid::ParseJsonObject(kite::grid::ToJson(message));
  if (!again) std::abort();
  auto back = parse(*again);
  if (!back || !(*back == message)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kite::grid;
  auto o = ParseJsonObject(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!o) return 0;
  if (auto r = ParseUpdateRequest(*o)) {
    UpdateRequest good{.resources = r->resources};
    for (auto& p : r->updates) {
      if (p.update) good.updates.push_back(*p.update);
    }
    RoundTrip(good, [](const boost::json::object& j) -> kite::Result<UpdateRequest> {
      auto back = ParseUpdateRequest(j);
      if (!back) return kite::Fail(back.error());
      UpdateRequest out{.resources = back->resources};
      for (auto& p : back->updates) {
        if (!p.update) return kite::Fail(p.update.error());
        out.updates.push_back(*p.update);
      }
      return out;
    });
  }
  if (auto r = ParseUpdateResponse(*o)) RoundTrip(*r, ParseUpdateResponse);
  if (auto r = ParsePollRequest(*o)) RoundTrip(*r, ParsePollRequest);
  if (auto r = ParsePollResponse(*o)) RoundTrip(*r, ParsePollResponse);
  return 0;
}
