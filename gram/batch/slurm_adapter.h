// The `slurm` batch adapter: hands each job to Slurm with `sbatch --parsable` as a script that runs
// it under kite-exec, follows every job with one `squeue` per poll, cancels with `scancel`.
//
// Batch id: "<control_dir>#<Slurm job id>". Files in the control directory: slurm.sh (the script),
// slurm.intent (written before sbatch runs), slurm.id (Slurm's id, written after), slurm.out
// (Slurm's own output of the script), and kite-exec's lock and status. The job's end comes from
// kite-exec's status once Slurm says the job is over, so exit codes are exact without sacct;
// Slurm's state says whether it stopped the job itself (TIMEOUT: limit exceeded; CANCELLED,
// NODE_FAIL, PREEMPTED: lost).
//
// The commands (sbatch, squeue, scancel, scontrol) are looked up in the job manager's PATH, and
// its SLURM_CONF is passed to them and to the jobs. Requires that the compute nodes see the job
// manager's state directory and kite-exec at the same paths (one node, or a shared file system).
#pragma once

#include <memory>

#include "gram/batch/batch_adapter.h"

namespace kite::gram::batch {

std::unique_ptr<BatchAdapter> MakeSlurmAdapter(const AdapterOptions& options);

}  // namespace kite::gram::batch
