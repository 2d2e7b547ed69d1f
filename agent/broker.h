// The personal resource broker (docs/broker.md): the user's sites from config.toml, their ads
// (asked of each gatekeeper with `info`, as each proxy that has brokered jobs), what Kite observed
// of its own jobs there, and the matchmaking that gives each idle brokered grid job its site
// before the gridmanager hears of it. Used on the agent's thread; the `info` requests run on the
// broker's own threads.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "agent/broker_settings.h"
#include "agent/queue.h"
#include "agent/site_ads.h"
#include "classad/classad.h"
#include "common/error.h"

namespace kite::agent {

// What `kite status -grid` shows of one site for one proxy.
struct SiteView {
  std::string resource;
  std::string proxy;
  classad::ClassAd ad;  // the site's ad (when it answered) with the agent's attributes
};

class Broker {
 public:
  struct Hooks {
    // A job's match changed: the gridmanager must hear of it.
    std::function<void(Job&)> matched;
  };
  Broker(boost::asio::io_context& io, JobQueue& queue, BrokerSettings settings, Hooks hooks);
  ~Broker();
  Broker(const Broker&) = delete;
  Broker& operator=(const Broker&) = delete;

  // Starts the refresh timer and the `info` threads (nothing when no resource is configured).
  void Start();
  void Stop();

  // The queue's status hook, for grid-universe jobs.
  void OnStatus(Job& job, bool leaving);
  // Whether `job` waits for the broker (brokered, idle, no site chosen): no gridmanager yet.
  static bool AwaitsMatch(const Job& job);
  static bool IsBrokered(const Job& job);
  // A glide-in submitted by flooding (KiteFlood): its waits at its site are observed too.
  static bool IsFlood(const Job& job);

  // Every site for every proxy with brokered jobs (and each configured site once when there is
  // none), with the agent's attributes.
  std::vector<SiteView> Sites();

  // Test and status: the resources configured.
  const BrokerSettings& settings() const { return settings_; }

  // Sites are asked as `proxy` too while it is watched (glide-in flooding), brokered jobs or not.
  void Watch(const std::string& proxy) { watched_.insert(proxy); }
  void Unwatch(const std::string& proxy) { watched_.erase(proxy); }
  // The sites usable for `proxy` now, with the agent's attributes and what Kite observed.
  struct Offer {
    std::string resource;
    classad::ClassAd ad;
    SiteState state;
  };
  std::vector<Offer> UsableSites(const std::string& proxy);

  // Matches now (tests; otherwise every second while jobs wait).
  void MatchNow();
  // A job being moved is off its site (GridHub's `moved` hook): its match is cleared, the move
  // counted and logged, and it waits for a site again.
  void FinishMove(Job& job);

 private:
  struct SiteKey {
    std::string proxy, resource;
    auto operator<=>(const SiteKey&) const = default;
  };
  struct Entry {                         // one site as one proxy sees it
    std::optional<classad::ClassAd> ad;  // the last good ad
    bool asked = false;                  // a request is out
    double last_try = -1e18;             // wall time of the last request
    double last_contact = 0;             // of the last answer
    bool reachable = false;
    bool refused = false;    // the site refused this proxy's identity
    bool malformed = false;  // the last answer was not a usable ad
    std::string error;       // why it is not usable
  };
  struct Tracked {  // a brokered job
    int status = 0;
    std::string site;       // MATCH_GridResource ("" = not matched)
    double matched_at = 0;  // LastMatchTime
    bool started = false;   // its wait at `site` was recorded
    std::string proxy;
  };
  struct Answer {
    SiteKey key;
    Result<std::string> ad;
    double when = 0;
  };

  void Tick();
  void Refresh(double now);
  void OnAnswer(Answer a);
  void Match();
  void Replan(double now);
  SiteState StateOf(const std::string& resource, double now) const;
  classad::ClassAd Compose(const SiteKey& key, const Entry& e, double now) const;
  bool Usable(const Entry& e) const { return e.ad && e.reachable && !e.refused && !e.malformed; }
  const ResourceSetting* Setting(const std::string& resource) const;
  void Track(Job& job);
  void Worker();

  boost::asio::io_context& io_;
  JobQueue& queue_;
  BrokerSettings settings_;
  Hooks hooks_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  std::map<SiteKey, Entry> entries_;
  std::map<std::string, SiteRecord> records_;  // per resource
  std::map<JobKey, Tracked> jobs_;
  std::set<std::string> watched_;
  bool match_due_ = false;
  bool stopped_ = true;

  // The `info` threads' queue.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<SiteKey> todo_;  // guarded by mu_
  bool quit_ = false;         // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace kite::agent
