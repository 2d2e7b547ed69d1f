// The agent's side of the grid: the gridmanagers' long poll, their reports, resource reports.
#include "agent/grid_hub.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "agent/broker.h"
#include "agent/policy.h"
#include "agent/userlog.h"
#include "classad/expr.h"
#include "classad/parser.h"
#include "common/clock.h"

namespace kite::agent {
namespace {

// How long a grid job that left the queue is reported to polling gridmanagers (they poll at
// least every 20 s, and one that starts afresh never knew of it).
constexpr double kLeftKeep = 600;

// Sets `flag` for the life of the scope, whatever way the scope is left.
class FlagScope {
 public:
  explicit FlagScope(bool& flag) : flag_(flag) { flag_ = true; }
  ~FlagScope() { flag_ = false; }
  FlagScope(const FlagScope&) = delete;
  FlagScope& operator=(const FlagScope&) = delete;

 private:
  bool& flag_;
};

}  // namespace

struct GridHub::Waiter {
  std::string proxy;
  uint64_t since = 0;
  std::function<void(PollResult)> reply;
  std::shared_ptr<boost::asio::steady_timer> timer;
};

GridHub::GridHub(boost::asio::io_context& io, JobQueue& queue, Hooks hooks)
    : queue_(queue),
      io_(io),
      hooks_(std::move(hooks)),
      epoch_(std::to_string(::getpid()) + "-" +
             std::to_string(static_cast<int64_t>(WallNow() * 1e6))) {}

std::string GridHub::ProxyOf(const Job& j) {
  return j.ad.EvaluateString("x509userproxy").value_or("");
}

bool GridHub::IsMoving(const Job& j) {
  return j.status == kIdle && j.ad.EvaluateString("GridMigrate").has_value();
}

bool GridHub::NeedsManager(const Job& j) {
  if (Broker::AwaitsMatch(j)) return false;  // no site yet: the broker's, not a gridmanager's
  switch (j.status) {
    case kIdle:
    case kRunning:
    case kRemoved:
      return true;
    case kHeld:
      return j.ad.EvaluateString("GridJobId").has_value();  // still to be cancelled at its site
    default:
      return false;
  }
}

void GridHub::OnStatus(Job& j, bool leaving) {
  if (leaving) {
    jobs_.erase(j.key);
    if (!in_update_) left_[j.key] = {ProxyOf(j), gen_ + 1, WallNow()};
  } else {
    jobs_.insert(j.key);
  }
  if (!in_update_) j.grid_gen = ++gen_;
  check_ = true;
}

std::set<std::string> GridHub::ProxiesNeedingManager() const {
  std::set<std::string> needed;
  for (const JobKey& key : jobs_) {
    const Job* j = queue_.Find(key);
    if (j && NeedsManager(*j)) {
      std::string proxy = ProxyOf(*j);
      if (!proxy.empty()) needed.insert(std::move(proxy));
    }
  }
  return needed;
}

GridHub::PollResult GridHub::Collect(const std::string& proxy, uint64_t since) {
  PollResult r;
  r.epoch = epoch_;
  r.generation = gen_;
  if (since >= gen_ && since != 0) return r;
  for (const JobKey& key : jobs_) {
    Job* j = queue_.Find(key);
    if (!j || ProxyOf(*j) != proxy) continue;
    if (since == 0 ? NeedsManager(*j) : j->grid_gen > since) r.jobs.push_back(key);
  }
  double now = WallNow();
  for (auto it = left_.begin(); it != left_.end();) {
    if (now - it->second.when > kLeftKeep) {
      it = left_.erase(it);
      continue;
    }
    if (since != 0 && it->second.proxy == proxy && it->second.gen > since)
      r.left.push_back(it->first);
    ++it;
  }
  return r;
}

void GridHub::Poll(std::string proxy, uint64_t since, std::string epoch, double timeout,
                   std::function<void(PollResult)> reply) {
  // What a gridmanager acts on must be durable first (docs/architecture.md, "Write ahead, then
  // act").
  if (queue_.has_pending()) {
    if (auto st = queue_.Flush(); !st) spdlog::warn("agent: flush: {}", st.error().ToString());
  }
  bool fresh = epoch != epoch_ || since > gen_;
  if (fresh) since = 0;
  auto now = Collect(proxy, since);
  if (fresh || !now.jobs.empty() || !now.left.empty() || timeout <= 0) return reply(std::move(now));
  auto w = std::make_shared<Waiter>();
  w->proxy = std::move(proxy);
  w->since = since;
  w->reply = std::move(reply);
  w->timer = std::make_shared<boost::asio::steady_timer>(io_);
  w->timer->expires_after(std::chrono::microseconds(static_cast<int64_t>(timeout * 1e6)));
  waiters_.push_back(w);
  w->timer->async_wait([this, w](auto ec) {
    if (ec) return;
    std::erase(waiters_, w);
    w->reply(Collect(w->proxy, w->since));
  });
}

void GridHub::AnswerPolls() {
  if (waiters_.empty()) return;
  std::vector<std::shared_ptr<Waiter>> keep;
  auto ws = std::move(waiters_);
  waiters_.clear();
  for (auto& w : ws) {
    if (w->since >= gen_) {
      keep.push_back(w);
      continue;
    }
    auto r = Collect(w->proxy, w->since);
    if (r.jobs.empty() && r.left.empty()) {
      keep.push_back(w);
      continue;
    }
    w->timer->cancel();
    w->reply(std::move(r));
  }
  for (auto& w : keep) waiters_.push_back(w);
}

int GridHub::Apply(Job& job, const Update& u) {
  JobKey key = job.key;
  FlagScope scope(in_update_);
  for (const auto& c : u.set) {
    queue_.SetAttr(job, grid::GridAttrName(c.attr), grid::AttrValueExpr(c.value));
  }
  if (u.event) queue_.AddEvent(job, u.event->code, u.event->text);
  // Each action applies only where the table allows it, so that a user's kite rm or kite hold
  // made meanwhile always wins.
  switch (u.action) {
    case grid::GridAction::kNone:
      break;
    case grid::GridAction::kRunning:
      (void)queue_.MarkRunning(job);
      break;
    case grid::GridAction::kExited:
      if (job.status == kIdle) (void)queue_.MarkRunning(job);
      if (job.status == kRunning && u.exit) {
        ExecStatus exit;
        exit.kind = u.exit->signaled ? ExecStatus::Kind::kSignaled : ExecStatus::Kind::kExited;
        exit.code = u.exit->code;
        exit.end = queue_.Now();
        exit.start = static_cast<double>(job.ad.EvaluateInt("JobCurrentStartDate").value_or(0));
        if (exit.start <= 0) exit.start = exit.end;
        if (EndRun(queue_, job, exit)) hooks_.retire(job);
      }
      break;
    case grid::GridAction::kIdle:
      if (job.status == kRunning) {
        (void)queue_.SetIdle(job, u.reason);
      } else if (job.status == kIdle && !u.reason.empty()) {
        queue_.AddEvent(job, kEventGeneric, u.reason);
      }
      break;
    case grid::GridAction::kHold:
      (void)queue_.Hold(job, u.reason, u.hold_code, u.hold_subcode);
      break;
    case grid::GridAction::kRetire:
      if (job.status == kRemoved || job.status == kCompleted) hooks_.retire(job);
      break;
  }
  check_ = true;
  Job* after = queue_.Find(key);
  if (!after) return grid::kStatusLeftQueue;
  bool cleared = std::any_of(u.set.begin(), u.set.end(), [](const grid::AttrChange& c) {
    return c.attr == grid::GridAttr::kJobId && std::holds_alternative<std::monostate>(c.value);
  });
  if (cleared && IsMoving(*after) && hooks_.moved) {
    hooks_.moved(*after);
    return grid::kStatusLeftQueue;  // its gridmanager lets it go; the broker matches it again
  }
  return after->status;
}

}  // namespace kite::agent
