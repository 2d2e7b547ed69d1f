// kite-startd's engine: its slots, the runs on them and the one connection to the agent
// (docs/pool.md). It dials the agent, says hello with its slot ads, and then does what the agent
// asks: a run is given to a kite-starter of its own (glidein/starter.h), to which the startd
// passes the agent's messages about it and from which it passes on what the agent must hear. The
// startd keeps the slots, the owner's policy and the connection: it redials with back-off when
// the connection drops (runs go on meanwhile) and leaves — vacating what runs, saying bye — when
// idle too long, at the end of its lifetime, or when told to stop.
//
// Threads: everything runs on the io_context's thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "glidein/options.h"
#include "glidein/run.h"
#include "glidein/slot_ad.h"
#include "glidein/stream.h"
#include "pool/link.h"

namespace kite::glidein {

// Exit codes of a startd.
inline constexpr int kExitLeft = 0;     // it left as asked (idle, lifetime, SIGTERM)
inline constexpr int kExitRefused = 2;  // the agent refused it

class Startd {
 public:
  struct World {
    std::string starter_path;               // kite-starter
    std::unique_ptr<Dialer> dialer;         // how to reach the agent
    std::function<void(int code)> on_exit;  // the startd is done; io may stop
  };
  Startd(boost::asio::io_context& io, StartdOptions options, World world);
  ~Startd();

  // Fills the defaults (name, memory, disk), checks START, and starts dialling.
  Status Start();
  // Stops taking work, vacates the runs, says bye and exits (code 0).
  void Leave(const std::string& why);

 private:
  struct Slot {
    int id = 1;
    std::string name;
    std::string run;  // the run on it ("" = free)
    // Its State and Activity as last advertised, and since when (Unix seconds).
    SlotState state = SlotState::kUnclaimed;
    SlotActivity activity = SlotActivity::kIdle;
    int64_t state_since = 0, activity_since = 0;
    // Its kite-starter (started with its first run, kept for the runs after it) and the socket
    // to it; 0 and null when it has none.
    pid_t starter = 0;
    std::shared_ptr<pool::Link> starter_link;
  };

  // A run, given to its slot's starter.
  struct Placed {
    pool::RunRef ref;
    classad::ClassAd job;  // for the owner's policy
    // What the starter last said (or the startd last asked of it): Receiving, Running,
    // Suspended, Stopping, Checkpointing or Ended.
    RunPhase phase = RunPhase::kReceiving;
    pid_t group = 0;            // the job's process group, once started
    bool rewinding = false;     // frames until the starter's `rewound` are stale
    bool started_sent = false;  // a relaunch after a checkpoint is no news to the agent
    std::string remote_io;      // started: how its remote I/O goes (told to the agent with it)
    bool ended_sent = false;    // its `ended` reached the agent's connection
    double retire_until = 0;    // preempted: vacated at this time (wall clock) unless it ends
    std::string preempt_reason;
    bool kill_sent = false;
    double last_periodic = 0;  // PERIODIC_CHECKPOINT: when one was last asked (or the run started)
  };

  // Connection.
  void Dial();
  void OnDialed(Result<std::unique_ptr<ByteStream>> stream);
  void OnFrame(pool::Frame f);
  void OnClosed(const Error& e);
  void Redial();
  void Send(const pool::Message& m, std::string_view body = {});
  bool Connected() const { return link_ && welcomed_; }

  // Messages from the agent.
  void OnWelcome();
  void OnActivate(const pool::Message& m);
  void OnToStarter(const pool::Frame& f);  // input, go: passed on as they came
  void OnVacate(const pool::Message& m);
  void OnAck(const pool::Message& m);
  Placed* FindRun(const pool::Message& m);  // answers `vacated` for a run it does not know
  Status CanActivate(const pool::Message& m, Slot** slot);

  // Runs.
  void Refuse(const pool::Message& m, const std::string& reason);
  Status SpawnStarter(Slot& slot);
  void ToStarter(const Placed& p, const pool::Message& m, std::string_view body = {});
  // `started` for a run, with how its remote I/O goes.
  void SendStarted(const Placed& p);
  void OnStarterFrame(const std::string& slot, pool::Frame f);
  void OnStarterGone(const std::string& slot, const std::string& why);
  void Relay(Placed& p, const pool::Frame& f);
  void Stop(Placed& p, const std::string& reason);
  // The owner's policy (SUSPEND, CONTINUE, PREEMPT, KILL) for each run with processes.
  void ApplyPolicy();
  void OnChildSignal();
  void ReapStarters();
  // The run is over for the startd (its end acknowledged, or vacated, refused or lost): the slot
  // is free at once (its starter finishes the run's cleaning on its own and waits for the next).
  void Detach(const std::string& run);
  void Pump();  // lets the starters' frames through again once the agent's queue is short

  // Slots and time.
  Slot* FindSlot(const std::string& name);
  SlotFacts Facts(const Slot& s) const;
  // Brings the slot's State and Activity (and their start times) up to date.
  void Note(Slot& s);
  std::string SlotAdText(const Slot& s) const;
  void SendSlot(Slot& s);
  void Tick();
  void MaybeFinishLeaving();
  void Exit(int code);

  boost::asio::io_context& io_;
  StartdOptions o_;
  World world_;
  std::string machine_, arch_;
  std::vector<Slot> slots_;
  std::map<std::string, Placed> runs_;  // by run id
  std::vector<pid_t> gone_starters_;    // starters whose socket closed, not yet reaped
  std::shared_ptr<pool::Link> link_;
  bool welcomed_ = false;
  bool dialing_ = false;
  double backoff_ = 0.2;
  double started_at_ = 0, idle_since_ = 0, last_update_ = 0, last_policy_ = 0;
  double lost_since_ = 0;  // when the agent was last lost (or the start); 0 while welcomed
  std::string leaving_;    // why, once leaving
  bool bye_sent_ = false, exited_ = false;
  boost::asio::steady_timer tick_, redial_, handshake_;
  boost::asio::signal_set children_;
};

}  // namespace kite::glidein
