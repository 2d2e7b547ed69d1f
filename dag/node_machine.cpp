// A DAG node's table, Judge and Apply, and its stored record.
#include "dag/node_machine.h"

#include <array>
#include <boost/json.hpp>
#include <charconv>
#include <limits>

#include "common/strings.h"
#include "dag/dag.h"

namespace kite::dag {
namespace {

namespace json = boost::json;
using S = NodeState;
using E = NodeEvent;
using T = NodeTask;

constexpr std::optional<NodeState> kSame = std::nullopt;

// Every {state, event} not listed is ignored there.
constexpr std::array kTable = std::to_array<NodeRule>({
    // Restart: what is stored puts a node where it was (its attempts come with the event).
    {S::kWaiting, E::kMarkedDone, S::kDone, T::kNone},
    {S::kWaiting, E::kRecordedFailed, S::kFailed, T::kNone},
    {S::kWaiting, E::kRecordedPost, S::kPost, T::kRunPost},
    {S::kWaiting, E::kRecordedRetry, kSame, T::kNone},
    {S::kWaiting, E::kJobQueued, S::kSubmitted, T::kNone},
    // Not ready: its parents, or for the FINAL node everything else.
    {S::kWaiting, E::kUnblocked, S::kReady, T::kQueueReady},
    {S::kWaiting, E::kFinalDue, S::kReady, T::kStart},
    // Ready: started when the throttles allow.
    {S::kReady, E::kStartPre, S::kPre, T::kRunPre},
    {S::kReady, E::kStartJob, kSame, T::kSubmit},
    {S::kReady, E::kSubmitted, S::kSubmitted, T::kNone},
    // PRE script.
    {S::kPre, E::kDeferred, kSame, T::kRunLater},
    {S::kPre, E::kPreSucceeded, kSame, T::kSubmit},
    {S::kPre, E::kSubmitted, S::kSubmitted, T::kNone},
    {S::kPre, E::kPreSkipped, S::kDone, T::kDone},
    {S::kPre, E::kPreFailedPost, S::kPost, T::kRunPost},
    {S::kPre, E::kRetry, S::kReady, T::kRetry},
    {S::kPre, E::kFailed, S::kFailed, T::kFail},
    {S::kPre, E::kAbortDag, S::kFailed, T::kAbort},
    // Its job (or sub-DAG) queued.
    {S::kSubmitted, E::kJobEndedPost, S::kPost, T::kRecordPost},
    {S::kSubmitted, E::kSucceeded, S::kDone, T::kDone},
    {S::kSubmitted, E::kRetry, S::kReady, T::kRetry},
    {S::kSubmitted, E::kFailed, S::kFailed, T::kFail},
    {S::kSubmitted, E::kAbortDag, S::kFailed, T::kAbort},
    // POST script: its result is the node's.
    {S::kPost, E::kDeferred, kSame, T::kRunLater},
    {S::kPost, E::kSucceeded, S::kDone, T::kDone},
    {S::kPost, E::kRetry, S::kReady, T::kRetry},
    {S::kPost, E::kFailed, S::kFailed, T::kFail},
    {S::kPost, E::kAbortDag, S::kFailed, T::kAbort},
});

constexpr std::array<std::string_view, kNodeStates> kStateNames = {
    "not ready", "ready", "pre", "submitted", "post", "done", "error"};

constexpr std::array<std::string_view, kNodeEvents> kEventNames = {
    "marked-done",  "recorded-failed", "recorded-post",  "recorded-retry", "job-queued",
    "unblocked",    "final-due",       "start",          "submitted",      "job-ended",
    "script-ended", "start-pre",       "start-job",      "deferred",       "pre-succeeded",
    "pre-skipped",  "pre-failed-post", "job-ended-post", "succeeded",      "retry",
    "failed",       "abort-dag",
};

bool IsRestore(NodeEvent e) {
  return e == E::kMarkedDone || e == E::kRecordedFailed || e == E::kRecordedPost ||
         e == E::kRecordedRetry || e == E::kJobQueued;
}

// The node's result once its last step (job or POST script, or a failed PRE) is known.
NodeEvent Outcome(const NodeMark& mark, const NodeFacts& f, bool ok, int code) {
  if (ok) return E::kSucceeded;
  if (f.abort_on && code == *f.abort_on) return E::kAbortDag;
  bool unless = f.retry_unless_exit && code == *f.retry_unless_exit;
  if (mark.attempts < f.retries && !unless && !f.dag_aborted) return E::kRetry;
  return E::kFailed;
}

const NodeRule* Find(NodeState state, NodeEvent event) {
  for (const auto& r : kTable) {
    if (r.event == event && (!r.from || *r.from == state)) return &r;
  }
  return nullptr;
}

constexpr std::array<std::pair<NodeState, std::string_view>, 4> kRecordStates = {{
    {S::kDone, "done"},
    {S::kFailed, "failed"},
    {S::kPost, "post"},
    {S::kReady, "retry"},
}};

std::optional<NodeState> RecordState(std::string_view name) {
  for (auto [state, n] : kRecordStates) {
    if (n == name) return state;
  }
  return std::nullopt;
}

std::string_view RecordStateName(NodeState state) {
  for (auto [s, n] : kRecordStates) {
    if (s == state) return n;
  }
  return "retry";
}

// Negative attempts or clusters are refused by Checked, for both forms.
Result<int> IntField(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_int64())
    return Fail(ErrorCode::kInvalidInput, "\"" + std::string(key) + "\" is not an integer");
  int64_t n = v->as_int64();
  if (n > std::numeric_limits<int>::max() || n < std::numeric_limits<int>::min())
    return Fail(ErrorCode::kInvalidInput, "\"" + std::string(key) + "\" is out of range");
  return static_cast<int>(n);
}

Result<NodeRecord> Checked(NodeRecord r) {
  if (r.attempts < 0 || r.cluster < 0)
    return Fail(ErrorCode::kInvalidInput, "attempts and cluster cannot be negative");
  return r;
}

// The text form of queues written before the JSON one: "state attempts cluster code".
Result<NodeRecord> ParseOldRecord(std::string_view text) {
  // Split by hand rather than with kite::Split, which trims each piece: a record with stray
  // whitespace is refused, as the form was written (single spaces, nothing else).
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ' ') ++j;
    if (j > i) words.push_back(text.substr(i, j - i));
    i = j;
  }
  if (words.size() != 4)
    return Fail(ErrorCode::kInvalidInput, "a node record is JSON or four words");
  auto state = RecordState(words[0]);
  if (!state) return Fail(ErrorCode::kInvalidInput, "unknown node state in a record");
  int n[3] = {};
  for (int k = 0; k < 3; ++k) {
    auto w = words[k + 1];
    auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), n[k]);
    if (ec != std::errc() || end != w.data() + w.size())
      return Fail(ErrorCode::kInvalidInput, "a node record's number is malformed");
  }
  return Checked({*state, n[0], n[1], n[2]});
}

}  // namespace

std::string_view NodeStateName(NodeState state) {
  return EnumName(state, kStateNames);
}

std::string_view NodeEventName(NodeEvent event) {
  return EnumName(event, kEventNames);
}

std::string_view NodeTaskName(NodeTask task) {
  static constexpr std::array<std::string_view, 12> kNames = {
      "none",     "queue-ready", "start", "run-pre", "submit", "run-later",
      "run-post", "record-post", "done",  "retry",   "fail",   "abort",
  };
  return EnumName(task, kNames);
}

NodeFacts FactsOf(const Node& node, bool always_run_post, bool dag_aborted) {
  NodeFacts f;
  f.pre = node.pre.has_value();
  f.post = node.post.has_value();
  if (node.pre) f.pre_defer = node.pre->defer_status;
  if (node.post) f.post_defer = node.post->defer_status;
  f.pre_skip = node.pre_skip;
  f.retries = node.retries;
  f.retry_unless_exit = node.retry_unless_exit;
  f.abort_on = node.abort_on;
  f.always_run_post = always_run_post;
  f.dag_aborted = dag_aborted;
  return f;
}

std::span<const NodeRule> NodeTable() {
  return kTable;
}

NodeEvent Judge(const NodeMark& mark, const NodeFacts& f, const NodeInput& in) {
  switch (in.event) {
    case E::kStart:
      return f.pre ? E::kStartPre : E::kStartJob;
    case E::kJobEnded:
      return f.post ? E::kJobEndedPost : Outcome(mark, f, in.ok, in.code);
    case E::kScriptEnded:
      if (mark.state == S::kPre) {
        if (f.pre_defer && in.code == *f.pre_defer) return E::kDeferred;
        if (in.code == 0) return E::kPreSucceeded;
        if (f.pre_skip && in.code == *f.pre_skip) return E::kPreSkipped;
        // DAGMan's default since 8.5.4: no POST after a failed PRE unless DAGMAN_ALWAYS_RUN_POST.
        if (f.post && f.always_run_post) return E::kPreFailedPost;
        return Outcome(mark, f, false, in.code);
      }
      if (mark.state == S::kPost) {
        if (f.post_defer && in.code == *f.post_defer) return E::kDeferred;
        return Outcome(mark, f, in.code == 0, in.code);
      }
      return in.event;
    default:
      return in.event;
  }
}

std::optional<NodeStep> Apply(const NodeMark& mark, const NodeFacts& facts, const NodeInput& in) {
  NodeEvent e = Judge(mark, facts, in);
  const NodeRule* rule = Find(mark.state, e);
  if (!rule) return std::nullopt;
  NodeMark m = mark;
  if (IsRestore(e)) m.attempts = in.attempts;
  if (rule->to) m.state = *rule->to;
  if (e == E::kRetry) ++m.attempts;
  return NodeStep{m, rule->task, e};
}

std::string EncodeNodeRecord(const NodeRecord& r) {
  json::object o;
  o["state"] = RecordStateName(r.state);
  o["attempts"] = r.attempts;
  o["cluster"] = r.cluster;
  o["code"] = r.code;
  return json::serialize(o);
}

Result<NodeRecord> ParseNodeRecord(std::string_view text) {
  if (text.empty() || text.front() != '{') return ParseOldRecord(text);
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object())
    return Fail(ErrorCode::kInvalidInput, "a node record is not a JSON object");
  const auto& o = v.as_object();
  const json::value* state = o.if_contains("state");
  auto s = state && state->is_string() ? RecordState(state->as_string()) : std::nullopt;
  if (!s) return Fail(ErrorCode::kInvalidInput, "a node record's \"state\" is unknown");
  NodeRecord r;
  r.state = *s;
  auto attempts = IntField(o, "attempts");
  if (!attempts) return Fail(attempts.error());
  auto cluster = IntField(o, "cluster");
  if (!cluster) return Fail(cluster.error());
  auto code = IntField(o, "code");
  if (!code) return Fail(code.error());
  r.attempts = *attempts;
  r.cluster = *cluster;
  r.code = *code;
  return Checked(r);
}

std::vector<NodeInput> RestoreInputs(bool marked_done, const std::optional<NodeRecord>& record,
                                     std::optional<int> queued_retry) {
  std::vector<NodeInput> out;
  if (marked_done) out.push_back({.event = E::kMarkedDone});
  if (record) {
    NodeEvent e = record->state == S::kDone     ? E::kMarkedDone
                  : record->state == S::kFailed ? E::kRecordedFailed
                  : record->state == S::kPost   ? E::kRecordedPost
                                                : E::kRecordedRetry;
    out.push_back({.event = e, .code = record->code, .attempts = record->attempts});
  }
  if (queued_retry) out.push_back({.event = E::kJobQueued, .attempts = *queued_retry});
  return out;
}

}  // namespace kite::dag
