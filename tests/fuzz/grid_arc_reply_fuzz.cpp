// An ARC CE's replies as the ARC link reads them: bulk job replies, job lists, diagnostics and
// delegation locations, session folder listings. None may crash, hang or read out of bounds,
// whatever the CE sends.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "grid/arc_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace kite::grid::arc;
  if (auto jobs = ParseJobsReply(text)) {
    for (const auto& j : *jobs) {
      (void)MapState(j.state);
      (void)NotStarted(j.state);
      (void)ValidArcId(j.id);
    }
  }
  (void)ParseJobList(text);
  (void)ParseExitCode(text);
  (void)DelegationIdOf(text);
  if (auto listing = ParseSessionListing(text)) {
    // What a listing names is one plain segment: nothing that climbs out of its folder.
    for (const auto* names : {&listing->files, &listing->folders}) {
      for (const auto& n : *names) {
        if (n.empty() || n == "." || n == ".." || n.find('/') != std::string::npos)
          __builtin_trap();
      }
    }
  }
  return 0;
}
