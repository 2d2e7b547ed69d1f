// Sliced selection of jobs by ids and constraint.
#include "agent/select.h"

#include <boost/asio/post.hpp>
#include <memory>

#include "agent/agent.h"
#include "classad/io.h"

namespace kite::agent {
namespace {

using SteadyClock = std::chrono::steady_clock;

Error OverBudget(size_t looked_at) {
  return Error(ErrorCode::kInvalidInput, "constraint: evaluating it took longer than " +
                                             std::to_string(kSelectBudget.count()) +
                                             " s (stopped after " + std::to_string(looked_at) +
                                             " jobs); make it cheaper or name the jobs");
}

// The queued side: the candidates are listed at once (cheap), the constraint is evaluated in
// slices. A job that leaves the queue between slices is skipped.
class QueuedScan : public std::enable_shared_from_this<QueuedScan> {
 public:
  QueuedScan(Agent& agent, std::vector<JobKey> candidates, classad::ExprPtr constraint,
             std::function<void(Result<std::vector<JobKey>>)> done)
      : agent_(agent),
        candidates_(std::move(candidates)),
        constraint_(std::move(constraint)),
        done_(std::move(done)),
        started_(SteadyClock::now()) {}

  void Step() {
    auto slice_end = SteadyClock::now() + kSelectSlice;
    while (next_ < candidates_.size()) {
      JobKey key = candidates_[next_++];
      Job* j = agent_.queue().Find(key);
      if (j && classad::EvaluateExpr(*constraint_, &j->ad).IsTrue()) matched_.push_back(key);
      if ((next_ & 15) == 0 && SteadyClock::now() >= slice_end) {
        if (SteadyClock::now() - started_ > kSelectBudget) return done_(Fail(OverBudget(next_)));
        boost::asio::post(agent_.io(), [self = shared_from_this()] { self->Step(); });
        return;
      }
    }
    done_(std::move(matched_));
  }

 private:
  Agent& agent_;
  std::vector<JobKey> candidates_;
  classad::ExprPtr constraint_;
  std::function<void(Result<std::vector<JobKey>>)> done_;
  SteadyClock::time_point started_;
  size_t next_ = 0;
  std::vector<JobKey> matched_;
};

// The history side: pages of rows read from the store, each row's ad evaluated; the scan goes
// on from the last row read when a slice ends.
class HistoryScan : public std::enable_shared_from_this<HistoryScan> {
 public:
  static constexpr size_t kPage = 256;

  HistoryScan(Agent& agent, std::vector<JobSelector> sel, classad::ExprPtr constraint, size_t limit,
              std::function<void(Result<HistoryMatch>)> done)
      : agent_(agent),
        sel_(std::move(sel)),
        constraint_(std::move(constraint)),
        limit_(limit),
        done_(std::move(done)),
        started_(SteadyClock::now()) {
    if (sel_.empty()) sel_.push_back(JobSelector{-1, -1});
  }

  void Step() {
    auto slice_end = SteadyClock::now() + kSelectSlice;
    while (selector_ < sel_.size()) {
      const JobSelector& s = sel_[selector_];
      size_t rows = 0;
      bool full = false;
      auto st = agent_.store().History(
          s.cluster, s.proc, kPage,
          [&](const store::HistoryRecord& h) {
            ++rows;
            ++looked_at_;
            last_ = h;
            Take(h);
            full = limit_ > 0 && match_.ads.size() >= limit_;
            return !full;
          },
          have_last_ ? &last_ : nullptr);
      if (!st) return done_(Fail(st.error()));
      have_last_ = true;
      if (full) break;
      if (rows < kPage) {  // this selector is done
        ++selector_;
        have_last_ = false;
      }
      if (SteadyClock::now() >= slice_end) {
        if (SteadyClock::now() - started_ > kSelectBudget)
          return done_(Fail(OverBudget(looked_at_)));
        boost::asio::post(agent_.io(), [self = shared_from_this()] { self->Step(); });
        return;
      }
    }
    done_(std::move(match_));
  }

 private:
  void Take(const store::HistoryRecord& h) {
    // Whatever of a damaged ad parses is shown: history is a record, not something to act on.
    std::vector<std::string> bad;
    auto ad = classad::ParseOldAdSkippingErrors(h.ad, &bad);
    if (constraint_ && !classad::EvaluateExpr(*constraint_, &ad).IsTrue()) return;
    match_.ads.push_back(std::move(ad));
    match_.keys.push_back(h.job);
  }

  Agent& agent_;
  std::vector<JobSelector> sel_;
  classad::ExprPtr constraint_;
  size_t limit_;
  std::function<void(Result<HistoryMatch>)> done_;
  SteadyClock::time_point started_;
  size_t selector_ = 0;
  bool have_last_ = false;
  store::HistoryRecord last_;
  size_t looked_at_ = 0;
  HistoryMatch match_;
};

std::vector<JobKey> Candidates(Agent& agent, const std::vector<JobSelector>& sel) {
  std::vector<JobKey> out;
  auto& jobs = agent.queue().jobs();
  if (sel.empty()) {
    out.reserve(jobs.size());
    for (auto& [k, j] : jobs) out.push_back(k);
    return out;
  }
  for (auto& s : sel) {
    if (s.proc >= 0) {
      if (jobs.count({s.cluster, s.proc})) out.push_back({s.cluster, s.proc});
      continue;
    }
    for (auto it = jobs.lower_bound({s.cluster, 0});
         it != jobs.end() && it->first.cluster == s.cluster; ++it)
      out.push_back(it->first);
  }
  return out;
}

}  // namespace

Result<classad::ExprPtr> ParseConstraint(const std::string& text) {
  if (text.empty()) return classad::ExprPtr();
  auto e = classad::ParseExpr(text);
  if (!e) return Fail(ErrorCode::kInvalidInput, "constraint: " + e.error().message());
  return *e;
}

void SelectQueued(Agent& agent, std::vector<JobSelector> sel, classad::ExprPtr constraint,
                  std::function<void(Result<std::vector<JobKey>>)> done) {
  auto keys = Candidates(agent, sel);
  if (!constraint) return done(std::move(keys));
  std::make_shared<QueuedScan>(agent, std::move(keys), std::move(constraint), std::move(done))
      ->Step();
}

void SelectHistory(Agent& agent, std::vector<JobSelector> sel, classad::ExprPtr constraint,
                   size_t limit, std::function<void(Result<HistoryMatch>)> done) {
  std::make_shared<HistoryScan>(agent, std::move(sel), std::move(constraint), limit,
                                std::move(done))
      ->Step();
}

}  // namespace kite::agent
