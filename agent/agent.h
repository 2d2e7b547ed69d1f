// kite-agent: the per-user daemon that owns the job queue and runs local-universe jobs.
//
// One thread runs one io_context: the queue, the API handlers, timers and child reaping all run on
// it, so none of them needs a lock. Slow work (formatting a huge listing) is still done here; it is
// bounded by the size of the queue and measured in bench/.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/config.h"
#include "agent/local_runner.h"
#include "agent/queue.h"
#include "common/exec_status.h"
#include "grid/messages.h"
#include "store/job_queue_store.h"

namespace kite::agent {

class ApiServer;
class RestServer;
class CredentialMonitor;
class ProxyRenewer;
class Mailer;
class Notifier;

// Counts for `kite wait`: how many of the asked-for jobs are where.
struct WaitCounts {
  int total = 0, done = 0, idle = 0, running = 0, held = 0, missing = 0;
  std::vector<std::string> missing_ids;
};

class Agent {
 public:
  explicit Agent(AgentOptions options);
  ~Agent();

  // Opens the queue, reconciles jobs that ran while the agent was down, starts listening.
  Status Start();
  // Runs until Stop() or SIGTERM/SIGINT.
  void Run();
  void Stop();

  boost::asio::io_context& io() { return io_; }
  JobQueue& queue() { return *queue_; }
  store::JobQueueStore& store() { return *store_; }
  const AgentOptions& options() const { return options_; }

  // Actions from the API. Each returns how many jobs it changed; errors per job in `errors`.
  // kForceRemove: as kRemove, and a grid job leaves the queue at once instead of waiting for its
  // gridmanager to confirm the cancel at the site (condor_rm -forcex).
  enum class Action { kRemove, kForceRemove, kHold, kRelease };
  int Act(Action action, const std::vector<Job*>& jobs, const std::string& reason,
          std::vector<std::string>* errors);
  // Registers a long-poll waiter: `reply` runs after the next queue change or after `timeout`.
  void Wait(std::vector<JobSelector> sel, double timeout, std::function<void(WaitCounts)> reply);
  WaitCounts Count(const std::vector<JobSelector>& sel);

  // Called after any change that may let a job start.
  void Schedule();

  // Holds a job for a reason of the system (policy, credentials): a running local job is stopped.
  void HoldBySystem(Job& job, const std::string& reason, int code, int subcode);
  // The credential monitor (agent/cred_monitor.h): its proxies, and the MyProxy renewal hook.
  CredentialMonitor& credential_monitor() { return *cred_monitor_; }
  // Null before Start() (tests of the API alone).
  const CredentialMonitor* credential_monitor_or_null() const { return cred_monitor_.get(); }
  bool renews_from_myproxy() const { return renewer_ != nullptr; }
  Mailer* mailer() { return mailer_.get(); }  // null when [mail] has no smtp_url

  // --- for kite-gridmanager (docs/api.md, "The gridmanager's API") ---
  struct GridPollResult {
    std::string epoch;         // changes when the agent restarts
    uint64_t generation = 0;   // pass back as `since`
    std::vector<JobKey> jobs;  // grid jobs of the proxy changed since `since`
    std::vector<JobKey> left;  // grid jobs of the proxy that left the queue since `since`
  };
  // Long poll: answers once a grid job of `proxy` changed after `since` (at once when `epoch`
  // is not this agent's, with every job that needs a gridmanager), or after `timeout`.
  void GridPoll(std::string proxy, uint64_t since, std::string epoch, double timeout,
                std::function<void(GridPollResult)> reply);
  // A gridmanager's report on one job (docs/api.md, "The gridmanager's API"). Returns the job's
  // status afterwards (grid::kStatusLeftQueue: it left the queue).
  int ApplyGridUpdate(Job& job, const grid::GridUpdate& u);
  // A gridmanager's report on a grid resource ("HOST:PORT"), kept (the latest) for the REST
  // endpoint's /api/v1/resources and /metrics.
  struct GridResourceReport {
    bool reachable = false;
    double last_contact = 0;  // unix time of its last answer; 0: none yet
    std::string last_error;   // why it was last unreachable
    double reported = 0;      // unix time the report arrived
  };
  void ReportGridResource(const std::string& resource, GridResourceReport report) {
    grid_resources_[resource] = std::move(report);
  }
  const std::map<std::string, GridResourceReport>& grid_resources() const {
    return grid_resources_;
  }

 private:
  void ArmFlush();
  void FlushNow();
  void StartIdleJobs();
  void OnChildSignal();
  void HandleExit(Job& job, const Result<ExecStatus>& outcome);
  void Finish(Job& job);  // retire a Completed/Removed job and clean its spool
  void Recover();
  void PollAdopted();
  void PeriodicPolicy();
  void EscalateKills();
  void OnStatusChange(Job& job);
  void AnswerWaiters();
  void AnswerGridWaiters();
  GridPollResult CollectGrid(const std::string& proxy, uint64_t since);
  void EnsureGridManagers();
  void ReapGridManager(pid_t pid, int status);
  bool NeedsGridManager(const Job& j) const;
  std::string ProxyOf(const Job& j) const;
  void CompleteRun(Job& job, const ExecStatus& outcome);
  void ArmTimer(boost::asio::steady_timer& t, double seconds, void (Agent::*fn)());

  AgentOptions options_;
  boost::asio::io_context io_;
  boost::asio::signal_set child_signals_;
  boost::asio::signal_set stop_signals_;
  boost::asio::steady_timer flush_timer_, periodic_timer_, adopt_timer_, kill_timer_;
  bool flush_armed_ = false;
  bool schedule_posted_ = false;
  std::unique_ptr<store::JobQueueStore> store_;
  std::unique_ptr<JobQueue> queue_;
  std::unique_ptr<LocalRunner> runner_;
  std::unique_ptr<ApiServer> api_;
  std::vector<std::string> base_env_;
  std::set<JobKey> runnable_;                   // idle local-universe jobs
  std::unordered_map<pid_t, JobKey> children_;  // wrapper pid -> job
  int running_local_ = 0;
  struct Waiter {
    std::vector<JobSelector> sel;
    std::function<void(WaitCounts)> reply;
    std::shared_ptr<boost::asio::steady_timer> timer;
  };
  std::vector<std::shared_ptr<Waiter>> waiters_;

  // Grid jobs and their gridmanagers.
  std::set<JobKey> grid_jobs_;
  uint64_t grid_gen_ = 0;
  // Grid jobs that left the queue other than by their gridmanager's word (kite rm of a job not yet
  // at a site, rm --forcex): its gridmanager must stop working on them. Kept kGridLeftKeep s.
  struct GridLeft {
    std::string proxy;
    uint64_t gen = 0;
    double when = 0;
  };
  std::map<JobKey, GridLeft> grid_left_;
  std::string grid_epoch_;
  bool in_grid_update_ = false;  // changes reported by a gridmanager are not echoed back to it
  bool grid_check_ = false;      // something changed that may need a gridmanager started
  struct GridWaiter {
    std::string proxy;
    uint64_t since = 0;
    std::function<void(GridPollResult)> reply;
    std::shared_ptr<boost::asio::steady_timer> timer;
  };
  std::vector<std::shared_ptr<GridWaiter>> grid_waiters_;
  struct GridManagerProc {
    pid_t pid = 0;
    double started = 0;
    double backoff = 0;
    double next_start = 0;
  };
  std::map<std::string, GridManagerProc> gridmanagers_;  // by proxy file
  boost::asio::steady_timer grid_timer_;

  // The REST status endpoint (on when options_.rest_listen is set) and what it shows.
  std::unique_ptr<RestServer> rest_;
  std::map<std::string, GridResourceReport> grid_resources_;
  // E-mail and the credential monitor (agent/mailer.h, notifier.h, cred_monitor.h).
  std::unique_ptr<Mailer> mailer_;
  std::unique_ptr<Notifier> notifier_;
  std::unique_ptr<CredentialMonitor> cred_monitor_;
  std::unique_ptr<ProxyRenewer> renewer_;  // [myproxy] renewal; null when not configured
  boost::asio::steady_timer cred_timer_;
  bool cred_check_posted_ = false;
  void StartMailAndCredentials();
  void CheckCredentials();
  void CheckCredentialsSoon();
};

}  // namespace kite::agent
