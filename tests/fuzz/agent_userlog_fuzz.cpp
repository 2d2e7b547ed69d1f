// Fuzzes the user-log reader behind `kite wait LOGFILE`: any text is read into events or refused
// with a message naming a line; what is consumed ends on a line boundary inside the text; reading
// the text in two pieces, resuming at what the first read consumed, gives the same events as
// reading it whole; and the wait bookkeeping takes any events.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "agent/userlog_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace kite::agent;
  auto whole = ParseUserLog(text);
  if (!whole) {
    if (whole.error().message().rfind("line ", 0) != 0) std::abort();
    return 0;
  }
  if (whole->consumed > size) std::abort();
  if (whole->consumed > 0 && text[whole->consumed - 1] != '\n') std::abort();
  // Split where the first byte says and read on from the first piece's consumed bytes.
  size_t cut = size ? data[0] % (size + 1) : 0;
  auto first = ParseUserLog(text.substr(0, cut));
  if (!first) std::abort();  // a prefix of a readable log is readable
  auto rest = ParseUserLog(text.substr(first->consumed), first->lines + 1);
  if (!rest) std::abort();
  if (first->events.size() + rest->events.size() != whole->events.size()) {
    // A header cut by `cut` ends nothing early, so only equal counts are right.
    std::abort();
  }
  if (first->consumed + rest->consumed != whole->consumed) std::abort();
  LogWait wait({-1, -1, 0});
  for (auto& e : whole->events) {
    if (e.text.empty() || e.code < 0 || e.code > 999) std::abort();
    wait.Add(e);
  }
  (void)wait.Done();
  (void)wait.Pending();
  return 0;
}
