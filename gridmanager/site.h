// One grid resource as the gridmanager sees it (docs/architecture.md, "The grid path"): the link
// to its gatekeeper, request slots, back-off while it does not answer, the delegation its jobs
// use, and what the agent is told of it. Every request to a site goes through Site::Send.
//
// Threads: all of it runs on the engine's io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/error.h"
#include "grid/messages.h"
#include "grid/site_link.h"
#include "gridmanager/grid_job.h"
#include "gridmanager/grid_machine.h"

namespace kite::gridmanager {

// Steady seconds (back-off, probes) and unix seconds (what the agent is shown), injectable.
struct GridClock {
  std::function<double()> steady;
  std::function<double()> wall;
  static GridClock Real();
};

using grid::SiteAnswer;
using grid::SiteDone;
using grid::SiteDown;
using grid::SiteLink;
using grid::SiteRequest;
// Makes the link to a resource, presenting the current proxy (called again after a refresh).
using SiteConnector = std::function<Result<std::shared_ptr<SiteLink>>(const GridResource&)>;

struct SiteOptions {
  int max_requests = 8;     // requests in flight to the site
  int max_jobs = 1000;      // jobs with a contact there
  double backoff_min = 1;   // seconds of the first back-off; doubled per failure
  double backoff_max = 60;  // ... up to this
};

class Site {
 public:
  struct Hooks {
    std::function<void()> drive;                      // drive every job of this site
    std::function<void(const Error&)> proxy_refused;  // a delegation of our proxy was refused
    std::function<void()> report_due;                 // TakeReport has something to send
  };
  Site(boost::asio::io_context& io, GridResource name, std::shared_ptr<SiteLink> link,
       SiteOptions options, GridClock clock, Hooks hooks);

  const GridResource& name() const { return name_; }
  std::string HostPort() const { return name_.HostPort(); }

  // The one request helper: at most max_requests at once (more wait in order). An answer marks
  // the site up; no answer (SiteDown) backs it off. A commit-end's not-found is its answer (the
  // job is forgotten either way).
  void Send(SiteRequest request, SiteDone done);

  bool Down() const { return down_until_ > clock_.steady(); }
  // Whether a job's `task` can go now. When it cannot, the site arranges a later drive
  // (a delegation on its way; a finishing job frees room).
  bool Ready(GridTask task);
  // Drives the site's jobs, after refreshing its delegation when the proxy is newer.
  void Drive();
  // A new proxy (generation `credential_gen`): new connections present it; a refused
  // delegation may be asked for again.
  void ProxyRefreshed(std::shared_ptr<SiteLink> link, int64_t credential_gen);
  // The site no longer has our delegation: the next submit makes a new one.
  void ForgetDelegation() { delegation_id_.clear(); }

  const std::string& delegation_id() const { return delegation_id_; }
  bool delegation_refused() const { return delegation_refused_; }
  // Grows when the site's delegation was lost: jobs there since an older epoch must be moved to
  // the next one (signalled).
  int64_t delegation_epoch() const { return delegation_epoch_; }
  void CountJob(int delta) { active_jobs_ += delta; }
  int active_jobs() const { return active_jobs_; }

  // What the agent is shown of it (grid/update "resources"), once due.
  std::optional<grid::ResourceReport> TakeReport();

 private:
  void Start(SiteRequest request, SiteDone done);
  void MarkUp();
  void MarkDown(const Error& e);
  void Note(bool up, const std::string& error);
  void EnsureDelegation();
  void RefreshDelegation();
  void OnDelegated(const Result<SiteAnswer>& a, int64_t gen);
  void OnRefreshed(const Result<SiteAnswer>& a, int64_t gen);

  GridResource name_;
  std::shared_ptr<SiteLink> link_;  // replaced when the proxy is refreshed
  SiteOptions options_;
  GridClock clock_;
  Hooks hooks_;
  int in_flight_ = 0;
  std::deque<std::pair<SiteRequest, SiteDone>> queued_;  // waiting for a slot
  int active_jobs_ = 0;
  double down_until_ = 0;  // steady seconds
  double backoff_ = 0;
  boost::asio::steady_timer retry_timer_;

  std::string delegation_id_;
  double delegation_not_after_ = 0;
  int64_t credential_gen_ = 1;  // of the proxy we present now
  int64_t delegated_gen_ = 0;   // the proxy generation the delegation was made from
  int64_t delegation_epoch_ = 0;
  bool delegating_ = false;
  bool delegation_refused_ = false;

  bool up_ = false;
  double last_contact_ = 0;  // unix time of its last answer
  std::string last_error_;
  bool report_due_ = false;
  bool reported_up_ = false;
  double reported_contact_ = -1;
};

}  // namespace kite::gridmanager
