// The job manager's persistent tables (SQLite, one file per mapped account): jobs, the replies to
// client request ids, and delegations. Write-through: the job manager keeps the same records in
// memory and calls Put* inside a transaction before it replies or acts.
//
// Not thread-safe: owned by the job manager's event-loop thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "gram/protocol.h"
#include "store/sqlite.h"

namespace kite::gram {

struct JobRecord {
  std::string id;
  std::string owner;  // identity (subject) that submitted it; only it may see the job
  JobState state = JobState::kPendingCommit;
  int64_t seq = 0;
  JobDescription desc;
  std::string gass_url;       // current GASS base URL (a signal may change it)
  std::string delegation_id;  // current delegation (a signal may change it)
  std::string batch_id;       // empty until the batch system accepted the job
  FailureCode failure = FailureCode::kNone;
  std::string failure_message;
  std::optional<ExitInfo> exit;
  int64_t stdout_offset = 0;  // bytes acknowledged by GASS
  int64_t stderr_offset = 0;
  double created = 0;          // Unix seconds
  double commit_deadline = 0;  // when an uncommitted job is forgotten
  bool cancel_requested = false;
  int64_t signal_run = 0;  // the newest run whose signal was applied (SignalRequest::run)
};

// A reply stored under a client request id.
struct StoredReply {
  std::string op;      // "submit", "commit", ...: a repeat must be the same operation
  std::string target;  // job or delegation id
  unsigned status = 200;
  std::string body;
};

struct DelegationRecord {
  std::string id;
  std::string owner;
  double not_after = 0;
};

class JobStore {
 public:
  static Result<std::unique_ptr<JobStore>> Open(const std::string& path);

  store::Db& db() { return *db_; }

  Status PutJob(const JobRecord& job);
  Status DeleteJob(const std::string& id);  // also drops the request ids that named it
  Result<std::vector<JobRecord>> LoadJobs();

  Result<std::optional<StoredReply>> FindRequest(const std::string& owner,
                                                 const std::string& request_id);
  Status PutRequest(const std::string& owner, const std::string& request_id,
                    const StoredReply& reply, double now);
  // Forgets replies older than `before` (Unix seconds) whose job is gone.
  Status PruneRequests(double before);

  Status PutDelegation(const DelegationRecord& d);
  Result<std::vector<DelegationRecord>> LoadDelegations();

 private:
  explicit JobStore(std::unique_ptr<store::Db> db) : db_(std::move(db)) {}
  Status PrepareAll();

  std::unique_ptr<store::Db> db_;
  store::Stmt put_job_, del_job_, del_job_requests_, get_jobs_, get_request_, put_request_,
      prune_requests_, put_delegation_, get_delegations_;
};

}  // namespace kite::gram
