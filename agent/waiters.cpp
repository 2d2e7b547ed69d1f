// `kite wait`'s counts and waiters.
#include "agent/waiters.h"

#include <spdlog/spdlog.h>

#include <boost/asio/steady_timer.hpp>
#include <chrono>

#include "agent/notifier.h"

namespace kite::agent {

struct Waiters::Waiter {
  std::vector<JobSelector> sel;
  std::function<void(WaitCounts)> reply;
  std::shared_ptr<boost::asio::steady_timer> timer;
};

WaitCounts Waiters::Count(const std::vector<JobSelector>& sel) {
  // A job that just left the queue is in history only once its retirement is committed.
  if (auto st = queue_.Flush(); !st) spdlog::warn("agent: flush: {}", st.error().ToString());
  WaitCounts c;
  auto tally = [&](const Job& j) {
    ++c.total;
    switch (j.status) {
      case kIdle:
        ++c.idle;
        break;
      case kSuspended:
      case kRunning:
        ++c.running;
        break;
      case kHeld:
        ++c.held;
        // A policy may release it, and so does a renewed proxy for a credential hold.
        if (!j.ad.Lookup("PeriodicRelease") && !j.ad.Lookup(kCredentialHoldAttr) &&
            !j.ad.Lookup(kUnusableProxyHoldAttr)) {
          c.stuck.push_back(JobIdString(j.key) + ": " +
                            j.ad.EvaluateString("HoldReason").value_or("(no reason given)"));
        }
        break;
      default:
        ++c.done;
        break;
    }
  };
  for (auto& s : sel) {
    Cluster* cl = queue_.FindCluster(s.cluster);
    auto& jobs = queue_.jobs();
    if (s.proc >= 0) {
      auto it = jobs.find(JobKey{s.cluster, s.proc});
      if (it != jobs.end()) {
        tally(it->second);
        continue;
      }
      bool in_history = false;
      (void)store_.History(s.cluster, s.proc, 1, [&](const store::HistoryRecord&) {
        in_history = true;
        return false;
      });
      if (in_history) {
        ++c.total;
        ++c.done;
      } else {
        ++c.missing;
        c.missing_ids.push_back(std::to_string(s.cluster) + "." + std::to_string(s.proc));
      }
      continue;
    }
    if (cl) {
      for (auto it = jobs.lower_bound(JobKey{s.cluster, 0});
           it != jobs.end() && it->first.cluster == s.cluster; ++it)
        tally(it->second);
      c.total += cl->total - cl->present;
      c.done += cl->total - cl->present;
      continue;
    }
    int n = 0;
    (void)store_.History(s.cluster, -1, 0, [&](const store::HistoryRecord&) {
      ++n;
      return true;
    });
    if (n) {
      c.total += n;
      c.done += n;
    } else {
      ++c.missing;
      c.missing_ids.push_back(std::to_string(s.cluster));
    }
  }
  return c;
}

void Waiters::Wait(std::vector<JobSelector> sel, double timeout,
                   std::function<void(WaitCounts)> reply) {
  auto w = std::make_shared<Waiter>();
  w->sel = std::move(sel);
  w->reply = std::move(reply);
  w->timer = std::make_shared<boost::asio::steady_timer>(io_);
  w->timer->expires_after(std::chrono::microseconds(static_cast<int64_t>(timeout * 1e6)));
  waiters_.push_back(w);
  w->timer->async_wait([this, w](auto ec) {
    if (ec) return;
    std::erase(waiters_, w);
    w->reply(Count(w->sel));
  });
}

void Waiters::Answer() {
  if (waiters_.empty()) return;
  auto ws = std::move(waiters_);
  waiters_.clear();
  for (auto& w : ws) {
    w->timer->cancel();
    w->reply(Count(w->sel));
  }
}

}  // namespace kite::agent
