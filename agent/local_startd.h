// This desktop's own startd (docs/pool.md, "Local slots"): `kite-startd` started by the agent
// with `[pool] local_slots` slots, dialling the agent's pool socket like any glide-in, and
// restarted with back-off when it ends. Used only on the agent's thread.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <string>

#include "agent/config.h"
#include "agent/pool_authority.h"

namespace kite::agent {

// [pool] local_slots, with the default (the number of cores) resolved.
int LocalSlotCount(const PoolSettings& pool);

class LocalStartd {
 public:
  // `died` is told the startd's name when it ends, so that its runs are settled at once.
  // `authority` issues its pool credential (a startd from before reads the new one when it
  // dials this agent).
  LocalStartd(boost::asio::io_context& io, const AgentOptions& options, PoolAuthority& authority,
              std::function<void(const std::string&)> died);
  // Starts it (when local_slots is not 0).
  void Start();
  // The agent stops: so does the startd (its running jobs are vacated and run again later).
  void Stop();
  // A child of the agent ended: true when it was the startd.
  bool Reaped(pid_t pid, int wait_status);
  const std::string& name() const { return name_; }

 private:
  void Spawn();
  void After(double seconds);

  boost::asio::io_context& io_;
  const AgentOptions& options_;
  PoolAuthority& authority_;
  std::function<void(const std::string&)> died_;
  std::string name_;
  pid_t pid_ = 0;
  double started_ = 0, backoff_ = 0;
  bool adopted_ = false;  // one from before runs (not our child)
  boost::asio::steady_timer timer_;
};

}  // namespace kite::agent
