// kite-starter's engine: the runs of one slot, one at a time (docs/startd.md, "The starter"). The
// startd starts a starter for a slot with its first run and talks to it over a socket pair in the
// pool protocol's frames: the agent's messages about the run (`activate`, `input`, `go`, `vacate`,
// `ack`), passed on as they came, and the startd's own (`suspend`, `continue`, `kill`, `rewind`).
// The starter makes the sandbox, writes the input, runs the program under kite-exec, and sends what
// the agent must hear
// (`started`, `output`, `ended`, `vacated`, ...) to the startd, which passes it on.
//
// A starter serves one slot: when a run is over (acknowledged, vacated or refused) its sandbox is
// removed and the starter waits for the slot's next `activate`. It exits when the startd is
// gone, killing a job that is still going first: a job never outlives the startd that placed it.
//
// Threads: everything runs on the io_context's thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/exec_launch.h"
#include "glidein/rsc_relay.h"
#include "glidein/run.h"
#include "pool/link.h"

namespace kite::glidein {

// Exit codes of a starter.
inline constexpr int kStarterDone = 0;      // the startd went away with no run going on
inline constexpr int kStarterOrphaned = 4;  // the startd went away during a run; it was ended

struct StarterOptions {
  std::string work;       // the startd's --work: the sandbox is made in it
  int cpus = 1;           // the slot's cpus (OMP_NUM_THREADS)
  double kill_grace = 5;  // seconds from SIGTERM to SIGKILL when vacating
};

class Starter {
 public:
  struct World {
    std::string exec_path;                  // kite-exec
    std::vector<std::string> env;           // the base environment of the job
    std::function<void(int code)> on_exit;  // the starter is done; io may stop
  };
  Starter(boost::asio::io_context& io, StarterOptions options, World world,
          std::unique_ptr<pool::ByteStream> startd);
  ~Starter();

  void Start();
  // SIGTERM or SIGINT: a batch system stopping the glide-in signals every process of its job
  // (Slurm's `scancel --full`), the job's own included. A run going on is vacated now, so a job
  // killed by that same signal is not taken for one that ended.
  void OnStopSignal(int sig);

 private:
  void OnFrame(pool::Frame f);
  void OnClosed(const Error& e);
  void Send(const pool::Message& m, std::string_view body = {});

  void OnActivate(const pool::Message& m);
  void OnInput(const pool::Message& m, const std::string& body);
  void OnGo();
  void OnAck(const pool::Message& m);
  void OnRewind();
  void Launch(bool again);
  void Stop(const std::string& reason);
  void Suspend(const std::string& reason);
  void Resume();
  void Kill();
  void TellSuspension();
  // Transparent checkpoints (docs/checkpoints.md): the checkpoint signal to the program, and
  // what the starter does when none comes of it.
  void AskCheckpoint(const std::string& why);
  void CheckpointNotTaken(const std::string& why);
  // A script's job: every process of it takes its image, the starter puts them together.
  void AskTreeCheckpoint();
  void PollTreeCheckpoint();

  void OnChildSignal();
  void Reap(int wait_status);
  void Checkpoint();
  void Finished();
  void Pump();
  void Tick();
  // stream_output / stream_error: what the program wrote to its standard output or error since
  // the last look goes to the agent now, at its offset.
  void StreamOutput();
  // The run is over: `last` (vacated, refused, or nothing after an ack) is sent, the sandbox
  // removed, and the starter waits for the next run.
  void Finish(std::optional<pool::Message> last);
  void Exit(int code);

  boost::asio::io_context& io_;
  StarterOptions o_;
  World world_;
  std::shared_ptr<pool::Link> link_;
  std::optional<Run> run_;  // from `activate`
  // The run's remote system calls (want_remote_io): from its first launch to its end.
  std::unique_ptr<RscRelay> rsc_;
  // Sets up remote I/O for the run's program: the relay's socket and the library's environment.
  // False (with the reason) when the program cannot have it.
  bool StartRemoteIo(ExecLaunch& launch, std::string* why);
  // Sets up a program with `checkpoint = transparent`: the library preloaded, its image's place,
  // no address-space randomisation. False (with the reason) when the program cannot have it.
  bool StartTransparent(ExecLaunch& launch, std::string* why);
  std::string ProgramDir() const;
  // Remote I/O through the kernel for this run: "" when it can be, else why not.
  std::string FuseUnusable(const std::vector<std::string>& roots) const;
  std::string PreloadLibrary(const ExecLaunch& launch, const std::string& feature,
                             const std::string& needs, std::string* why) const;
  bool exited_ = false;
  boost::asio::steady_timer tick_;
  boost::asio::signal_set children_;
};

}  // namespace kite::glidein
