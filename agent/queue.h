// The agent's job queue: every queued job in memory, every change persisted in batches.
//
// The queue is the single owner of job state. Changes mark jobs dirty and queue events; Flush()
// writes all of them in one SQLite transaction and then appends the events to the jobs' user
// logs. Callers that must not act before a change is durable (starting a job, answering the CLI)
// call Flush() first (docs/architecture.md: "Write ahead, then act", "Acknowledged means durable").
//
// Not thread-safe: used only on the agent's event-loop thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "agent/job.h"
#include "agent/job_transitions.h"
#include "agent/usage.h"
#include "common/error.h"
#include "common/exec_status.h"
#include "store/job_queue_store.h"

namespace kite::agent {

struct SubmitAttr {
  std::string name;
  std::string expr;  // ClassAd expression text
};

struct SubmitRequest {
  int cluster = 0;                             // from NewCluster()
  std::vector<SubmitAttr> common;              // attributes shared by every job
  std::vector<std::vector<SubmitAttr>> procs;  // per job: its own attributes (ProcId first)
  bool dag = false;  // the cluster is a DAG (JobUniverse 7), which only the agent submits
};

// The stored form of an ad's own attributes (not its parent's: a cluster is stored once): old
// syntax, one attribute per line, names quoted where they are not plain identifiers, so that
// every line parses back (classad::ParseOldAdSkippingErrors reads it).
std::string StoredAdText(const classad::ClassAd& ad);

// The details of a status change (JobQueue::Transition).
struct JobChange {
  std::string reason;  // hold, release, remove: recorded; requeue: a note in the user log
  int code = 0;        // hold: HoldReasonCode
  int subcode = 0;     // hold: HoldReasonSubCode
  // start: the program starts now (local universe). False: the run is placed and its program
  // starts later (the pool): RecordProgramStart counts it then.
  bool program_started = true;
};

class JobQueue {
 public:
  using Clock = std::function<double()>;  // seconds since the epoch

  // `history_max`: jobs kept in history after they leave the queue; 0 keeps all.
  JobQueue(store::JobQueueStore* store, Clock clock, size_t history_max = 0);

  // Reads the whole queue from the store. REQUIRES: the queue is empty.
  Status Load();

  Result<int> NewCluster();
  // As NewCluster, `n` ids in one commit (ids not submitted in the end are never used).
  Result<std::vector<int>> NewClusters(int n);
  // A cluster id from NewCluster that will not be used (the submit file did not parse): the next
  // NewCluster hands it out again when no other was handed out since. Ids ever used never return.
  Status ReturnCluster(int id);
  // Whether `id` was handed out by NewCluster and has not been submitted (nor returned) yet.
  bool IsReserved(int id) const { return reserved_.contains(id); }
  // Adds a whole cluster, or nothing: a malformed expression or a cluster id that was never handed
  // out fails without changing anything. Durable when it returns (it flushes), unless `durable`
  // is false: then the cluster is written by the next Flush, in the same transaction as what
  // else is pending (a DAG's node jobs; nothing acts on a job before its submit is stored, as
  // "Write ahead, then act" says, so a submit lost in a crash never ran).
  Result<int> Submit(const SubmitRequest& req, bool durable = true);

  Job* Find(JobKey key);
  Cluster* FindCluster(int id);
  const std::map<JobKey, Job>& jobs() const { return jobs_; }
  std::map<JobKey, Job>& jobs() { return jobs_; }
  const std::map<int, Cluster>& clusters() const { return clusters_; }

  // The one place a job's status changes after its submit: checks the table of
  // agent/job_transitions.h, sets JobStatus and EnteredCurrentStatus, records the event in the
  // event log and the user log, marks the job dirty. When the table refuses the event, fails
  // (kConflict, with condor_hold's kind of reason) and changes nothing.
  using Change = JobChange;
  Status Transition(Job& job, JobEvent event, const Change& change = {});
  // Transition, spelt out per event.
  Status MarkRunning(Job& job, bool program_started = true);
  // The program of the pool run `run` started (its startd said so): NumJobStarts, JobRunCount,
  // the start dates and the execute event (001), once per run whatever is said again after a
  // restart (the run counted is kept in KiteStartedRun).
  void RecordProgramStart(Job& job, const std::string& run);
  static bool ProgramStartRecorded(const Job& job, const std::string& run);
  Status SetIdle(Job& job, const std::string& why);  // requeue (after a failed or lost run)
  Status Hold(Job& job, const std::string& reason, int code, int subcode = 0);
  Status Release(Job& job, const std::string& reason);
  Status MarkRemoved(Job& job, const std::string& reason);
  Status MarkCompleted(Job& job);
  // Its startd's owner policy suspended the run / let it go on (user log 010 / 011;
  // TotalSuspensions, LastSuspensionTime, CumulativeSuspensionTime as in HTCondor).
  Status Suspend(Job& job, const std::string& why);
  Status Continue(Job& job);
  // The exit attributes of a run that ended; the status is left to Transition.
  void MarkExited(Job& job, const ExecStatus& st);
  // Moves a Completed or Removed job to history and out of the queue. `job` is invalid after.
  void Retire(Job& job);
  // An event that only goes into the event log and the user log (e.g. a note after a restart).
  void AddEvent(Job& job, int code, const std::string& body);

  // A running job's use so far (agent/usage.h): CPU seconds of this run as they are, memory as
  // the largest seen in any run (HTCondor's ResidentSetSize, ImageSize). Marks the job dirty only
  // on change, and says whether it did.
  bool RecordUsage(Job& job, const Usage& usage);
  // Sets an attribute on the job's own ad and marks it dirty.
  void SetAttr(Job& job, std::string_view name, classad::ExprPtr value);

  // A DAG's record of one node (agent/dags.h), written with the next flush, in the same
  // transaction as the job changes made before it; ForgetDag drops all of a DAG's records.
  void SetDagNode(int dag, const std::string& node, std::string record);
  void ForgetDag(int dag);
  // The stored records of a DAG (what the last flush wrote).
  Status DagNodes(int dag,
                  const std::function<void(std::string_view node, std::string_view record)>& each) {
    return store_->DagNodes(dag, each);
  }

  // Writes every pending change in one transaction, with whatever `also` writes (called inside
  // it, after the changes). On failure nothing is lost from memory and the changes stay pending
  // for the next attempt.
  Status Flush(const std::function<Status()>& also = {});
  bool has_pending() const {
    return !dirty_.empty() || !events_.empty() || !retired_.empty() || !dag_writes_.empty();
  }

  // The whole ad (cluster attributes overlaid by the job's) in old ClassAd syntax.
  std::string FlatText(const Job& job) const;
  double Now() const { return clock_(); }

  // Counts since the queue was opened (for the REST endpoint's /metrics).
  struct Stats {
    uint64_t submitted = 0;     // jobs submitted
    uint64_t completed = 0;     // jobs that reached Completed
    uint64_t removed = 0;       // jobs that reached Removed
    uint64_t commits = 0;       // transactions committed by Flush()
    double commit_seconds = 0;  // time spent in those Flush() calls, writing and committing
  };
  const Stats& stats() const { return stats_; }

  // Runs `fn` after each successful flush (for waiters, notifiers).
  void OnFlushed(std::function<void()> fn) { on_flushed_.push_back(std::move(fn)); }
  // Runs `fn` whenever a job enters the queue, changes status, or (leaving = true) leaves it.
  void OnStatusChange(std::function<void(Job&, bool leaving)> fn) { on_status_ = std::move(fn); }

 private:
  struct PendingEvent {
    store::EventRecord record;
    std::string user_log;  // empty: the job names no log
    std::string dag_log;   // a DAG node's: its DAG's nodes log (DAGManNodesLog), or empty
  };
  struct Retired {
    JobKey key;
    store::HistoryRecord history;
    bool cluster_gone;
  };
  void SetStatus(Job& job, int status);
  void EndSuspension(Job& job);
  void RecordStart(Job& job);
  static ExecStatus ExitOf(const Job& job);
  void MarkDirty(Job& job);
  Job& AddJob(Cluster& c, JobKey key, classad::ClassAd ad);
  void HoldDamaged(Job& job, const std::string& why);
  Status FlushInTransaction();

  store::JobQueueStore* store_;
  Clock clock_;
  size_t history_max_;
  std::map<int, Cluster> clusters_;
  std::map<JobKey, Job> jobs_;
  std::set<int> reserved_;  // cluster ids handed out by NewCluster and not yet submitted
  std::vector<JobKey> dirty_;
  std::vector<PendingEvent> events_;
  std::vector<Retired> retired_;
  // DAG node records in the order they were set; an empty node name forgets the whole DAG.
  struct DagWrite {
    int dag;
    std::string node, record;
  };
  std::vector<DagWrite> dag_writes_;
  std::vector<std::function<void()>> on_flushed_;
  std::function<void(Job&, bool)> on_status_;
  Stats stats_;
};

}  // namespace kite::agent
