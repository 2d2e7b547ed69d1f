// One run's side on the desktop (HTCondor's shadow; docs/pool.md): what goes to the startd for
// the run (its activate, its input in pieces, the stored checkpoint it restores from), what comes
// back (output files, the pieces of a checkpoint and their storage, remote system calls) and what
// the run adds to its job's ad.
//
// A shadow does not care which connection it rides on: it writes to a RunLink, and the pool
// (agent/pool.h) decides which link that is, which startd holds the run, its lease and its ack.
// Every change to a job goes through the queue, so the pool's commit covers it.
//
// Used only on the agent's thread.
#pragma once

#include <expected>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/checkpoint_store.h"
#include "agent/pool_authority.h"
#include "agent/queue.h"
#include "pool/protocol.h"
#include "rsc/shadow_io.h"

namespace kite::agent {

// Where a run's messages go: a startd's connection, as the pool holds it.
class RunLink {
 public:
  virtual ~RunLink() = default;
  virtual void Send(const pool::Message& m, std::string_view body) = 0;
  // Bytes written to the link and not yet gone: input is read from disk only while this is low.
  virtual size_t queued_bytes() const = 0;
};

// The reply to a remote system call that is not done (no such run, or a job without remote I/O).
std::string RefusedRemoteCall(const std::string& body);

// What every shadow of one agent shares.
struct ShadowShared {
  JobQueue& queue;
  std::string checkpoints;  // the folder of the jobs' checkpoints: spool/checkpoints
  // [pool] local_restore_site_checkpoints: an image a site made may be restored on the desktop.
  bool local_restore_site_checkpoints = false;
  // Files the runs' programs have open through remote I/O, all runs together, and the cap.
  std::shared_ptr<size_t> remote_open = std::make_shared<size_t>(0);
  size_t remote_open_max = 64;

  // The folder of one job's checkpoints (docs/pool.md, "Checkpoints").
  std::string CheckpointDir(JobKey key) const;
  // Whether the job's latest checkpoint may be restored on the desktop's own slots: not an image
  // a site made, unless local_restore_site_checkpoints says so.
  bool LocalRestoreAllowed(const classad::ClassAd& job) const;
};

// One input file of a run.
struct ShadowInput {
  std::string local;   // path on this machine
  std::string remote;  // path in the sandbox
  uint32_t mode = 0644;
  uint64_t size = 0, sent = 0;
  bool checkpoint = false;  // a file of the job's stored checkpoint (read without following links)
};

// The job cannot go as it is: it is held with this.
struct ShadowHold {
  std::string reason;
  int code = 0;
};

// Where a run goes: what its shadow needs to know of the slot and its startd.
struct RunPlace {
  std::string slot;                           // slotN@NAME
  const classad::ClassAd* slot_ad = nullptr;  // the slot's ad, for $$() references
  PoolDoor door = PoolDoor::kLocal;           // the startd's door: the desktop's own, or a site
  std::string in_place;  // the job's Iwd when the run runs there (no sandbox), else ""
};

class Shadow {
 public:
  Shadow(ShadowShared& shared, std::string run, JobKey job);
  ~Shadow();
  Shadow(const Shadow&) = delete;
  Shadow& operator=(const Shadow&) = delete;

  const std::string& run() const { return run_; }
  JobKey job() const { return job_; }

  // ---- input ----
  // The run's activate, and its input files (the executable, stdin, transfer_input_files and the
  // stored checkpoint, whose digest the files must have as they are sent) ready to go; or why the
  // job cannot go as it is.
  std::expected<pool::Message, ShadowHold> Activate(Job& j, const RunPlace& place);
  enum class Pumped {
    kMore,     // the link is full: more once it drains
    kDone,     // every file sent and `go` said: the program may start
    kStopped,  // nothing more goes (the job is held with the reason)
  };
  // Sends input while the link holds less than `high` bytes, then `go` once all went.
  Pumped Pump(RunLink& link, size_t high);

  // ---- what comes back ----
  // A piece of an output file (standard output and error under their sandbox names): written
  // under the job's Iwd, as transfer_output_remaps says; a streamed piece only of a standard
  // stream the job streams (stream_output, stream_error). The first failure is kept (output_error)
  // and nothing more is written.
  void Output(const Job& j, const pool::Message& m, const std::string& body);
  const std::string& output_error() const { return output_error_; }
  // A piece of a checkpoint: kept in the job's incoming folder. "" when taken, else why the
  // startd's piece is refused (a file the job's checkpoint may not hold).
  std::string CheckpointPiece(const Job& j, const pool::Message& m, const std::string& body);
  // The whole checkpoint has arrived: stored as the job's next one (synced, renamed) and recorded
  // in its ad, or its failure said. Returns the number of the committed checkpoint the startd is
  // to hear about once the queue commits (the previous one when this one was not stored).
  // `startd`, `site`: who made it (CheckpointStartd, CheckpointFromSite).
  int StoreCheckpoint(Job& j, const pool::Message& m, const std::string& startd, bool site);
  // After the commit: the job's checkpoints other than `number` go.
  static void KeepOnlyCheckpoint(const ShadowShared& shared, JobKey job, int number);
  // A checkpoint not wanted (the job was removed meanwhile, or takes none): its pieces go.
  void DropIncomingCheckpoint();
  // What the run's job may have as its checkpoint (from the job and its input files).
  const CheckpointPolicy& Policy(const Job& j);

  // ---- remote I/O (docs/remote-io.md) ----
  // One remote system call of the run's program (`j` null: no such run of a job now), done as the
  // user inside the job's paths; returns the reply. Refusals are logged; bytes written through
  // calls remote I/O cannot follow hold the job.
  std::string RemoteCall(Job* j, const std::string& body);
  // The remote I/O the run did since the last call, into the job's ad: this run's bytes (for its
  // terminated event) and the job's totals.
  void RecordIo(Job& j);

 private:
  // Adds the files of the job's committed checkpoint to the inputs; "" when they may go (or the
  // job is to start over), otherwise why it cannot be restored.
  std::string RestoreCheckpoint(Job& j, PoolDoor door);
  std::string Incoming() const;

  ShadowShared& shared_;
  std::string run_;
  JobKey job_;
  std::vector<ShadowInput> inputs_;
  size_t next_input_ = 0;
  int fd_ = -1;  // the input file being sent
  std::string output_error_;
  std::string checkpoint_error_;  // why the checkpoint being received cannot be stored
  std::optional<CheckpointPolicy> policy_;
  std::map<std::string, StreamHash> receiving_;  // the checkpoint arriving: each file's hash
  // The stored checkpoint going back with the input: the digest it must have, and the sums of
  // its files as they are sent (each file's hash in `sending_` while it goes).
  std::string expected_digest_;
  std::vector<CheckpointFileSum> restored_;
  StreamHash sending_;
  std::unique_ptr<rsc::ShadowIo> io_;
  rsc::ShadowIo::Counts io_recorded_;
};

}  // namespace kite::agent
