// A DAG node's life as data: states, events, the {state, event} -> {state, task} table, and the
// pure Apply (docs/architecture.md, "A DAG node's machine", draws it; keep both in step).
//
// Apply is the only way a node's state changes, live and after a restart alike: a restarted runner
// feeds what is stored of a node (its DONE line, its record in dag_nodes, a job of its in the
// queue) through the same Apply (RestoreInputs). The runner (agent/dags.cpp) carries out the task
// each transition names; what the table decides (another attempt, the DAG aborted, the POST
// script next) it never decides again.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace kite::dag {

struct Node;

// The values are DAGMan's (its node status file's NodeStatus; 7 there is "futile", a node not
// ready when the DAG is over, which is not a state of its own here).
enum class NodeState { kWaiting, kReady, kPre, kSubmitted, kPost, kDone, kFailed };
inline constexpr int kNodeStates = 7;
// `kite dag status`'s names: "not ready", "ready", "pre", "submitted", "post", "done", "error".
std::string_view NodeStateName(NodeState state);

enum class NodeEvent {
  // Restart: what is stored, fed in this order (RestoreInputs).
  kMarkedDone,      // a DONE line (the DAG file or its rescue DAG), or a record "done"
  kRecordedFailed,  // a record "failed"
  kRecordedPost,    // a record "post": its job ended, its POST script runs (again)
  kRecordedRetry,   // a record "retry": attempts so far (NodeInput::attempts)
  kJobQueued,       // a job of its in the queue that no record speaks of: it is queued
  // Live.
  kUnblocked,    // nothing it waits for is left (its parents are done)
  kFinalDue,     // the FINAL node, when nothing else can move
  kStart,        // the throttles let it start
  kSubmitted,    // its job is queued (or it is NOOP, or the submit failed: kJobEnded follows)
  kJobEnded,     // all its job's procs ended (NodeInput::ok, code)
  kScriptEnded,  // its PRE or POST script ended (NodeInput::code)
  // Judged, never fed (Judge turns a fed event into one of these from the node's facts).
  kStartPre,       // kStart of a node with a PRE script
  kStartJob,       // kStart of one without
  kDeferred,       // a script's DEFER status: the same script runs again later
  kPreSucceeded,   // PRE returned 0: the job next
  kPreSkipped,     // PRE returned its PRE_SKIP value: the node is done, job and POST skipped
  kPreFailedPost,  // PRE failed, and POST runs anyway (DAGMAN_ALWAYS_RUN_POST)
  kJobEndedPost,   // the job ended (well or not) and the node has a POST script
  kSucceeded,      // the node's result (its job, or its POST script, the last word): success
  kRetry,          // failed, with a RETRY left
  kFailed,         // failed for good
  kAbortDag,       // failed with its ABORT-DAG-ON value: the whole DAG stops
};
inline constexpr int kNodeEvents = 22;
std::string_view NodeEventName(NodeEvent event);  // "marked-done", "job-ended", ...

// What the runner does on a transition.
enum class NodeTask {
  kNone,
  kQueueReady,  // into the ready set (started when the throttles allow)
  kStart,       // start it at once (the FINAL node; throttles do not apply)
  kRunPre,      // its PRE script
  kSubmit,      // submit its job (or sub-DAG); the outcome is fed back as kSubmitted
  kRunLater,    // the script that asked for DEFER, after its delay
  kRunPost,     // its POST script (not recorded: a failed PRE leaves nothing to keep)
  kRecordPost,  // record "post" (its POST runs again after a restart), retire its jobs, run POST
  kDone,        // record "done", retire its jobs, unblock its children
  kRetry,       // record "retry" (attempts already counted), retire its jobs, queue it ready
  kFail,        // record "failed", retire its jobs
  kAbort,       // record "failed", retire its jobs, abort the DAG
};
std::string_view NodeTaskName(NodeTask task);

// What the node's lines in the DAG file, and the run, say that the table's judgement needs.
struct NodeFacts {
  bool pre = false, post = false;
  std::optional<int> pre_defer, post_defer;  // DEFER status of each script
  std::optional<int> pre_skip;               // PRE_SKIP
  int retries = 0;                           // RETRY n
  std::optional<int> retry_unless_exit;      // RETRY n UNLESS-EXIT v
  std::optional<int> abort_on;               // ABORT-DAG-ON v
  bool always_run_post = false;              // DAGMAN_ALWAYS_RUN_POST
  bool dag_aborted = false;                  // the DAG is aborting: no more attempts
};
NodeFacts FactsOf(const Node& node, bool always_run_post, bool dag_aborted);

// What the runner knows of a node's progress. Changed only by Apply.
struct NodeMark {
  NodeState state = NodeState::kWaiting;
  int attempts = 0;  // failed attempts so far ($RETRY of the next one)
  bool operator==(const NodeMark&) const = default;
};

struct NodeInput {
  NodeEvent event = NodeEvent::kStart;
  bool ok = false;   // kJobEnded: every proc ended well
  int code = 0;      // kJobEnded: the job's $RETURN; kScriptEnded: the script's exit status
  int attempts = 0;  // restart events: the attempts stored
};

struct NodeRule {
  std::optional<NodeState> from;  // nullopt: any state
  NodeEvent event;
  std::optional<NodeState> to;  // nullopt: the state does not change
  NodeTask task;
};
// The whole table, for documentation and tests. The first rule that matches applies.
std::span<const NodeRule> NodeTable();

struct NodeStep {
  NodeMark mark;
  NodeTask task = NodeTask::kNone;
  NodeEvent event = NodeEvent::kStart;  // the event as judged
};

// The event `in` means for a node in `mark` with `facts` (a fed event that needs judging becomes a
// judged one; others stay as they are). Pure.
NodeEvent Judge(const NodeMark& mark, const NodeFacts& facts, const NodeInput& in);

// The transition for `in`, or nullopt when the event does not apply in that state (it is ignored).
// Pure.
std::optional<NodeStep> Apply(const NodeMark& mark, const NodeFacts& facts, const NodeInput& in);

// A node's record in the queue (table dag_nodes): written when it has a result, or a POST script
// still to run, in the same transaction as the retirement of its jobs.
struct NodeRecord {
  NodeState state = NodeState::kDone;  // kDone, kFailed, kPost, or kReady for "retry"
  int attempts = 0;
  int cluster = 0;  // the job the record speaks of (0: none)
  int code = 0;     // its $RETURN
  bool operator==(const NodeRecord&) const = default;
};
// {"state":"done","attempts":0,"cluster":12,"code":0}
std::string EncodeNodeRecord(const NodeRecord& record);
// The JSON form, or the text form queues written before it ("done 0 12 0"). Malformed: an error
// that says what is wrong.
Result<NodeRecord> ParseNodeRecord(std::string_view text);

// What a restarted runner feeds Apply for one node, in order: kMarkedDone for a DONE line, the
// record's event, and kJobQueued when the queue holds a job of the node other than the record's
// (`queued_retry`: that job's DAGNodeRetry, the attempts before it).
std::vector<NodeInput> RestoreInputs(bool marked_done, const std::optional<NodeRecord>& record,
                                     std::optional<int> queued_retry);

}  // namespace kite::dag
