// The gridmanager's engine: every grid job of one proxy, driven through the grid job's machine
// (gridmanager/grid_machine.h). It turns what happens (agent polls and results, site replies and
// callbacks, timers) into events, feeds them to Apply, and runs the task each transition names:
// the only place a job's state changes is Feed.
//
// It reaches the world only through interfaces: the sites (SiteLink), the agent
// (AgentTransport) and the GASS and callback servers (JobEndpoints), so a unit test drives it
// in-process with fakes.
//
// Threads: everything runs on the io_context given; answers must be posted to it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "classad/classad.h"
#include "gridmanager/agent_link.h"
#include "gridmanager/grid_job.h"
#include "gridmanager/grid_machine.h"
#include "gridmanager/site.h"

namespace kite::gridmanager {

// The GASS server and the callback server, as the engine uses them.
class JobEndpoints {
 public:
  virtual ~JobEndpoints() = default;
  virtual std::string GassUrl(const std::string& job) = 0;      // the job's GASS base URL
  virtual std::string CallbackUrl(const std::string& job) = 0;  // where its callbacks go
  // Serves the job's files (to the proxy's identity); replaces an earlier registration.
  virtual Status AddJob(const std::string& job, const GridJobPlan& plan) = 0;
  virtual void RemoveJob(const std::string& job) = 0;
};

struct EngineOptions {
  std::string proxy;           // the proxy file whose jobs these are (the poll's key)
  double probe_interval = 60;  // status probe of a job not heard from for this long
  int max_resubmits = 3;       // site failures retried this many times, then held
  int max_jobs_per_resource = 1000;
  int max_requests_per_resource = 8;
  double linger = 3;        // seconds without jobs before exiting
  double backoff_min = 1;   // a site that does not answer is retried after this ...
  double backoff_max = 60;  // ... doubling up to this
  int64_t run_id = 0;       // tells this run's signal request ids from earlier runs'
  GridClock clock = GridClock::Real();
};

class Engine {
 public:
  Engine(boost::asio::io_context& io, EngineOptions options, SiteConnector connect,
         AgentTransport& agent, JobEndpoints& endpoints);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Starts the long poll and the probe timer. `exit` runs once when the engine stops: code 0 (no
  // jobs left), 3 (the agent went away) or 4 (the agent sent something malformed).
  void Start(std::function<void(int code, const std::string& why)> exit);
  // A callback from a job manager.
  void OnCallback(const gram::JobStatus& status);
  // A link says the site has news of the job it knows as `site_id` (a GRAM5 job manager's state
  // callback): its status is asked at once (after the probe in flight, if one is).
  void OnNews(const std::string& site_id);
  // A newer proxy for the same identity (generation `gen`): new links present it and every
  // site's delegation is refreshed in place. Returns how many sites hold a delegation.
  int OnProxyRefreshed(int64_t gen);
  // One probe tick now (the timer calls it every probe_interval / 4, 0.25 s to 15 s).
  void ProbeNow();
  void Stop();

  // For tests: a job's state (null when the engine does not hold it), and how many it holds.
  const GridState* Find(const std::string& id) const;
  size_t size() const { return jobs_.size(); }

 private:
  struct Job {
    std::string id;       // "C.P"
    uint64_t serial = 0;  // tells answers for an earlier Job of the same id from this one's
    classad::ClassAd ad;
    GridJobPlan plan;
    std::shared_ptr<const grid::JobFiles> files;  // plan's files, for links that move them
    Site* site = nullptr;
    GridState state;
    std::string site_id;  // the site's id of the job (from state.contact)
    double last_heard = 0;
    int64_t delegation_epoch = 0;  // of its site when it was last submitted or signalled
    bool news = false;  // the site has news the probe in flight may predate: ask again after it
  };

  // The agent link.
  void Poll();
  void OnPoll(Result<grid::PollResponse> reply);
  void OnPollJob(const grid::PollJob& pj);
  void Learn(const grid::PollJob& pj);
  Result<Job*> Admit(const grid::PollJob& pj);
  void Save(Job& j, grid::GridUpdate update);
  void Shutdown(int code, const std::string& why);

  // Jobs.
  void Feed(Job& j, const GridInput& in, bool drive = true);
  bool Run(Job& j, GridTask task, const GridState& before, const GridInput& in);
  void Drive(Job& j);
  void Index(Job& j, const GridState& before);
  void Forget(Job& j);
  void Heard(Job& j);
  Job* FindJob(const std::string& id, uint64_t serial);

  // Sites.
  Site* SiteFor(const GridResource& name, std::string* error);
  void DriveSite(Site& site);
  void ProxyRefused(Site& site, const Error& e);
  void Request(Job& j, SiteRequest::Op op, const std::string& suffix, bool only_pending = false);
  void Submit(Job& j);
  void Signal(Job& j);
  void OnAnswer(const std::string& id, uint64_t serial, SiteRequest::Op op, Result<SiteAnswer> a);
  std::vector<grid::ResourceReport> TakeReports();

  boost::asio::io_context& io_;
  EngineOptions options_;
  SiteConnector connect_;
  JobEndpoints& endpoints_;
  AgentLink agent_;
  std::function<void(int, const std::string&)> exit_;
  bool stopping_ = false;
  double started_ = 0;
  double empty_since_ = 0;
  uint64_t next_serial_ = 1;
  std::map<std::string, std::unique_ptr<Site>> sites_;  // by "TYPE HOST:PORT"
  std::map<std::string, Job> jobs_;                     // by "C.P"
  std::map<std::string, std::string> by_site_id_;       // site job id -> "C.P"
  // Jobs at a site before this start, not heard from since: a measurement only (the moment the
  // last is heard from is logged; bench/recovery reads it). Decides nothing.
  std::set<std::string> unheard_;
  boost::asio::steady_timer probe_timer_;
};

}  // namespace kite::gridmanager
