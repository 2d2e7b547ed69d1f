// Which jobs a request names: ids and a ClassAd constraint, over the queue or the history.
//
// A constraint is the user's own expression, and evaluating it over a large queue (or a costly
// one, with regular expressions, over a small one) takes time. The agent serves everyone from one
// thread, so the evaluation runs in slices of at most kSlice, the rest posted to the event loop:
// other clients' requests are answered in between, and no request runs longer than kBudget.
// Used only on the agent's thread.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "agent/job.h"
#include "classad/classad.h"
#include "classad/expr.h"
#include "common/error.h"

namespace kite::agent {

class Agent;

inline constexpr auto kSelectSlice = std::chrono::milliseconds(5);
inline constexpr auto kSelectBudget = std::chrono::seconds(60);

// Parses a constraint ("" is none: a null expression).
Result<classad::ExprPtr> ParseConstraint(const std::string& text);

// Queued jobs: the keys of the jobs the selectors name (none: every job) for which `constraint`
// (null: none) is true, in key order. `done` runs once, possibly before this returns.
void SelectQueued(Agent& agent, std::vector<JobSelector> sel, classad::ExprPtr constraint,
                  std::function<void(Result<std::vector<JobKey>>)> done);

// Jobs in history: their ads, newest first, at most `limit` (0: all).
struct HistoryMatch {
  std::vector<JobKey> keys;
  std::vector<classad::ClassAd> ads;
};
void SelectHistory(Agent& agent, std::vector<JobSelector> sel, classad::ExprPtr constraint,
                   size_t limit, std::function<void(Result<HistoryMatch>)> done);

}  // namespace kite::agent
