// libFuzzer target: the Slurm adapter's readers of command output (squeue, scontrol, sbatch) on
// arbitrary bytes. A parsed squeue row must survive being printed and parsed again, and every
// row must lead to a decision or to "unknown state" without crashing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gram/batch/slurm_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace kite::gram::batch::slurm;
  for (const auto& [id, row] : ParseSqueue(text)) {
    if (id != row.id || row.id.empty() || row.state.empty()) std::abort();
    auto again = ParseSqueue(row.id + "|" + row.state + "|" + row.reason + "\n");
    auto it = again.find(id);
    if (again.size() != 1 || it == again.end() || it->second.state != row.state ||
        it->second.reason != row.reason) {
      std::abort();
    }
    auto o = DecideOutcome(id, row, std::nullopt, false);
    if (o.has_value() != (ClassifyState(row.state) != Phase::kUnknown)) std::abort();
  }
  for (const auto& [key, value] : ParseScontrolJob(text)) {
    if (key.empty() || key.find(' ') != std::string::npos) std::abort();
  }
  if (auto id = ParseSbatchOutput(text)) {
    if (id->empty()) std::abort();
    for (char c : *id)
      if (c < '0' || c > '9') std::abort();
  }
  return 0;
}
