// The personal resource broker: site ads, observations, matchmaking of brokered grid jobs.
#include "agent/broker.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>

#include "agent/grid_hub.h"
#include "agent/negotiator.h"
#include "classad/expr.h"
#include "common/clock.h"
#include "common/strings.h"
#include "credentials/proxy.h"
#include "credentials/verify.h"
#include "grid/brokered.h"
#include "grid/resource.h"
#include "grid/site_link.h"

namespace kite::agent {
namespace {

constexpr int kInfoThreads = 2;
constexpr double kMatchInterval = 1.0;  // seconds between matchmaking passes while jobs wait

// An `info` request to one site, presenting `proxy`: the ad's text, or why there is none.
Result<std::string> AskInfo(const std::string& proxy, const std::string& resource,
                            const std::string& ca_dir, double timeout) {
  auto where = grid::ParseGridResource(resource);
  if (!where) return Fail(where.error());
  return grid::AskSiteInfo(*where, {.proxy = proxy, .ca_dir = ca_dir, .timeout = timeout});
}

}  // namespace

Broker::Broker(boost::asio::io_context& io, JobQueue& queue, BrokerSettings settings, Hooks hooks)
    : io_(io),
      queue_(queue),
      settings_(std::move(settings)),
      hooks_(std::move(hooks)),
      timer_(io) {}

Broker::~Broker() {
  Stop();
}

void Broker::Start() {
  if (settings_.resources.empty() || !stopped_) return;
  stopped_ = false;
  {
    std::lock_guard lock(mu_);
    quit_ = false;
  }
  for (int i = 0; i < kInfoThreads; ++i) threads_.emplace_back([this] { Worker(); });
  Tick();
}

void Broker::Stop() {
  stopped_ = true;
  timer_.cancel();
  {
    std::lock_guard lock(mu_);
    quit_ = true;
    todo_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
  alive_ = std::make_shared<int>(0);  // answers still posted are dropped
}

bool Broker::IsBrokered(const Job& job) {
  if (job.universe != kUniverseGrid) return false;
  auto r = job.ad.EvaluateString("GridResource");
  return r && grid::IsBrokered(*r);
}

bool Broker::IsFlood(const Job& job) {
  return job.universe == kUniverseGrid && job.ad.EvaluateBool("KiteFlood").value_or(false);
}

bool Broker::AwaitsMatch(const Job& job) {
  return job.status == kIdle && IsBrokered(job) && !job.ad.EvaluateString("MATCH_GridResource");
}

void Broker::Track(Job& job) {
  Tracked& t = jobs_[job.key];
  double now = queue_.Now();
  bool flood = !IsBrokered(job);  // a flood glide-in names its site itself
  std::string site =
      job.ad.EvaluateString(flood ? "GridResource" : "MATCH_GridResource").value_or("");
  if (site != t.site) t.started = false;
  int before = t.status;
  t.status = job.status;
  t.site = site;
  t.matched_at =
      static_cast<double>(job.ad.EvaluateInt(flood ? "QDate" : "LastMatchTime").value_or(0));
  t.proxy = GridHub::ProxyOf(job);
  // A move ends when the job starts where it is, or is held or removed meanwhile.
  if (job.status != kIdle && job.ad.EvaluateString("GridMigrate")) {
    queue_.SetAttr(job, "GridMigrate", classad::MakeUndefined());
    spdlog::info("broker: job {}.{} stays at {}: {}", job.key.cluster, job.key.proc, site,
                 job.status == kRunning ? "it started there" : "no longer idle");
  }
  if (site.empty()) return;
  if (before == 0) {
    // First seen (submitted, or loaded after a restart): nothing happened at the site yet that
    // this agent saw, and a job found running must not count its whole past as a wait.
    t.started = job.status != kIdle;
    return;
  }
  SiteRecord& rec = records_[site];
  if (job.status == kRunning && !t.started) {
    t.started = true;
    rec.Waited(now, now - t.matched_at);
  }
  if (job.status == kCompleted && before != kCompleted) rec.Ended(now, false);
  // Back to idle after it ran there (the site failed it: resubmitted), or held for the site's
  // reason (not the user's): a failed attempt.
  bool site_hold = job.status == kHeld && before != kHeld &&
                   job.ad.EvaluateInt("HoldReasonCode").value_or(0) == kHoldGridError;
  if ((job.status == kIdle && before == kRunning) || site_hold) {
    rec.Ended(now, true);
    t.started = false;
  }
}

void Broker::OnStatus(Job& job, bool leaving) {
  if (!IsBrokered(job) && !IsFlood(job)) return;
  if (leaving) {
    jobs_.erase(job.key);
    return;
  }
  Track(job);
  if (AwaitsMatch(job)) match_due_ = true;
}

const ResourceSetting* Broker::Setting(const std::string& resource) const {
  for (const auto& r : settings_.resources) {
    if (r.grid_resource == resource) return &r;
  }
  return nullptr;
}

void Broker::Tick() {
  if (stopped_) return;
  double now = WallNow();
  Refresh(now);
  Replan(queue_.Now());
  if (match_due_) Match();
  timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(kMatchInterval * 1000)));
  timer_.async_wait(
      [this, alive = std::weak_ptr<int>(alive_)](const boost::system::error_code& ec) {
        if (ec || alive.expired()) return;
        Tick();
      });
}

// Asks every site again, as every proxy with brokered jobs, once its refresh interval passed.
void Broker::Refresh(double now) {
  std::set<std::string> proxies = watched_;
  for (const auto& [key, t] : jobs_) {
    if (!t.proxy.empty() && (t.status == kIdle || t.status == kRunning)) proxies.insert(t.proxy);
  }
  std::vector<SiteKey> ask;
  for (const auto& proxy : proxies) {
    for (const auto& r : settings_.resources) {
      SiteKey key{proxy, r.grid_resource};
      Entry& e = entries_[key];
      if (e.asked || now - e.last_try < settings_.refresh_interval) continue;
      e.asked = true;
      e.last_try = now;
      ask.push_back(key);
    }
  }
  if (ask.empty()) return;
  {
    std::lock_guard lock(mu_);
    for (auto& k : ask) todo_.push_back(std::move(k));
  }
  cv_.notify_all();
}

void Broker::Worker() {
  while (true) {
    SiteKey key;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return quit_ || !todo_.empty(); });
      if (quit_) return;
      key = todo_.front();
      todo_.pop_front();
    }
    Answer a{key, AskInfo(key.proxy, key.resource, settings_.ca_dir, settings_.info_timeout),
             WallNow()};
    boost::asio::post(io_, [this, alive = std::weak_ptr<int>(alive_), a = std::move(a)]() mutable {
      if (alive.expired()) return;
      OnAnswer(std::move(a));
    });
  }
}

void Broker::OnAnswer(Answer a) {
  Entry& e = entries_[a.key];
  e.asked = false;
  const std::string& site = a.key.resource;
  if (!a.ad) {
    const Error& err = a.ad.error();
    bool refused = err.code() == ErrorCode::kAuthFailed || err.code() == ErrorCode::kProxyExpired;
    bool down = err.code() == ErrorCode::kUnavailable || err.code() == ErrorCode::kTimeout;
    if (refused) {
      if (!e.refused) {
        spdlog::warn(
            "broker: {} refuses the identity of proxy {}: {} (not chosen for its jobs "
            "until it accepts it)",
            site, a.key.proxy, err.message());
      }
      e.refused = true;
      e.reachable = true;
      e.last_contact = a.when;
    } else if (down) {
      if (e.reachable || e.error.empty()) {
        spdlog::warn("broker: {} is unreachable: {} (skipped until it answers)", site,
                     err.message());
      }
      e.reachable = false;
    } else {
      // It answered, but not with a usable ad (a malformed reply, or the batch system could
      // not be asked).
      if (!e.malformed) spdlog::warn("broker: {}: unusable info reply: {}", site, err.message());
      e.malformed = true;
      e.reachable = true;
      e.last_contact = a.when;
    }
    e.error = err.message();
    return;
  }
  auto ad = ParseSiteAd(*a.ad);
  e.reachable = true;
  e.last_contact = a.when;
  if (e.refused)
    spdlog::info("broker: {} accepts the identity of proxy {} again", site, a.key.proxy);
  e.refused = false;
  if (!ad) {
    if (!e.malformed) spdlog::warn("broker: {}: {} (site unusable)", site, ad.error().message());
    e.malformed = true;
    e.error = ad.error().message();
    return;
  }
  if (e.malformed || !e.ad) spdlog::info("broker: {} is usable: {}", site, *a.ad);
  e.malformed = false;
  e.error.clear();
  e.ad = std::move(*ad);
  match_due_ = true;
}

SiteState Broker::StateOf(const std::string& resource, double now) const {
  SiteState s;
  if (auto it = records_.find(resource); it != records_.end()) {
    s.wait_p50 = it->second.WaitPercentile(0.5, now);
    s.wait_p90 = it->second.WaitPercentile(0.9, now);
    s.start_rate = it->second.StartRate(now);
  }
  for (const auto& [key, t] : jobs_) {
    if (t.site != resource || t.status != kIdle) continue;
    ++s.kite_pending;
    s.oldest_pending = std::max(s.oldest_pending, now - t.matched_at);
  }
  return s;
}

classad::ClassAd Broker::Compose(const SiteKey& key, const Entry& e, double now) const {
  classad::ClassAd ad = e.ad ? *e.ad : classad::ClassAd();
  if (const ResourceSetting* r = Setting(key.resource)) {
    for (const auto& [name, value] : r->attributes) (void)ad.InsertText(name, value);
  }
  ad.Assign("GridResource", key.resource);
  ad.Assign("Name", key.resource);
  SiteState s = StateOf(key.resource, now);
  int running = 0;
  for (const auto& [k, t] : jobs_) {
    if (t.site == key.resource && t.status == kRunning) ++running;
  }
  ad.Assign("EstimatedWaitTime", static_cast<int64_t>(EstimateWait(ad, s) + 0.5));
  if (s.wait_p50) ad.Assign("ObservedWaitP50", static_cast<int64_t>(*s.wait_p50 + 0.5));
  if (s.wait_p90) ad.Assign("ObservedWaitP90", static_cast<int64_t>(*s.wait_p90 + 0.5));
  if (s.start_rate) ad.Assign("ObservedStartRate", *s.start_rate * 60);  // jobs per minute
  auto rec = records_.find(key.resource);
  ad.Assign("ObservedWaits",
            static_cast<int64_t>(rec == records_.end() ? 0 : rec->second.Waits(now)));
  ad.Assign("KiteAttempts",
            static_cast<int64_t>(rec == records_.end() ? 0 : rec->second.Attempts(now)));
  ad.Assign("FailureRate", rec == records_.end() ? 0.0 : rec->second.FailureRate(now));
  ad.Assign("KitePending", static_cast<int64_t>(s.kite_pending));
  ad.Assign("KiteRunning", static_cast<int64_t>(running));
  ad.Assign("LastContact", static_cast<int64_t>(e.last_contact));
  ad.Assign("Reachable", e.reachable);
  ad.Assign("Usable", Usable(e));
  if (!Usable(e)) {
    std::string why = e.refused      ? "refused: " + e.error
                      : !e.reachable ? (e.error.empty() ? "not asked yet (no job has needed it)"
                                                        : "unreachable: " + e.error)
                                     : e.error;
    ad.Assign("UnusableReason", why);
  }
  return ad;
}

void Broker::MatchNow() {
  Match();
}

void Broker::Match() {
  match_due_ = false;
  double now = WallNow();
  // The jobs waiting for a site, in the negotiator's order.
  std::vector<std::pair<JobOrder, Job*>> waiting;
  for (auto& [key, t] : jobs_) {
    if (t.status != kIdle || !t.site.empty()) continue;
    Job* j = queue_.Find(key);
    if (!j || !AwaitsMatch(*j)) continue;
    waiting.push_back({{j->ad.EvaluateInt("JobPrio").value_or(0), key.cluster, key.proc}, j});
  }
  if (waiting.empty()) return;
  std::sort(waiting.begin(), waiting.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  // Per proxy: its usable sites, with the agent's attributes and room.
  struct Candidate {
    classad::ClassAd ad;
    std::string resource;
    SiteState state;
    int room = 0;
    double wait = 0;
  };
  std::map<std::string, std::vector<Candidate>> by_proxy;
  std::map<std::string, std::unique_ptr<SiteMatcher>> matchers;  // per proxy, once its sites are
  auto candidates = [&](const std::string& proxy) -> std::vector<Candidate>& {
    auto [it, fresh] = by_proxy.try_emplace(proxy);
    if (!fresh) return it->second;
    for (const auto& r : settings_.resources) {
      auto e = entries_.find({proxy, r.grid_resource});
      if (e == entries_.end() || !Usable(e->second)) continue;
      Candidate c;
      c.resource = r.grid_resource;
      c.ad = Compose(e->first, e->second, now);
      c.state = StateOf(r.grid_resource, now);
      c.room = SiteRoom(c.ad, c.state, settings_.max_pending_per_site);
      c.wait = EstimateWait(c.ad, c.state);
      it->second.push_back(std::move(c));
    }
    return it->second;
  };
  size_t matched = 0, unmatched = 0;
  for (auto& [order, j] : waiting) {
    std::string proxy = GridHub::ProxyOf(*j);
    auto& cands = candidates(proxy);
    auto& matcher = matchers[proxy];
    if (!matcher) {
      std::vector<const classad::ClassAd*> ads;
      for (auto& c : cands) ads.push_back(&c.ad);
      matcher = std::make_unique<SiteMatcher>(std::move(ads));
    }
    std::vector<SiteChoice> choices;
    for (auto& c : cands) choices.push_back({&c.ad, c.room, c.wait});
    auto best = PreferredSite(j->ad, matcher->For(j->ad), choices);
    if (!best) {
      ++unmatched;
      continue;
    }
    Candidate& c = cands[*best];
    // The job is in that site's queue now, sent or waiting for room there: the next job sees it.
    ++c.state.kite_pending;
    c.wait = EstimateWait(c.ad, c.state);
    c.ad.Assign("EstimatedWaitTime", static_cast<int64_t>(c.wait + 0.5));
    if (c.room <= 0) {
      ++unmatched;  // late binding: it waits for room where it would start soonest
      continue;
    }
    auto resource = j->ad.EvaluateString("GridResource").value_or("");
    for (const auto& name : grid::BrokeredNames(resource)) {
      if (EqualsIgnoreCase(name, "GridResource")) continue;
      if (auto v = c.ad.EvaluateString(name)) {
        queue_.SetAttr(*j, "MATCH_" + name, classad::MakeString(*v));
      } else if (const classad::Expr* e = c.ad.Lookup(name)) {
        queue_.SetAttr(*j, "MATCH_" + name, classad::MakeString(classad::Unparse(*e)));
      }
    }
    queue_.SetAttr(*j, "MATCH_GridResource", classad::MakeString(c.resource));
    queue_.SetAttr(*j, "LastMatchTime", classad::MakeInteger(static_cast<int64_t>(queue_.Now())));
    --c.room;
    ++matched;
    Track(*j);
    if (hooks_.matched) hooks_.matched(*j);
    spdlog::debug("broker: job {}.{} -> {}", j->key.cluster, j->key.proc, c.resource);
  }
  if (matched > 0) {
    spdlog::info(
        "broker: matched {} job(s) to sites; {} wait for room where they would start "
        "soonest, or for a site that matches",
        matched, unmatched);
  }
  // Jobs left waiting are matched again next pass (room frees as jobs start).
  if (unmatched > 0) match_due_ = true;
}

// Jobs waiting at a site longer than their max_queue_wait, where another site that matches them
// expects to start them sooner, are moved (seeds/003: "migrate queued jobs"): GridMigrate tells
// their gridmanager to cancel them there if they have not started; FinishMove then matches
// them again.
void Broker::Replan(double now) {
  struct Move {
    Job* job;
    std::string reason;
  };
  std::vector<Move> moves;
  std::map<std::string, int> sent;  // moves chosen this pass, per destination
  // What each site's state and ad are this pass: nothing changes them until the moves are made,
  // so each is worked out once, not once per waiting job.
  std::map<std::string, SiteState> states;
  auto state_of = [&](const std::string& resource) -> const SiteState& {
    auto [it, fresh] = states.try_emplace(resource);
    if (fresh) it->second = StateOf(resource, now);
    return it->second;
  };
  std::map<SiteKey, classad::ClassAd> composed;
  auto ad_of = [&](const SiteKey& key, const Entry& e) -> const classad::ClassAd& {
    auto [it, fresh] = composed.try_emplace(key);
    if (fresh) it->second = Compose(key, e, now);
    return it->second;
  };
  for (auto& [key, t] : jobs_) {
    if (t.status != kIdle || t.site.empty() || t.matched_at <= 0) continue;
    Job* j = queue_.Find(key);
    if (!j || !IsBrokered(*j) || j->ad.EvaluateString("GridMigrate")) continue;
    double limit = j->ad.EvaluateReal("MaxQueueWait").value_or(settings_.max_queue_wait);
    double waited = now - t.matched_at;
    if (!(limit > 0) || waited <= limit) continue;
    auto here = entries_.find({t.proxy, t.site});
    double here_wait = EstimateWait(
        here != entries_.end() && here->second.ad ? *here->second.ad : classad::ClassAd(),
        state_of(t.site));
    // The other sites the job could go to now.
    std::vector<SiteChoice> choices;
    std::vector<std::string> names;
    for (const auto& r : settings_.resources) {
      if (r.grid_resource == t.site) continue;
      auto e = entries_.find({t.proxy, r.grid_resource});
      if (e == entries_.end() || !Usable(e->second)) continue;
      const classad::ClassAd& ad = ad_of(e->first, e->second);
      SiteState s = state_of(r.grid_resource);
      s.kite_pending += sent[r.grid_resource];
      choices.push_back(
          {&ad, SiteRoom(ad, s, settings_.max_pending_per_site), EstimateWait(ad, s)});
      names.push_back(r.grid_resource);
    }
    auto best = BestSite(j->ad, choices);
    if (!best || !(choices[*best].estimated_wait < here_wait)) continue;
    ++sent[names[*best]];
    char reason[768];
    std::snprintf(reason, sizeof reason,
                  "waited %.0f s at %s, more than max_queue_wait (%.0f s), where a start is "
                  "expected in %.0f s; %s expects to start it in %.0f s",
                  waited, t.site.c_str(), limit, here_wait, names[*best].c_str(),
                  choices[*best].estimated_wait);
    moves.push_back({j, reason});
  }
  for (auto& m : moves) {
    spdlog::info("broker: moving job {}.{}: {}", m.job->key.cluster, m.job->key.proc, m.reason);
    queue_.SetAttr(*m.job, "GridMigrate", classad::MakeString(m.reason));
    if (hooks_.matched) hooks_.matched(*m.job);
  }
}

void Broker::FinishMove(Job& job) {
  std::string from = job.ad.EvaluateString("MATCH_GridResource").value_or("?");
  double matched = static_cast<double>(job.ad.EvaluateInt("LastMatchTime").value_or(0));
  if (matched > 0) records_[from].GaveUp(queue_.Now(), queue_.Now() - matched);
  std::string reason = job.ad.EvaluateString("GridMigrate").value_or("");
  auto resource = job.ad.EvaluateString("GridResource").value_or("");
  for (const auto& name : grid::BrokeredNames(resource)) {
    queue_.SetAttr(job, "MATCH_" + name, classad::MakeUndefined());
  }
  queue_.SetAttr(job, "MATCH_GridResource", classad::MakeUndefined());
  queue_.SetAttr(job, "GridMigrate", classad::MakeUndefined());
  // A new attempt: the request ids of the old one are the old site's.
  queue_.SetAttr(job, "GridAttempt",
                 classad::MakeInteger(job.ad.EvaluateInt("GridAttempt").value_or(0) + 1));
  queue_.SetAttr(job, "NumGridMigrations",
                 classad::MakeInteger(job.ad.EvaluateInt("NumGridMigrations").value_or(0) + 1));
  queue_.SetAttr(job, "LastGridMigrationReason", classad::MakeString(reason));
  queue_.AddEvent(job, kEventGeneric, "Moved off grid resource " + from + ": " + reason);
  spdlog::info("broker: job {}.{} is off {}; matching it again", job.key.cluster, job.key.proc,
               from);
  Track(job);
  match_due_ = true;
}

std::vector<Broker::Offer> Broker::UsableSites(const std::string& proxy) {
  double now = queue_.Now();
  std::vector<Offer> out;
  for (const auto& r : settings_.resources) {
    auto e = entries_.find({proxy, r.grid_resource});
    if (e == entries_.end() || !Usable(e->second)) continue;
    out.push_back(
        {r.grid_resource, Compose(e->first, e->second, now), StateOf(r.grid_resource, now)});
  }
  return out;
}

std::vector<SiteView> Broker::Sites() {
  double now = WallNow();
  std::vector<SiteView> out;
  std::set<std::string> shown;
  for (const auto& [key, e] : entries_) {
    out.push_back({key.resource, key.proxy, Compose(key, e, now)});
    shown.insert(key.resource);
  }
  for (const auto& r : settings_.resources) {
    if (shown.count(r.grid_resource)) continue;
    Entry none;
    out.push_back({r.grid_resource, "", Compose({"", r.grid_resource}, none, now)});
  }
  return out;
}

}  // namespace kite::agent
