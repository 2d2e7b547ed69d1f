// libFuzzer target: the GASS server's parsers of request targets, Range and Content-Range, and
// the invariants between them (what parses must format back and stay inside the file).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gass/protocol.h"

using namespace kite::gass;

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void FuzzTarget(std::string_view s) {
  auto t = ParseTarget(s);
  if (!t) return;
  Check(IsValidJobId(t->job_id) && IsValidName(t->name));
  Check(MakeTarget(t->job_id, t->name) == s);  // targets are literal: nothing was decoded
  size_t start = 0;                            // no empty, "." or ".." segment
  while (start <= t->name.size()) {
    size_t slash = std::min(t->name.find('/', start), t->name.size());
    std::string_view seg = std::string_view(t->name).substr(start, slash - start);
    Check(!seg.empty() && seg != "." && seg != "..");
    start = slash + 1;
  }
  Check(s.find('%') == std::string_view::npos && s.find('?') == std::string_view::npos);
}

void FuzzRange(std::string_view s, uint64_t size) {
  auto r = ParseRange(s);
  if (!r) return;
  Check(r->first || r->last);
  auto b = ResolveRange(*r, size);
  if (!b) return;
  Check(b->length > 0 && b->first < size && b->length <= size - b->first);
}

void FuzzContentRange(std::string_view s) {
  auto cr = ParseContentRange(s);
  if (!cr) return;
  Check(cr->range || cr->complete_size);
  if (cr->range) Check(cr->range->length > 0);
  auto again = ParseContentRange(FormatContentRange(cr->range, cr->complete_size));
  Check(again && *again == *cr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view s(reinterpret_cast<const char*>(data), size);
  uint64_t file_size = size > 0 ? data[0] * 1000003ull : 0;
  FuzzTarget(s);
  FuzzRange(s, file_size);
  FuzzContentRange(s);
  return 0;
}
