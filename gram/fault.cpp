// Fault points read from $KITE_FAULT_DIR (tests arm a fault by creating a file there).
#include "gram/fault.h"

#include <unistd.h>

#include <array>
#include <cstdlib>

namespace kite::gram {
namespace {

struct FaultEntry {
  Fault fault;
  std::string_view name;
};
constexpr std::array<FaultEntry, 5> kFaults = {{
    {Fault::kGatekeeperDropBeforeForward, "gatekeeper-drop-before-forward"},
    {Fault::kJobManagerDropAfterStoreSubmit, "jobmanager-drop-after-store-submit"},
    {Fault::kJobManagerDropAfterStoreCommit, "jobmanager-drop-after-store-commit"},
    {Fault::kSlurmCrashAfterSbatch, "slurm-crash-after-sbatch"},
    {Fault::kSgeCrashAfterQsub, "sge-crash-after-qsub"},
}};

// The fault directory, read once: "" when faults are off.
const std::string& FaultDir() {
  static const std::string dir = [] {
    const char* d = std::getenv("KITE_FAULT_DIR");
    return std::string(d ? d : "");
  }();
  return dir;
}

}  // namespace

std::string_view FaultName(Fault fault) {
  for (const auto& e : kFaults)
    if (e.fault == fault) return e.name;
  return "unknown-fault";
}

bool FaultFires(Fault fault) {
  if (FaultDir().empty()) return false;
  std::string path = FaultDir() + "/" + std::string(FaultName(fault));
  return ::unlink(path.c_str()) == 0;  // only one process or thread wins a given arming
}

std::string FaultEnvironment() {
  const char* dir = std::getenv("KITE_FAULT_DIR");
  return dir ? std::string("KITE_FAULT_DIR=") + dir : "";
}

}  // namespace kite::gram
