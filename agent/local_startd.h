// This desktop's own startd (docs/pool.md, "Local slots"): `kite-startd` started by the agent
// with `[pool] local_slots` slots, dialling the agent's pool socket like any glide-in, and
// restarted with back-off when it ends. Used only on the agent's thread.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <string>

#include "agent/pool_authority.h"
#include "agent/pool_settings.h"
#include "glidein/options.h"

namespace kite::agent {

// How long the local startd waits for an agent before it leaves (vacating its jobs): HTCondor's
// default job lease, the time a run is kept for an absent startd on the agent's side.
inline constexpr double kLocalStartdAgentGoneTimeout = 2400;

// [pool] local_slots, with the default (the number of cores) resolved.
int LocalSlotCount(const PoolSettings& pool);

class LocalStartd {
 public:
  // `died` is told the startd's name when it ends, so that its runs are settled at once.
  // `authority` issues its pool credential (a startd from before reads the new one when it
  // dials this agent).
  // `busy` says whether the agent knows of runs on its slots (a startd from before that runs with
  // other [pool] settings is replaced only when it has none).
  // `home`: $KITE_HOME (its execute/ folder and startd.log); `pool_socket`: the agent's unix door.
  LocalStartd(boost::asio::io_context& io, const PoolSettings& settings, std::string home,
              std::string pool_socket, PoolAuthority& authority,
              std::function<void(const std::string&)> died,
              std::function<bool(const std::string&)> busy);
  // Starts it (when local_slots is not 0).
  void Start();
  // The agent stops and leaves the startd running (`kite agent stop`): its jobs go on, and it
  // dials the next agent, which adopts its runs (docs/pool.md, "Local slots"). Stop does nothing
  // afterwards.
  void Detach();
  // The startd stops too (`kite agent stop --stop-startd`, in-process agents): its running jobs
  // are vacated and run again later.
  void Stop();
  // A child of the agent ended: true when it was the startd.
  bool Reaped(pid_t pid, int wait_status);
  const std::string& name() const { return name_; }

 private:
  void Spawn();
  void After(double seconds);
  // What it is started with now; its argument list is kept beside its lock (startd.args), so the
  // next agent can tell whether a startd from before runs with the same settings.
  glidein::StartdOptions Settings() const;
  // A startd from before, found running: adopted; replaced once it has no runs when its settings
  // are not this agent's.
  void Adopt(const std::string& work);
  // SIGTERM to the startd named by `work`'s lock, while it holds it.
  static void SignalFromBefore(const std::string& work);

  boost::asio::io_context& io_;
  const PoolSettings& settings_;
  const std::string home_, pool_socket_;
  PoolAuthority& authority_;
  std::function<void(const std::string&)> died_;
  std::function<bool(const std::string&)> busy_;
  std::string name_;
  pid_t pid_ = 0;
  double started_ = 0, backoff_ = 0;
  bool adopted_ = false;   // one from before runs (not our child)
  bool detached_ = false;  // left running for the next agent
  bool stale_ = false;     // the one adopted runs with other settings than this agent's
  boost::asio::steady_timer timer_;
};

}  // namespace kite::agent
