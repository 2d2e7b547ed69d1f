// kite-agent: the per-user daemon that owns the job queue. `Agent` wires its parts together:
//
//   JobQueue (agent/queue.h)           every job, persisted in batched transactions
//   LocalJobs (agent/local_jobs.h)     the local universe: starts, wrappers, ends, recovery
//   GridHub (agent/grid_hub.h)         what the gridmanagers hear and report
//   GridManagerSupervisor              starting and restarting the gridmanagers
//   Waiters (agent/waiters.h)          `kite wait`
//   Dags (agent/dags.h)                DAGs: their nodes' jobs, scripts and rescue DAGs
//   the API and REST servers, the notifier, the mailer, the credential monitor
//
// One thread runs one io_context: the queue, the API handlers, timers and child reaping all run
// on it, so none of them needs a lock. Slow file system work runs on helper threads (the local
// runner, the mailer) and long work on the event loop is cut into slices (constraint evaluation,
// job starts and ends), so that every client is answered between slices.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/api.h"
#include "agent/broker.h"
#include "agent/config.h"
#include "agent/flood.h"
#include "agent/grid_hub.h"
#include "agent/queue.h"
#include "agent/waiters.h"
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
class LocalJobs;
class GridManagerSupervisor;
class Pool;
class PoolAuthority;
class PoolTlsListener;
class LocalStartd;
class Dags;

class Agent {
 public:
  explicit Agent(AgentOptions options);
  ~Agent();

  // Opens the queue, reconciles jobs that ran while the agent was down, starts listening.
  Status Start();
  // Runs until Stop() or SIGTERM/SIGINT.
  void Run();
  // Stops the agent. Running jobs go on: local ones under their wrappers, pool ones on their
  // startds -- the local one included, unless `stop_local_startd` (its jobs are then vacated).
  void Stop(bool stop_local_startd = false);
  // Answers one API request as the socket would, running the event loop until the answer is in
  // (tests drive the agent in-process with it, as the job manager's HandleNow).
  ApiResponse HandleNow(const ApiRequest& request);

  boost::asio::io_context& io() { return io_; }
  JobQueue& queue() { return *queue_; }
  store::JobQueueStore& store() { return *store_; }
  const AgentOptions& options() const { return options_; }

  // Actions from the API. Each returns how many jobs it changed; errors per job in `errors`.
  // kForceRemove: as kRemove, and a grid job leaves the queue at once instead of waiting for its
  // gridmanager to confirm the cancel at the site (condor_rm -forcex).
  enum class Action { kRemove, kForceRemove, kHold, kRelease, kVacate, kCheckpoint };
  int Act(Action action, const std::vector<Job*>& jobs, const std::string& reason,
          std::vector<std::string>* errors);
  // `kite wait` (agent/waiters.h).
  void Wait(std::vector<JobSelector> sel, double timeout, std::function<void(WaitCounts)> reply) {
    waiters_->Wait(std::move(sel), timeout, std::move(reply));
  }
  WaitCounts Count(const std::vector<JobSelector>& sel) { return waiters_->Count(sel); }

  // Holds a job for a reason of the system (policy, credentials): a running local job is stopped.
  void HoldBySystem(Job& job, const std::string& reason, int code, int subcode);
  // The credential monitor (agent/cred_monitor.h): its proxies, and the MyProxy renewal hook.
  CredentialMonitor& credential_monitor() { return *cred_monitor_; }
  // Null before Start() (tests of the API alone).
  const CredentialMonitor* credential_monitor_or_null() const { return cred_monitor_.get(); }
  bool renews_from_myproxy() const { return renewer_ != nullptr; }
  Mailer* mailer() { return mailer_.get(); }  // null when [mail] has no smtp_url

  // --- for kite-gridmanager (docs/api.md, "The gridmanager's API"; agent/grid_hub.h) ---
  using GridPollResult = GridHub::PollResult;
  using GridUpdate = GridHub::Update;
  using GridResourceReport = GridHub::ResourceReport;
  void GridPoll(std::string proxy, uint64_t since, std::string epoch, double timeout,
                std::function<void(GridPollResult)> reply) {
    grid_->Poll(std::move(proxy), since, std::move(epoch), timeout, std::move(reply));
  }
  // A gridmanager's report on one job; the job's status afterwards (grid::kStatusLeftQueue: it
  // left the queue).
  int ApplyGridUpdate(Job& job, const GridUpdate& u) { return grid_->Apply(job, u); }
  void ReportGridResource(const std::string& resource, GridResourceReport report) {
    grid_->Report(resource, std::move(report));
  }
  const std::map<std::string, GridResourceReport>& grid_resources() const {
    return grid_->resources();
  }
  // The broker (agent/broker.h): the grid sites of config.toml and their ads.
  Broker& broker() { return *broker_; }
  // Glide-in flooding (agent/flood.h): kite glidein flood.
  Flood& flood() { return *flood_; }
  // The personal pool: its slots (kite status) and the negotiator's queue.
  const Pool& pool() const { return *pool_; }
  PoolAuthority& pool_authority() { return *pool_authority_; }
  // The glide-ins' TLS listener; null before Start.
  PoolTlsListener* pool_tls() { return pool_tls_.get(); }
  // A pool credential was revoked: every startd is checked again now (Pool::RecheckAdmissions).
  void RecheckPool();
  // The DAG runner (agent/dags.h): kite dag submit / status.
  Dags& dags() { return *dags_; }
  // kite q -analyze for these jobs (agent/analyze.h).
  std::string Analyze(const std::vector<JobKey>& keys) const;

 private:
  void OnStatusChange(Job& job, bool leaving);
  void OnFlushed();
  void CommitSoon();
  void FlushNow();
  void OnChildSignal();
  void Finish(Job& job);  // retire a Completed/Removed job (and clean its spool)
  void PeriodicPolicy();
  void ArmTimer(boost::asio::steady_timer& t, double seconds, void (Agent::*fn)());
  void StartMailAndCredentials();
  void CheckCredentials();
  void CheckCredentialsSoon();

  AgentOptions options_;
  boost::asio::io_context io_;
  boost::asio::signal_set child_signals_;
  boost::asio::signal_set stop_signals_;
  boost::asio::steady_timer flush_timer_, periodic_timer_, cred_timer_;
  bool flush_armed_ = false;
  bool cred_check_posted_ = false;
  std::unique_ptr<store::JobQueueStore> store_;
  std::unique_ptr<JobQueue> queue_;
  std::unique_ptr<LocalJobs> local_;
  std::unique_ptr<GridHub> grid_;
  std::unique_ptr<Broker> broker_;
  std::unique_ptr<Flood> flood_;
  std::unique_ptr<GridManagerSupervisor> supervisor_;
  std::unique_ptr<PoolAuthority> pool_authority_;  // who may join the pool (pool_authority.h)
  std::unique_ptr<Pool> pool_;                     // the personal pool (agent/pool.h)
  std::unique_ptr<PoolTlsListener> pool_tls_;      // glide-ins dial in here (agent/pool_tls.h)
  std::unique_ptr<LocalStartd> local_startd_;
  std::unique_ptr<Dags> dags_;
  std::unique_ptr<Waiters> waiters_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<RestServer> rest_;  // on when options_.rest_listen is set
  // E-mail and the credential monitor (agent/mailer.h, notifier.h, cred_monitor.h).
  std::unique_ptr<Mailer> mailer_;
  std::unique_ptr<Notifier> notifier_;
  std::unique_ptr<CredentialMonitor> cred_monitor_;
  std::unique_ptr<ProxyRenewer> renewer_;  // [myproxy] renewal; null when not configured
};

}  // namespace kite::agent
