// The agent's side of the grid: which grid jobs each gridmanager must hear of (the long poll of
// docs/api.md, "The gridmanager's API"), what the gridmanagers report back, and what they last
// said of each grid resource. Used only on the agent's thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent/queue.h"
#include "common/exec_status.h"
#include "grid/messages.h"

namespace kite::agent {

class GridHub {
 public:
  struct PollResult {
    std::string epoch;         // changes when the agent restarts
    uint64_t generation = 0;   // pass back as `since`
    std::vector<JobKey> jobs;  // grid jobs of the proxy changed since `since`
    std::vector<JobKey> left;  // grid jobs of the proxy that left the queue since `since`
  };
  // A gridmanager's report on one job (grid/messages.h).
  using Update = grid::GridUpdate;
  // A gridmanager's report on a grid resource ("HOST:PORT"), kept (the latest) for the REST
  // endpoint's /api/v1/resources and /metrics.
  struct ResourceReport {
    bool reachable = false;
    double last_contact = 0;  // unix time of its last answer; 0: none yet
    std::string last_error;   // why it was last unreachable
    double reported = 0;      // unix time the report arrived
  };
  struct Hooks {
    std::function<void(Job&)> retire;  // a job is Completed or Removed: it leaves the queue
    // A job the broker moves is off its site (its attempt there cleared): it is the broker's
    // again, to match elsewhere; its gridmanager forgets it.
    std::function<void(Job&)> moved;
  };

  GridHub(boost::asio::io_context& io, JobQueue& queue, Hooks hooks);

  // The queue's status hook, for grid-universe jobs.
  void OnStatus(Job& job, bool leaving);
  // Long poll: answers once a grid job of `proxy` changed after `since` (at once when `epoch` is
  // not this agent's, with every job that needs a gridmanager), or after `timeout`.
  void Poll(std::string proxy, uint64_t since, std::string epoch, double timeout,
            std::function<void(PollResult)> reply);
  // After each commit: answers the polls that now have news.
  void AnswerPolls();
  // Applies a gridmanager's report; returns the job's status afterwards (grid::kStatusLeftQueue:
  // it left the queue).
  int Apply(Job& job, const Update& u);
  void Report(const std::string& resource, ResourceReport report) {
    resources_[resource] = std::move(report);
  }
  const std::map<std::string, ResourceReport>& resources() const { return resources_; }

  // The proxy files whose jobs need a gridmanager now.
  std::set<std::string> ProxiesNeedingManager() const;
  // Something changed that may need a gridmanager started; cleared by the caller.
  bool check_managers() const { return check_; }
  void managers_checked() { check_ = false; }

  static std::string ProxyOf(const Job& j);
  // An Idle job the broker is moving off its site (GridMigrate set): its gridmanager is told so
  // beside its JobStatus (grid::PollJob::moving).
  static bool IsMoving(const Job& j);

 private:
  struct Waiter;
  static bool NeedsManager(const Job& j);
  PollResult Collect(const std::string& proxy, uint64_t since);

  JobQueue& queue_;
  boost::asio::io_context& io_;
  Hooks hooks_;
  std::set<JobKey> jobs_;
  uint64_t gen_ = 0;
  std::string epoch_;
  bool in_update_ = false;  // changes reported by a gridmanager are not echoed back to it
  bool check_ = false;
  // Grid jobs that left the queue other than by their gridmanager's word (kite rm of a job not
  // yet at a site, rm --forcex): its gridmanager must stop working on them. Kept kLeftKeep s.
  struct Left {
    std::string proxy;
    uint64_t gen = 0;
    double when = 0;
  };
  std::map<JobKey, Left> left_;
  std::vector<std::shared_ptr<Waiter>> waiters_;
  std::map<std::string, ResourceReport> resources_;
};

}  // namespace kite::agent
