// libFuzzer target: whatever a submit may store must load back identically. The input is lines
// "NAME<TAB>EXPRESSION"; those the queue's submit checks accept (a valid attribute name, an
// expression that parses) go into an ad, which is written in the queue's stored form and read
// back. Traps when a stored line does not parse or the ad read back differs.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/queue.h"
#include "classad/io.h"
#include "classad/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  kite::classad::ClassAd ad;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    size_t tab = line.find('\t');
    if (tab == std::string_view::npos) continue;
    std::string_view name = line.substr(0, tab);
    if (!kite::classad::CheckAttributeName(name)) continue;
    auto expr = kite::classad::ParseExpr(line.substr(tab + 1));
    if (!expr) continue;
    ad.Insert(name, *expr);
  }
  std::string stored = kite::agent::StoredAdText(ad);
  std::vector<std::string> bad;
  auto loaded = kite::classad::ParseOldAdSkippingErrors(stored, &bad);
  if (!bad.empty()) __builtin_trap();
  if (kite::agent::StoredAdText(loaded) != stored) __builtin_trap();
  return 0;
}
