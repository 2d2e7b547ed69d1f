// Reading the queue store without the agent.
#include "agent/cli/local_store.h"

#include "agent/cli/util.h"
#include "agent/config.h"
#include "classad/io.h"
#include "common/paths.h"

namespace kite::cli {

std::unique_ptr<store::JobQueueStore> OpenQueueReadOnlyOrDie() {
  agent::AgentOptions options;
  options.home = KiteHome();
  auto s = store::JobQueueStore::OpenReadOnly(options.queue_path());
  if (!s) Die(s.error());
  return std::move(*s);
}

HistoryRows ReadHistory(store::JobQueueStore& queue, std::vector<agent::JobSelector> sel,
                        const classad::ExprPtr& constraint, size_t limit) {
  HistoryRows rows;
  if (sel.empty()) sel.push_back(agent::JobSelector{-1, -1});
  for (auto& s : sel) {
    bool full = limit > 0 && rows.ads.size() >= limit;
    if (full) break;
    auto st = queue.History(s.cluster, s.proc, 0, [&](const store::HistoryRecord& h) {
      // Whatever of a damaged ad parses is shown, as the agent does: history is a record.
      std::vector<std::string> bad;
      auto ad = classad::ParseOldAdSkippingErrors(h.ad, &bad);
      if (constraint && !classad::EvaluateExpr(*constraint, &ad).IsTrue()) return true;
      rows.ads.push_back(std::move(ad));
      rows.keys.push_back(h.job);
      return limit == 0 || rows.ads.size() < limit;
    });
    if (!st) Die(st.error());
  }
  return rows;
}

}  // namespace kite::cli
