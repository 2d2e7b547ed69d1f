// The agent's DAG runner: task graphs in DAGMan's language (docs/dag.md), owned by the agent as it
// owns jobs.
//
// A DAG is a job in the queue (JobUniverse 7, HTCondor's scheduler universe, where condor_dagman
// runs); each node's job carries DAGManJobId and DAGNodeName. Nothing about a DAG lives only in
// memory: after a restart its state is derived again from
//   - the DAG file (re-read; DONE lines),
//   - the nodes' jobs in the queue (a node with a job is queued, and its job's statuses say how
//     far it got; a node's jobs stay in the queue, finished, until its result is recorded), and
//   - one record per node that has a result or a POST script still to run (table dag_nodes,
//     written in the same transaction as the job changes made before it: JobQueue::SetDagNode).
// So a node's job is submitted once per attempt and its result is taken once: the record and the
// retirement of the node's jobs go in one transaction.
//
// Not thread-safe: the agent's event loop only.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/queue.h"
#include "common/error.h"

namespace kite::dag {
struct NodeInput;
}

namespace kite::agent {

struct DagSubmitArgs {
  // The DAG files, absolute or relative to cwd: several are one DAG (condor_submit_dag a b); the
  // first names it (its rescue DAG, its .dagman.out...) and is where relative names start.
  std::vector<std::string> files;
  std::string cwd;  // the submitter's directory
  // 0: what the DAG's CONFIG file says, else no limit.
  int max_jobs = 0, max_idle = 0, max_pre = 0, max_post = 0;
  bool force = false;  // start over: an existing rescue DAG is renamed, not used
  // -AlwaysRunPost / -DontAlwaysRunPost; unset: the CONFIG file's DAGMAN_ALWAYS_RUN_POST, else
  // false (DAGMan's default: a POST script does not run after a failed PRE script).
  std::optional<bool> always_run_post;
  std::string notification;  // the DAG job's `notification` (Never, Complete, Error, Always)
  // condor_submit_dag's -append lines and -insert_sub_file (relative to cwd): submit commands for
  // the DAG's own job (`+Attr = value`, `My.Attr = value`, notification, notify_user); they win
  // over the DAG files' SET_JOB_ATTR.
  std::vector<std::string> append;
  std::string insert_sub_file;
  // -usedagdir: names in each DAG file are relative to its own directory (dag::ParseOptions).
  bool use_dag_dir = false;
  // More attributes of the DAG's job: a sub-DAG's DAGManJobId, DAGNodeName... (its parent's).
  std::vector<SubmitAttr> attrs;
  // How deep this DAG is among sub-DAGs (0: the user's); one deeper than kMaxDagDepth is refused.
  int depth = 0;
};

// Sub-DAGs may nest this deep (each level is a DAG of its own, running at once).
inline constexpr int kMaxDagDepth = 32;

struct DagSubmitted {
  int cluster = 0;
  size_t nodes = 0;
  size_t done_from_rescue = 0;  // nodes the rescue DAG (if any) says are done
  std::string rescue;           // the rescue DAG read, or ""
  std::vector<std::string> warnings;
};

// One node as `kite dag status` shows it.
struct DagNodeView {
  std::string name;
  std::string state;  // DAGMan's node states: "not ready", "ready", "pre", "submitted",
                      // "post", "done", "error"
  std::string job;    // the latest job's cluster ("12"), or ""
  int retries = 0;    // attempts that failed so far
  std::string note;   // why it failed, or ""
};

class Dags {
 public:
  struct Hooks {
    std::function<void()> commit_soon;
    std::function<void(Job&)> retire;                             // take a finished job out
    std::function<void(Job&, const std::string& reason)> remove;  // condor_rm a node's job
  };
  Dags(boost::asio::io_context& io, JobQueue& queue, Hooks hooks);
  ~Dags();

  // `kite dag submit`: parses the DAG file (and its rescue DAG), refuses it with the file and line
  // of what is wrong, or queues its job; durable when it returns.
  Result<DagSubmitted> Submit(const DagSubmitArgs& args);

  // After the queue is loaded, before anything retires jobs: rebuilds every DAG's state.
  void Recover();
  // Every status change of every job (JobQueue::OnStatusChange).
  void OnStatus(Job& job, bool leaving);
  // A finished job is about to leave the queue: true when it is a node's job whose result is not
  // recorded yet (it stays, finished, until the runner records it).
  bool KeepsForNode(const Job& job) const;
  // A child ended: true when it was one of the DAGs' scripts.
  bool Reaped(pid_t pid, int status);

  // The nodes of the DAG whose job is `cluster`; empty when there is no such DAG running.
  std::vector<DagNodeView> Nodes(int cluster) const;
  // The cluster of the running DAG read from `file` (absolute), or 0.
  int FindByFile(const std::string& file) const;
  // The clusters of the running DAGs, in order.
  std::vector<int> Running() const;

  struct Run;  // one running DAG (dags.cpp)

 private:
  void Load(Job& dag_job, bool recovering);
  void Restore(Run& run, std::vector<int>* leftovers);
  void Drive(Run& run);
  void DriveSoon(int cluster);
  // `cluster`: an id reserved for the node's job, or 0 to reserve one.
  void Start(Run& run, size_t node, int cluster = 0);
  void SubmitNode(Run& run, size_t node, int cluster = 0);
  void RunScript(Run& run, size_t node, bool pre);
  void JobEnded(Run& run, size_t node);
  void ScriptEnded(Run& run, size_t node, bool pre, int code);
  void RunLater(Run& run, size_t node);
  // The one place a node's state changes (dag/node_machine.h); Tally keeps the run's counts.
  void Step(Run& run, size_t node, const dag::NodeInput& in);
  void Tally(Run& run, size_t node, int sign);
  void Abort(Run& run, int code, const std::string& why);
  void Finish(Run& run);
  void Removed(Run& run);
  void Record(Run& run, size_t node);
  void RetireNodeJobs(Run& run, size_t node);
  void Publish(Run& run);
  void WriteNodeStatus(Run& run, bool last);
  void StatusTick(int id);
  Result<std::string> WriteRescue(Run& run);
  void Log(Run& run, const std::string& line);
  std::string BatchName(const Run& run) const;
  // JOBSTATE_LOG: one line of DAGMan's jobstate log for node `node` (or the DAG, "INTERNAL").
  void Jobstate(Run& run, size_t node, const std::string& event, const std::string& id);
  void JobstateInternal(Run& run, const std::string& what);
  void WriteDot(Run& run);

  boost::asio::io_context& io_;
  JobQueue& queue_;
  Hooks hooks_;
  std::map<int, std::unique_ptr<Run>> runs_;         // by the DAG job's cluster
  std::map<pid_t, std::pair<int, size_t>> scripts_;  // pid -> (DAG, node)
};

}  // namespace kite::agent
