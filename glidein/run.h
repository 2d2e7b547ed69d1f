// One run of a job on a slot, from `activate` to `ack` (or `vacated`):
//
//   Receiving --go--> Running --wrapper ended--> Ended --(output, ended sent; ack)--> gone
//                      ^   |
//                      |   +--exit code = CheckpointExitCode--> Checkpointing
//                      +-----(checkpoint files, checkpointed sent; ack of the checkpoint)--+
//       |              |  ^ |
//       |     SUSPEND  v  | CONTINUE
//       |           Suspended
//       |              |   |
//       |   vacate / leaving / PREEMPT (after the retirement time) --> Stopping
//       |                                       --wrapper ended--> gone (vacated sent)
//       +-- vacate / bad input / connection lost --> gone (vacated / refused)
//
// The pure parts: how kite-exec's status becomes the protocol's exit and usage, and the frames
// that carry a finished run's output and its `ended`.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "classad/classad.h"
#include "common/exec_status.h"
#include "glidein/sandbox.h"
#include "pool/protocol.h"
#include "rsc/ckpt_image.h"
#include "rsc/ckpt_tree.h"

namespace kite::glidein {

// kSuspended: the owner's SUSPEND stopped the program (SIGSTOP) until CONTINUE or PREEMPT.
// kCheckpointing: the program exited with its CheckpointExitCode; its checkpoint files are sent
// and it starts again, in the same sandbox, once the agent has stored them.
enum class RunPhase { kReceiving, kRunning, kSuspended, kStopping, kCheckpointing, kEnded };
// Output or checkpoint files go to the agent in these phases.
inline bool Sending(RunPhase p) {
  return p == RunPhase::kEnded || p == RunPhase::kCheckpointing;
}
// The program's processes exist (Running, Suspended or Stopping): there is a wrapper to reap.
inline bool HasProcesses(RunPhase p) {
  return p == RunPhase::kRunning || p == RunPhase::kSuspended || p == RunPhase::kStopping;
}

struct Run {
  pool::RunRef ref;
  classad::ClassAd job;
  std::vector<pool::FileInfo> files;  // the input the agent announced
  // The job's Iwd when it runs in place on a file system the agent shares (activate's
  // in_place): nothing comes in, nothing but `ended` goes back; the sandbox is its scratch.
  std::string in_place;
  Sandbox box;
  RunPhase phase = RunPhase::kReceiving;
  pid_t pid = 0;            // kite-exec, leader of the job's process group (while HasProcesses)
  double launched_at = 0;   // wall clock of the launch: the run's start when kite-exec says none
  double first_launch = 0;  // the first launch (a checkpointed program is launched again)
  pool::RunUsage earlier;   // CPU of the launches before this one (checkpointed)
  int checkpoints = 0;      // taken during this run
  Snapshot before;          // the sandbox's top level at `go`, to tell the run's own files
  std::set<std::string> restored;  // input files that are a stored checkpoint's
  std::string stop_reason;
  bool ever_suspended = false;  // the agent is told its state after every reconnect
  double retire_until = 0;  // Running, preempted: vacated at this time (wall clock) unless it ends
  std::string preempt_reason;
  double stop_at = 0;   // Stopping: when SIGTERM was sent (wall clock)
  bool killed = false;  // Stopping: SIGKILL was sent
  // Transparent checkpoints (docs/checkpoints.md): when the checkpoint signal was sent (0: not
  // since the launch), and whether the run is vacated once that checkpoint is stored.
  double checkpoint_asked = 0;
  double checkpoint_clock = 0;  // CheckpointInterval counts from here (the launch, or a refusal)
  bool vacate_after_checkpoint = false;
  // A script's job (its executable starts with "#!"): checkpointed as the tree of its processes;
  // those asked for their images, and whether the tree's image is whole (the processes then
  // killed).
  bool tree = false;
  std::vector<rsc::ckpt::TreeProcess> tree_asked;
  bool tree_taken = false;
  double checkpoint_took = 0;  // seconds from asking to the image being whole (the last one)
  pool::RunExit exit;
  pool::RunUsage usage;
  // Ended: the output to send, and how far the sending is (reset on a new connection).
  std::vector<OutputFile> outputs;
  size_t next_output = 0;
  std::optional<FileReader> reader;
  bool ended_sent = false;
  // stream_output / stream_error: bytes of _kite_stdout and _kite_stderr already sent while the
  // program ran (the end sends from there on); cleared on a new connection, which may have lost
  // them.
  std::map<std::string, uint64_t> streamed;
  // want_remote_io: how the program reaches its remote paths ("fuse", "preload"), for `started`.
  std::string remote_io;
};

// A message of `type` about the run `r` (`started`, `vacated`, `refused`, `vacate`...).
pool::Message About(pool::MsgType type, const pool::RunRef& r, std::string reason = {});
// How a reaped process ended ("was killed by signal 9"), for a log line or a reason.
std::string DescribeWaitStatus(int wait_status);

pool::RunExit ExitOf(const ExecStatus& s);
pool::RunUsage UsageOf(const ExecStatus& s);

// Checks that every announced input file is in the sandbox with its size; an announced file
// that never came (an empty one need not) is made empty with its mode.
Status CheckInputs(Run& run);

// The checkpoint files of a program that exited with its CheckpointExitCode: the job's
// TransferCheckpoint, else what would go back as output, without stdout and stderr.
std::vector<OutputFile> SelectCheckpoint(const classad::ClassAd& job, const Snapshot& before,
                                         const Snapshot& after, std::vector<std::string>* skipped);
// Whether a program's end is a checkpoint: it exited with the job's CheckpointExitCode.
bool IsCheckpointExit(const classad::ClassAd& job, const pool::RunExit& exit);

// Transparent checkpoints (`checkpoint = transparent`, docs/checkpoints.md): the image the
// preloaded library writes at the top of the sandbox, and the code it exits with once written.
inline constexpr const char* kCheckpointImage = rsc::ckpt::kImageName;
inline constexpr int kTransparentCheckpointExit = 85;
bool IsTransparent(const classad::ClassAd& job);

// The next frame of an Ended run's output (an `output` piece, then `ended`), or of a
// Checkpointing run's checkpoint (`output` pieces with `checkpoint`, then `checkpointed`), or
// nullopt when the last was given already. A file that cannot be read (gone, a symbolic link) is
// skipped and described in `skipped`.
std::optional<std::pair<pool::Message, std::string>> NextOutputFrame(
    Run& run, std::vector<std::string>* skipped);
// Starts the output over (a new connection: the agent may have lost what was sent).
void RewindOutput(Run& run);

}  // namespace kite::glidein
