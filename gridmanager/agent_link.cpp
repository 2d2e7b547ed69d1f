// The long poll and the update batches.
#include "gridmanager/agent_link.h"

namespace kite::gridmanager {

AgentLink::AgentLink(AgentTransport& transport, std::string proxy, Hooks hooks)
    : transport_(transport), proxy_(std::move(proxy)), hooks_(std::move(hooks)) {}

void AgentLink::Queue(grid::GridUpdate update, After after) {
  pending_.push_back(std::move(update));
  pending_after_.push_back(std::move(after));
  Flush();
}

void AgentLink::Flush() {
  if (in_flight_ || stopped_) return;
  grid::UpdateRequest req;
  if (hooks_.take_reports) req.resources = hooks_.take_reports();
  if (pending_.empty() && req.resources.empty()) return;
  in_flight_ = true;
  req.updates = std::move(pending_);
  pending_.clear();
  auto afters = std::move(pending_after_);
  pending_after_.clear();
  transport_.Update(req,
                    [this, afters = std::move(afters)](Result<grid::UpdateResponse> r) mutable {
                      OnUpdated(std::move(afters), std::move(r));
                    });
}

void AgentLink::OnUpdated(std::vector<After> afters, Result<grid::UpdateResponse> r) {
  in_flight_ = false;
  if (!r) return hooks_.lost(r.error());
  for (size_t i = 0; i < afters.size(); ++i) {
    grid::UpdateResult res;
    if (i < r->results.size()) {
      res = r->results[i];
    } else {
      res.error = "the agent sent no result for this update";
    }
    if (afters[i]) afters[i](res);
  }
  Flush();
}

void AgentLink::Poll(double timeout, std::function<void(Result<grid::PollResponse>)> done) {
  grid::PollRequest req{proxy_, generation_, epoch_, timeout};
  transport_.Poll(req, [this, done = std::move(done)](Result<grid::PollResponse> r) {
    if (r) {
      epoch_ = r->epoch;
      generation_ = r->generation;
    }
    done(std::move(r));
  });
}

}  // namespace kite::gridmanager
