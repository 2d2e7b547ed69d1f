// The batch adapter registry: one line per adapter.
#include <array>

#include "gram/batch/batch_adapter.h"
#include "gram/batch/fork_adapter.h"
#include "gram/batch/sge_adapter.h"
#include "gram/batch/slurm_adapter.h"

namespace kite::gram::batch {
namespace {

using Factory = std::unique_ptr<BatchAdapter> (*)(const AdapterOptions&);
struct Entry {
  std::string_view name;
  Factory make;
};

constexpr std::array<Entry, 3> kAdapters = {{
    {"fork", MakeForkAdapter},
    {"slurm", MakeSlurmAdapter},
    {"sge", MakeSgeAdapter},
}};

}  // namespace

Result<std::unique_ptr<BatchAdapter>> MakeAdapter(std::string_view name,
                                                  const AdapterOptions& options) {
  for (const auto& e : kAdapters) {
    if (e.name == name) return e.make(options);
  }
  std::string known;
  for (const auto& e : kAdapters) known += (known.empty() ? "" : ", ") + std::string(e.name);
  return Fail(ErrorCode::kNotFound,
              "no batch adapter named '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<std::string> AdapterNames() {
  std::vector<std::string> out;
  for (const auto& e : kAdapters) out.emplace_back(e.name);
  return out;
}

}  // namespace kite::gram::batch
