// The agent's kite-gridmanagers: one per proxy file whose jobs need one, started when needed and
// restarted with back-off when one dies (docs/architecture.md, "The grid path"). Used only on the
// agent's thread.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "agent/config.h"

namespace kite::agent {

class GridManagerSupervisor {
 public:
  // `needed` says which proxy files' jobs need a gridmanager now.
  GridManagerSupervisor(boost::asio::io_context& io, const AgentOptions& options,
                        std::function<std::set<std::string>()> needed);

  // Starts a gridmanager for every proxy that needs one and has none (unless it is in back-off,
  // in which case a timer comes back for it).
  void Ensure();
  // A child of the agent ended: true when it was one of the gridmanagers.
  bool Reaped(pid_t pid, int wait_status);
  // The proxy's gridmanager in a few words, for kite q -analyze.
  std::string Describe(const std::string& proxy, double now) const;

 private:
  struct Proc {
    pid_t pid = 0;
    double started = 0;
    double backoff = 0;
    double next_start = 0;
  };
  bool Spawn(const std::string& proxy, Proc& g, double now);

  boost::asio::io_context& io_;
  const AgentOptions& options_;
  std::function<std::set<std::string>()> needed_;
  std::map<std::string, Proc> procs_;  // by proxy file
  boost::asio::steady_timer timer_;
};

}  // namespace kite::agent
