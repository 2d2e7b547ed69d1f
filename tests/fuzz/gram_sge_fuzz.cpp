// libFuzzer target: the Grid Engine adapter's readers of command output (qstat -xml, qacct -j,
// qsub -terse) on arbitrary bytes. Every parsed qstat row must have a number and a state and lead
// to a decision or to "unknown state"; every accounting record must lead to a decision.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gram/batch/sge_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace kite::gram::batch::sge;
  if (auto rows = ParseQstatXml(text)) {
    for (const auto& [id, row] : *rows) {
      if (id != row.id || row.id.empty() || row.state.empty()) std::abort();
      auto o = DecideOutcome(id, row, {});
      if (o.has_value() != (ClassifyState(row.state) != Phase::kUnknown)) std::abort();
    }
  }
  if (auto acct = ParseQacct(text)) {
    if (acct->id.empty() || acct->exit_status < 0 || acct->exit_status > 255) std::abort();
    auto o = DecideOutcome(acct->id, std::nullopt, {.acct = *acct});
    if (!o || (o->state != kite::gram::batch::BatchState::kEnded &&
               o->state != kite::gram::batch::BatchState::kLost)) {
      std::abort();
    }
    if (HardRuntime(acct->category) < 0) std::abort();
  }
  if (auto id = ParseQsubOutput(text)) {
    if (id->empty()) std::abort();
    for (char c : *id)
      if (c < '0' || c > '9') std::abort();
  }
  return 0;
}
