// The lines kite-gt5-helper sends the GRAM5 link, whose fields carry what a gatekeeper and its job
// managers said (job contacts, states, exit codes, failure messages): split, read as a status and
// mapped. None may crash, hang or read out of bounds, and any fields survive a line unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "grid/gt5_format.h"
#include "grid/gt5_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace kite::grid::gt5;
  auto fields = SplitLine(text);
  if (SplitLine(JoinLine(fields)) != fields) std::abort();
  if (fields.size() > 2) {
    std::vector<std::string> rest(fields.begin() + 2, fields.end());
    if (auto s = ParseStatus(rest)) {
      (void)MapState(s->state);
      (void)MapFailure(s->error);
      (void)ErrorOf(s->error, rest.size() > 3 ? rest[3] : "");
    }
  }
  (void)kite::grid::RslQuote(text);
  return 0;
}
