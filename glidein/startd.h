// kite-startd's engine: its slots, the runs on them and the one connection to the agent
// (docs/pool.md). It dials the agent, says hello with its slot ads, and then does what the agent
// asks: activate a slot, take a run's input, start it under kite-exec, send its output and
// outcome, vacate it. It redials with back-off when the connection drops (runs go on meanwhile)
// and leaves — vacating what runs, saying bye — when idle too long, at the end of its lifetime,
// or when told to stop.
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
#include "glidein/link.h"
#include "glidein/options.h"
#include "glidein/run.h"
#include "glidein/slot_ad.h"
#include "glidein/stream.h"

namespace kite::glidein {

// Exit codes of a startd.
inline constexpr int kExitLeft = 0;     // it left as asked (idle, lifetime, SIGTERM)
inline constexpr int kExitRefused = 2;  // the agent refused it

class Startd {
 public:
  struct World {
    std::string exec_path;                  // kite-exec
    std::vector<std::string> env;           // the base environment of every job
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
  void OnInput(const pool::Message& m, const std::string& body);
  void OnGo(const pool::Message& m);
  void OnVacate(const pool::Message& m);
  void OnAck(const pool::Message& m);
  Run* FindRun(const pool::Message& m);  // answers `vacated` for a run it does not know
  Status CanActivate(const pool::Message& m, Slot** slot);

  // Runs.
  void Refuse(const pool::Message& m, const std::string& reason);
  void Launch(Run& run, bool again);
  void Checkpoint(Run& run);
  void Stop(Run& run, const std::string& reason);
  // The owner's policy (SUSPEND, CONTINUE, PREEMPT, KILL) for each run with processes.
  void ApplyPolicy();
  void Suspend(Run& run, const classad::ClassAd& slot_ad);
  void Resume(Run& run);
  void TellSuspension(const Run& run);
  void OnChildSignal();
  void ReapEnded();
  void Reap(Run& run, int wait_status);
  void Finished(Run& run);
  void Drop(Run& run);  // sandbox gone, slot free
  void Pump();          // output frames while the write queue is short
  void KillStragglers();

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
  std::map<std::string, Run> runs_;  // by run id
  std::shared_ptr<Link> link_;
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
