// Test-only fault injection: every fault point compiled into the daemons, by name. A point fires
// once when the file $KITE_FAULT_DIR/<name> exists (the file is removed as it fires); without
// KITE_FAULT_DIR nothing ever fires. The names are what tests arm (docs/protocol.md, "Faults").
#pragma once

#include <string>
#include <string_view>

namespace kite::gram {

enum class Fault {
  // The gatekeeper closes the client's connection after reading a request, forwarding nothing.
  kGatekeeperDropBeforeForward,  // gatekeeper-drop-before-forward
  // The job manager stores a submit (or commit), then closes without replying.
  kJobManagerDropAfterStoreSubmit,  // jobmanager-drop-after-store-submit
  kJobManagerDropAfterStoreCommit,  // jobmanager-drop-after-store-commit
  // The job manager exits at once after the batch system accepted a job, before its id is
  // written anywhere.
  kSlurmCrashAfterSbatch,  // slurm-crash-after-sbatch
  kSgeCrashAfterQsub,      // sge-crash-after-qsub
};

// The name a test arms `fault` by.
std::string_view FaultName(Fault fault);

// True once per arming of `fault`: only one process or thread wins a given arming.
bool FaultFires(Fault fault);

// "KITE_FAULT_DIR=..." for a child process that should see the same faults (the job managers a
// gatekeeper starts); empty when this process has no fault directory.
std::string FaultEnvironment();

}  // namespace kite::gram
