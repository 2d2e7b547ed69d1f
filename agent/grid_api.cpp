// The gridmanager's endpoints of the agent's API: grid/jobs and grid/update.
#include "agent/grid_api.h"

#include <boost/json.hpp>

#include "agent/agent.h"
#include "grid/codes.h"
#include "grid/messages.h"

namespace kite::agent {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

// One update of a grid/update batch: an error for an entry that names no grid job in the queue
// or is malformed (nothing of it is applied), else the job's status afterwards.
grid::UpdateResult ApplyOneGridUpdate(Agent& agent, const grid::ParsedUpdate& p) {
  grid::UpdateResult res{.id = p.id};
  if (p.id.empty()) {
    res.error = "each update needs an id";
    return res;
  }
  auto sel = ParseJobSelector(p.id);
  Job* j = sel && sel->proc >= 0 ? agent.queue().Find({sel->cluster, sel->proc}) : nullptr;
  if (!j || j->universe != kUniverseGrid) {
    res.error = "no grid job " + p.id + " in the queue";
  } else if (!p.update) {
    res.error = p.update.error().message();
  } else {
    JobKey key = j->key;
    res.status = agent.ApplyGridUpdate(*j, *p.update);
    const Job* after = agent.queue().Find(key);
    res.moving = res.status != grid::kStatusLeftQueue && after && GridHub::IsMoving(*after);
  }
  return res;
}

}  // namespace

void HandleGridJobs(Agent& agent, const json::object& body,
                    std::function<void(ApiResponse)> reply) {
  auto req = grid::ParsePollRequest(body);
  if (!req) return reply(ErrorReply(req.error()));
  agent.GridPoll(
      req->proxy, req->since, req->epoch, req->timeout, [&agent, reply](Agent::GridPollResult r) {
        grid::PollResponse res{.epoch = r.epoch, .generation = r.generation};
        res.jobs.reserve(r.jobs.size() + r.left.size());
        for (const JobKey& key : r.jobs) {
          Job* j = agent.queue().Find(key);
          if (!j) continue;
          res.jobs.push_back(
              {JobIdString(key), j->status, agent.queue().FlatText(*j), GridHub::IsMoving(*j)});
        }
        for (const JobKey& key : r.left) {
          res.jobs.push_back({JobIdString(key), grid::kStatusLeftQueue, ""});
        }
        reply(Reply(http::status::ok, grid::ToJson(res) + "\n"));
      });
}

ApiResponse HandleGridUpdate(Agent& agent, const json::object& body) {
  auto req = grid::ParseUpdateRequest(body);
  if (!req) return ErrorReply(req.error());
  // Resource reports (all or none: a malformed one fails the request), kept for the REST endpoint.
  double now = agent.queue().Now();
  for (auto& r : req->resources) {
    agent.ReportGridResource(r.resource, {.reachable = r.reachable,
                                          .last_contact = r.last_contact,
                                          .last_error = r.last_error,
                                          .reported = now});
  }
  grid::UpdateResponse out;
  out.results.reserve(req->updates.size());
  for (const auto& p : req->updates) out.results.push_back(ApplyOneGridUpdate(agent, p));
  // Acknowledged means durable: the gridmanager acts on the reply.
  if (auto st = agent.queue().Flush(); !st) return ErrorReply(st.error());
  return Reply(http::status::ok, grid::ToJson(out) + "\n");
}

}  // namespace kite::agent
