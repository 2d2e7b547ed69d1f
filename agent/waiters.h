// `kite wait`: how many of the asked-for jobs are where, and long-poll waiters answered after the
// next commit that changes the queue. Used only on the agent's thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/queue.h"

namespace kite::agent {

// Counts for `kite wait`: how many of the asked-for jobs are where.
struct WaitCounts {
  int total = 0, done = 0, idle = 0, running = 0, held = 0, missing = 0;
  std::vector<std::string> missing_ids;
  // Held jobs nothing in Kite will release (no PeriodicRelease, not held by the credential
  // monitor, which releases on renewal): "C.P: HoldReason". Only the user moves them on.
  std::vector<std::string> stuck;
};

class Waiters {
 public:
  Waiters(boost::asio::io_context& io, JobQueue& queue, store::JobQueueStore& store)
      : io_(io), queue_(queue), store_(store) {}

  // The jobs `sel` names, counted by state (a job that has left the queue counts as done).
  WaitCounts Count(const std::vector<JobSelector>& sel);
  // Registers a long-poll waiter: `reply` runs after the next queue change or after `timeout`.
  void Wait(std::vector<JobSelector> sel, double timeout, std::function<void(WaitCounts)> reply);
  // After each commit: every waiter gets its new counts.
  void Answer();

 private:
  struct Waiter;
  boost::asio::io_context& io_;
  JobQueue& queue_;
  store::JobQueueStore& store_;
  std::vector<std::shared_ptr<Waiter>> waiters_;
};

}  // namespace kite::agent
