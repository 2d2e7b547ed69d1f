// The `sge` batch adapter: hands each job to Grid Engine (Son of Grid Engine 8.1, and kin) with
// `qsub -terse` of a script that runs it under kite-exec, follows every job with one
// `qstat -xml` per poll, learns how a job Grid Engine ended itself from `qacct -j`, and cancels
// with `qdel`.
//
// Batch id: "<control_dir>#<job number>". Files in the control directory: sge.sh (the script,
// written before qsub runs), sge.id (the job number, written after), sge.out (Grid Engine's own
// output of the script), and kite-exec's lock and status. A job's end comes from kite-exec's
// status once qstat no longer lists it, so exit codes are exact; only a job that left no status
// (killed by Grid Engine: h_rt, qdel) is looked up in the accounting file with `qacct -j ID`.
//
// The commands (qsub, qstat, qacct, qdel, qconf) are looked up in the job manager's PATH; its
// SGE_ROOT, SGE_CELL, SGE_QMASTER_PORT and SGE_EXECD_PORT are passed to them and to the jobs.
// KITE_SGE_PE names the parallel environment for jobs asking for more than one CPU (default:
// `smp` when the cell has one). Requires that the execution hosts see the job manager's state
// directory and kite-exec at the same paths (one host, or a shared file system).
#pragma once

#include <memory>

#include "gram/batch/batch_adapter.h"

namespace kite::gram::batch {

std::unique_ptr<BatchAdapter> MakeSgeAdapter(const AdapterOptions& options);

}  // namespace kite::gram::batch
