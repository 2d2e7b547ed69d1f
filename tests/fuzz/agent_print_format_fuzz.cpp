// Fuzzes condor_q's output-format strings: the -af modifiers and the -format printf strings.
// Any input is parsed into a form or refused with a message, and whatever parses prints against
// a job ad without crashing or overrunning (the C format handed to snprintf is built from checked
// pieces only).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "agent/print_format.h"
#include "classad/io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  // The first line is the format (or -af modifiers), the rest the expression.
  auto nl = text.find('\n');
  std::string format = text.substr(0, nl);
  std::string expr = nl == std::string::npos ? "ProcId" : text.substr(nl + 1);
  static const auto ad = *kite::classad::ParseOldAd(
      "ClusterId = 12\nProcId = 3\nOwner = \"ann\"\nRate = 2.5\nBig = 1e300\nFlag = true\n"
      "Neg = -7\nList = { 1, \"a\" }\n");
  using namespace kite::agent;
  if (auto item = ParsePrintfItem(format, expr)) {
    std::string out = FormatPrintf({*item}, ad);
    if (out.size() > 2 * text.size() + 20000) std::abort();  // width and precision are bounded
  } else if (item.error().message().empty()) {
    std::abort();
  }
  if (auto af = ParseAutoFormat(format, {expr, "Owner"})) {
    (void)FormatAutoLine(*af, ad, 12, 3, true);
  } else if (af.error().message().empty()) {
    std::abort();
  }
  return 0;
}
