// The gridmanager's link to its agent (docs/api.md, "The gridmanager's API"): the long poll
// (grid/jobs) and the batched, durable updates (grid/update), over a transport that a unit test
// replaces with a fake agent.
//
// Threads: all of it runs on the engine's io_context thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "grid/messages.h"

namespace kite::gridmanager {

// How requests reach the agent. Each answer runs later on the engine's thread, never inside the
// call. A reply the agent sent but that does not parse is kProtocol.
class AgentTransport {
 public:
  virtual ~AgentTransport() = default;
  virtual void Poll(const grid::PollRequest& request,
                    std::function<void(Result<grid::PollResponse>)> done) = 0;
  virtual void Update(const grid::UpdateRequest& request,
                      std::function<void(Result<grid::UpdateResponse>)> done) = 0;
};

class AgentLink {
 public:
  using After = std::function<void(const grid::UpdateResult&)>;
  struct Hooks {
    // Resource reports due now, sent with the next batch.
    std::function<std::vector<grid::ResourceReport>()> take_reports;
    // The agent refused or lost an update: the gridmanager cannot go on.
    std::function<void(const Error&)> lost;
  };
  AgentLink(AgentTransport& transport, std::string proxy, Hooks hooks);

  // Queues `update`; `after` runs with the agent's result once the batch holding it is committed.
  void Queue(grid::GridUpdate update, After after = {});
  // Sends what is queued, and due resource reports, unless a batch is in flight: whatever queues
  // meanwhile goes in the next batch, so the agent commits many jobs' changes in one transaction.
  void Flush();
  // Nothing queued and nothing in flight.
  bool Idle() const { return pending_.empty() && !in_flight_; }
  // No more updates go out.
  void Stop() { stopped_ = true; }

  // The long poll: jobs changed since the last answer (all of them after an agent restart).
  void Poll(double timeout, std::function<void(Result<grid::PollResponse>)> done);

 private:
  void OnUpdated(std::vector<After> afters, Result<grid::UpdateResponse> r);

  AgentTransport& transport_;
  std::string proxy_;
  Hooks hooks_;
  std::vector<grid::GridUpdate> pending_;
  std::vector<After> pending_after_;
  bool in_flight_ = false;
  bool stopped_ = false;
  std::string epoch_;
  uint64_t generation_ = 0;
};

}  // namespace kite::gridmanager
