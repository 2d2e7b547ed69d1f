// The agent's durable job queue in SQLite: clusters, jobs, the event log and history.
//
// Job ads are stored as ClassAd text in old syntax: one row per cluster holding the attributes
// common to its jobs, one row per job holding only the job's own attributes (ProcId, JobStatus,
// per-job overrides). The agent keeps the parsed ads in memory; this class only persists them.
//
// Writes go through Begin()/Commit() so many changes share one transaction (docs/architecture.md,
// "Acknowledged means durable"). Not thread-safe: owned by the agent's event-loop thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "store/sqlite.h"

namespace kite::store {

struct JobKey {
  int cluster = 0;
  int proc = 0;
  auto operator<=>(const JobKey&) const = default;
};

struct EventRecord {
  JobKey job;
  double time = 0;   // seconds since the epoch
  int code = 0;      // HTCondor user-log event number (0 submit, 1 execute, 5 terminated...)
  std::string text;  // the event's body, as written to the user log
};

struct HistoryRecord {
  JobKey job;
  double completion = 0;  // seconds since the epoch
  std::string ad;         // the whole job ad (cluster + job attributes), old syntax
};

class JobQueueStore {
 public:
  // Opens (creating and migrating) the queue at `path`.
  static Result<std::unique_ptr<JobQueueStore>> Open(const std::string& path,
                                                     const DbOptions& options = {});
  // Opens an existing queue for reading only (Events, History, Load), beside a running agent or
  // without one. kNotFound when there is no queue at `path`; kConflict when its schema is not
  // the one this program writes.
  static Result<std::unique_ptr<JobQueueStore>> OpenReadOnly(const std::string& path);

  // Hands out a new cluster id and persists that it was handed out, so no id is ever reused.
  Result<int> ReserveClusterId();
  // Gives back `id`, handed out by ReserveClusterId and never used, when it is still the latest
  // one handed out (so the next reservation gets it again); otherwise changes nothing.
  Status ReturnClusterId(int id);

  // Reads the whole queue, clusters first (ascending id), then jobs (ascending key).
  Status Load(const std::function<void(int cluster, std::string_view ad)>& on_cluster,
              const std::function<void(JobKey, std::string_view ad)>& on_job);

  // Batched writes. REQUIRES: between Begin() and Commit().
  Status Begin();
  Status Commit();
  void Rollback();
  bool in_transaction() const { return txn_ != nullptr; }
  Status PutCluster(int cluster, std::string_view ad);
  Status DeleteCluster(int cluster);
  Status PutJob(JobKey job, std::string_view ad);  // insert or replace
  Status DeleteJob(JobKey job);
  Status AppendEvent(const EventRecord& e);
  Status AppendHistory(const HistoryRecord& h);
  // A DAG's record of one node (agent/dags.h); all of a DAG's records.
  Status PutDagNode(int dag, std::string_view node, std::string_view record);
  Status DeleteDag(int dag);
  // Drops the oldest history rows (and their events) so at most `keep` remain.
  Status TrimHistory(size_t keep);

  // Reads.
  Result<std::vector<EventRecord>> Events(JobKey job);
  // The records of DAG `dag`, in no particular order.
  Status DagNodes(int dag,
                  const std::function<void(std::string_view node, std::string_view record)>& each);
  // History, newest first; `cluster` < 0 means all; at most `limit` rows (0 = no limit). With
  // `after`, only the rows that come after it in that order (the next page of a scan).
  Status History(int cluster, int proc, size_t limit,
                 const std::function<bool(const HistoryRecord&)>& each,
                 const HistoryRecord* after = nullptr);

  Db& db() { return *db_; }

 private:
  explicit JobQueueStore(std::unique_ptr<Db> db) : db_(std::move(db)) {}
  Status PrepareAll();

  std::unique_ptr<Db> db_;
  std::unique_ptr<Transaction> txn_;
  Stmt put_cluster_, del_cluster_, put_job_, del_job_, put_event_, put_history_;
  Stmt get_events_, next_cluster_, set_next_cluster_;
  Stmt put_dag_node_, del_dag_, get_dag_;
};

}  // namespace kite::store
