// kite-jobmanager's engine: one per mapped account. Answers the protocol's requests (forwarded by
// the gatekeeper with the verified identity), keeps every job in its SQLite table, drives each job
// through the state machine (gram/job_machine.h) with a batch adapter, stages files through GASS
// and sends state-change callbacks.
//
// Threading: everything here runs on the one thread that runs `io` (the request handler, the
// periodic drive, the database). Blocking work (GASS transfers, callbacks) runs on helper threads
// and posts its result back to `io`.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "credentials/delegation.h"
#include "credentials/verify.h"
#include "gram/batch/batch_adapter.h"
#include "gram/job_machine.h"
#include "gram/job_manager_options.h"
#include "gram/job_store.h"

namespace kite::gram {

class CallbackSender;
class Stager;

// A request as the gatekeeper forwards it.
struct Request {
  std::string method;
  std::string target;
  std::string identity;      // verified subject (Kite-Identity); empty: refused
  std::string contact_base;  // https://HOST:PORT of the gatekeeper (Kite-Contact-Base)
  std::string body;
};

struct Response {
  unsigned status = 200;
  std::string body;
  bool drop = false;  // fault injection: close the connection instead of replying
};

class JobManager {
 public:
  static Result<std::unique_ptr<JobManager>> Open(boost::asio::io_context& io,
                                                  JobManagerOptions options);
  ~JobManager();

  using Reply = std::function<void(Response)>;
  // Handles one request and calls `reply` with the answer, on the io thread. A mutation is
  // written (with its request id) into the open group-commit transaction and answered only after
  // that transaction commits: every mutation arriving in one turn of the event loop shares one
  // fsync (docs/architecture.md, "Acknowledged means durable").
  void Handle(const Request& request, Reply reply);
  // Handle, then commit at once: for tests that drive the engine without an event loop.
  Response HandleNow(const Request& request);

  // Starts the periodic drive (recovers every stored job on the first pass).
  void Start();
  void Stop();
  // Something probably changed (e.g. SIGCHLD: a job's wrapper ended): drive now, not at the next
  // poll.
  void Wake() { ScheduleDrive(std::chrono::milliseconds(0)); }

  size_t job_count() const { return jobs_.size(); }

 private:
  JobManager(boost::asio::io_context& io, JobManagerOptions options);

  // Requests (job_manager.cpp).
  Response Ping();
  Response Info();  // GET /info: the site's ad (site_info.h)
  Response StartDelegation(const Request& r);
  Response CompleteDelegation(const Request& r, const std::string& id);
  Response SubmitJob(const Request& r);
  Response JobStatusOf(const Request& r, const std::string& id);
  Response JobOperation(const Request& r, const std::string& id, const std::string& op);
  // Applies a commit, cancel, commit-end or signal to `j` (a copy); true: forget the job.
  Result<bool> ChangeJob(JobRecord& j, const std::string& op, JobEvent event,
                         const SignalRequest& sig, const std::string& identity);
  // Answers a repeated request id from the table; nullopt when the id is new.
  std::optional<Response> Repeat(const std::string& owner, const std::string& request_id,
                                 std::string_view op, const std::string& target);
  Response Route(const Request& request);
  // Writes `writes` and the reply under the request id into the group-commit transaction, all or
  // nothing (a savepoint per request).
  Status Persist(const std::string& owner, const std::string& request_id, const StoredReply& reply,
                 const std::function<Status()>& writes = {});
  // Commits the group-commit transaction, then sends the replies that waited for it. Called
  // before anything acts on what the transaction holds (Drive, Flush).
  void CommitBatch();
  JobStatus StatusOf(const JobRecord& j) const;

  // Driving jobs (job_driver.cpp).
  void ScheduleDrive(std::chrono::milliseconds after);
  void Drive();
  void DriveWaiting(double now, std::vector<std::string>* forget);
  void SubmitToBatch(JobRecord& j);
  void PollBatch();
  void CancelInBatch();
  bool Apply(JobRecord& j, JobEvent e, FailureCode failure = FailureCode::kNone,
             std::string message = "");
  Status Flush();  // stores every changed job in one transaction, then sends their callbacks
  void Forget(const std::vector<std::string>& ids);
  batch::JobSpec SpecFor(const JobRecord& j) const;
  std::string JobDir(const std::string& id) const;
  std::string ControlDir(const std::string& id) const;
  Status PrepareJobDir(const JobRecord& j) const;
  std::string DelegationPath(const std::string& id) const;

  // GASS work (staging.cpp).
  bool NeedsStageIn(const JobRecord& j) const;
  bool NeedsStageOut(const JobRecord& j) const;
  bool Streams(const JobRecord& j) const;
  void StartStageIn(JobRecord& j);
  void StartOutput(JobRecord& j, bool final);

  boost::asio::io_context& io_;
  JobManagerOptions options_;
  std::unique_ptr<JobStore> store_;
  std::unique_ptr<batch::BatchAdapter> adapter_;
  std::shared_ptr<const credentials::Verifier> verifier_;
  std::unique_ptr<CallbackSender> callbacks_;
  std::unique_ptr<Stager> stager_;
  boost::asio::steady_timer timer_;
  // Expires with this object; handlers posted without a cancellable timer check it first.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  bool drive_posted_ = false;  // an immediate Drive is queued on io_
  bool timer_armed_ = false;   // timer_ has a wait pending
  bool stopped_ = false;
  std::string contact_base_;  // latest seen; contacts in callbacks use it

  std::optional<store::Transaction> batch_;                  // the open group-commit transaction
  std::vector<std::pair<Reply, Response>> waiting_replies_;  // answered after batch_ commits
  bool commit_posted_ = false;
  double last_prune_ = 0;  // when stored replies of forgotten jobs were last pruned

  static constexpr double kInfoCacheSeconds = 5;
  std::optional<batch::SiteInfo> info_;  // the batch system's last answer to Info
  double info_at_ = 0;                   // and when (Unix seconds)

  std::map<std::string, JobRecord> jobs_;
  std::set<std::string> changed_;  // jobs changed in memory since the last Flush
  std::set<std::string> notify_;   // jobs whose state changed: a callback is due after Flush
  std::set<std::string> busy_;     // jobs with GASS work in flight
  std::map<std::string, std::chrono::steady_clock::time_point> next_stream_;
  // A job that ended whose output the client's GASS server refused or failed: tried again with
  // back-off (the job is not failed, so it does not run again) until kDeliveryPatience has passed
  // since the first failure.
  struct Delivery {
    std::chrono::steady_clock::time_point first_failure;
    std::chrono::seconds backoff{1};
    int failures = 0;
  };
  static constexpr std::chrono::minutes kDeliveryPatience{30};
  static constexpr std::chrono::seconds kDeliveryBackoffMax{60};
  std::map<std::string, Delivery> delivery_;
  struct PendingDelegation {
    std::string owner;
    credentials::DelegationRequest request;
  };
  std::map<std::string, PendingDelegation> pending_delegations_;
  std::map<std::string, DelegationRecord> delegations_;
};

}  // namespace kite::gram
