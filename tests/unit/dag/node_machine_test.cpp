// A DAG node's table (dag/node_machine.h): every rule, the judgement of results, a restart at
// every state of a node's life, and the node record's forms.
#include "dag/node_machine.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace kite::dag {
namespace {

using S = NodeState;
using E = NodeEvent;
using T = NodeTask;

std::string Name(S s, E e) {
  return std::string(NodeStateName(s)) + " + " + std::string(NodeEventName(e));
}

TEST(NodeMachine, EveryRuleIsWhatApplyDoes) {
  for (const auto& rule : NodeTable()) {
    ASSERT_TRUE(rule.from) << "every rule names its state";
    NodeMark mark{.state = *rule.from, .attempts = 1};
    auto step = Apply(mark, NodeFacts{}, NodeInput{.event = rule.event, .attempts = 1});
    ASSERT_TRUE(step) << Name(*rule.from, rule.event);
    EXPECT_EQ(step->mark.state, rule.to.value_or(*rule.from)) << Name(*rule.from, rule.event);
    EXPECT_EQ(step->task, rule.task) << Name(*rule.from, rule.event);
    EXPECT_EQ(step->mark.attempts, rule.event == E::kRetry ? 2 : 1)
        << Name(*rule.from, rule.event) << ": only a retry counts an attempt";
  }
}

TEST(NodeMachine, NoTwoRulesOverlapAndNamesAreDistinct) {
  std::set<std::pair<int, int>> seen;
  for (const auto& r : NodeTable()) {
    EXPECT_TRUE(seen.insert({static_cast<int>(*r.from), static_cast<int>(r.event)}).second)
        << Name(*r.from, r.event);
  }
  std::set<std::string_view> events, states, tasks;
  for (int i = 0; i < kNodeEvents; ++i) {
    auto n = NodeEventName(static_cast<E>(i));
    EXPECT_NE(n, "?");
    EXPECT_TRUE(events.insert(n).second) << n;
  }
  for (int i = 0; i < kNodeStates; ++i) EXPECT_TRUE(states.insert(NodeStateName(S(i))).second);
  for (int i = 0; i <= static_cast<int>(T::kAbort); ++i) {
    auto n = NodeTaskName(static_cast<T>(i));
    EXPECT_NE(n, "?");
    EXPECT_TRUE(tasks.insert(n).second) << n;
  }
}

// Every state but done and error has a way out, and those two have none.
TEST(NodeMachine, OnlyDoneAndErrorAreEnds) {
  std::set<S> left;
  for (const auto& r : NodeTable()) {
    if (r.to && *r.to != *r.from) left.insert(*r.from);
  }
  for (int i = 0; i < kNodeStates; ++i) {
    S s = static_cast<S>(i);
    bool end = s == S::kDone || s == S::kFailed;
    EXPECT_EQ(left.count(s) == 0, end) << NodeStateName(s);
  }
}

TEST(NodeMachine, EventsThatDoNotApplyAreIgnored) {
  const std::vector<std::pair<S, E>> ignored = {
      {S::kDone, E::kUnblocked},      {S::kFailed, E::kJobEnded}, {S::kWaiting, E::kJobEnded},
      {S::kReady, E::kScriptEnded},   {S::kSubmitted, E::kStart}, {S::kDone, E::kRecordedPost},
      {S::kSubmitted, E::kJobQueued}, {S::kReady, E::kFinalDue},  {S::kWaiting, E::kStart},
  };
  for (auto [s, e] : ignored) EXPECT_FALSE(Apply({.state = s}, {}, {.event = e})) << Name(s, e);
}

struct JudgeCase {
  const char* what;
  NodeMark mark;
  NodeFacts facts;
  NodeInput in;
  E judged;
};

TEST(NodeMachine, JudgesResultsAsDagmanDoes) {
  NodeFacts plain;
  NodeFacts pre_post{.pre = true, .post = true};
  NodeFacts retry2{.retries = 2};
  const JudgeCase cases[] = {
      {"start with PRE", {S::kReady}, {.pre = true}, {.event = E::kStart}, E::kStartPre},
      {"start without", {S::kReady}, plain, {.event = E::kStart}, E::kStartJob},
      {"job ok", {S::kSubmitted}, plain, {E::kJobEnded, true, 0}, E::kSucceeded},
      {"job failed, POST next",
       {S::kSubmitted},
       pre_post,
       {E::kJobEnded, false, 3},
       E::kJobEndedPost},
      {"job ok, POST next", {S::kSubmitted}, pre_post, {E::kJobEnded, true, 0}, E::kJobEndedPost},
      {"job failed, no retry", {S::kSubmitted}, plain, {E::kJobEnded, false, 3}, E::kFailed},
      {"job failed, retry left", {S::kSubmitted, 1}, retry2, {E::kJobEnded, false, 3}, E::kRetry},
      {"job failed, retries used",
       {S::kSubmitted, 2},
       retry2,
       {E::kJobEnded, false, 3},
       E::kFailed},
      {"UNLESS-EXIT",
       {S::kSubmitted},
       {.retries = 2, .retry_unless_exit = 3},
       {E::kJobEnded, false, 3},
       E::kFailed},
      {"UNLESS-EXIT, another code",
       {S::kSubmitted},
       {.retries = 2, .retry_unless_exit = 4},
       {E::kJobEnded, false, 3},
       E::kRetry},
      {"ABORT-DAG-ON before retry",
       {S::kSubmitted},
       {.retries = 2, .abort_on = 3},
       {E::kJobEnded, false, 3},
       E::kAbortDag},
      {"no retry once the DAG aborts",
       {S::kSubmitted},
       {.retries = 2, .dag_aborted = true},
       {E::kJobEnded, false, 3},
       E::kFailed},
      {"PRE ok", {S::kPre}, pre_post, {.event = E::kScriptEnded, .code = 0}, E::kPreSucceeded},
      {"PRE defers",
       {S::kPre},
       {.pre = true, .pre_defer = 4},
       {.event = E::kScriptEnded, .code = 4},
       E::kDeferred},
      {"PRE_SKIP",
       {S::kPre},
       {.pre = true, .post = true, .pre_skip = 9},
       {.event = E::kScriptEnded, .code = 9},
       E::kPreSkipped},
      {"PRE fails, no POST by default",
       {S::kPre},
       pre_post,
       {.event = E::kScriptEnded, .code = 1},
       E::kFailed},
      {"PRE fails, ALWAYS_RUN_POST",
       {S::kPre},
       {.pre = true, .post = true, .always_run_post = true},
       {.event = E::kScriptEnded, .code = 1},
       E::kPreFailedPost},
      {"PRE fails, retry",
       {S::kPre},
       {.pre = true, .retries = 1},
       {.event = E::kScriptEnded, .code = 1},
       E::kRetry},
      {"POST ok after a failed job",
       {S::kPost},
       pre_post,
       {.event = E::kScriptEnded, .code = 0},
       E::kSucceeded},
      {"POST fails", {S::kPost}, pre_post, {.event = E::kScriptEnded, .code = 2}, E::kFailed},
      {"POST defers (its own DEFER)",
       {S::kPost},
       {.post = true, .pre_defer = 5, .post_defer = 6},
       {.event = E::kScriptEnded, .code = 6},
       E::kDeferred},
      {"POST's code is PRE's DEFER",
       {S::kPost},
       {.post = true, .pre_defer = 5, .post_defer = 6},
       {.event = E::kScriptEnded, .code = 5},
       E::kFailed},
      {"POST returns ABORT-DAG-ON",
       {S::kPost},
       {.post = true, .abort_on = 7},
       {.event = E::kScriptEnded, .code = 7},
       E::kAbortDag},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Judge(c.mark, c.facts, c.in), c.judged)
        << c.what << ": judged " << NodeEventName(Judge(c.mark, c.facts, c.in));
    auto step = Apply(c.mark, c.facts, c.in);
    ASSERT_TRUE(step) << c.what;
    EXPECT_EQ(step->event, c.judged) << c.what;
  }
}

// A node's life with what the runner stores along the way: the record (written by the tasks that
// write one) and whether a job of the node sits in the queue (retired by those same tasks).
struct Life {
  NodeFacts facts;
  NodeMark mark;
  std::optional<NodeRecord> record;
  int cluster = 0, next_cluster = 100;
  bool job_queued = false;
  void Feed(const NodeInput& in) {
    if (in.event == E::kSubmitted) cluster = next_cluster++;
    auto step = Apply(mark, facts, in);
    ASSERT_TRUE(step) << Name(mark.state, in.event);
    mark = step->mark;
    if (in.event == E::kSubmitted) job_queued = true;
    switch (step->task) {
      case T::kRecordPost:
      case T::kDone:
      case T::kRetry:
      case T::kFail:
      case T::kAbort:
        record = NodeRecord{mark.state, mark.attempts, cluster, in.code};
        job_queued = false;
        break;
      default:
        break;
    }
  }
  // What a restarted runner makes of what is stored: the mark, and the task it has to carry out.
  std::pair<NodeMark, T> Restart() const {
    // A stored record goes through its encoding, as the queue keeps it.
    std::optional<NodeRecord> stored;
    if (record) stored = ParseNodeRecord(EncodeNodeRecord(*record)).value();
    std::optional<int> queued;
    if (job_queued && (!record || record->cluster != cluster)) queued = mark.attempts;
    NodeMark m;
    T last = T::kNone;
    for (const auto& in : RestoreInputs(false, stored, queued)) {
      auto step = Apply(m, facts, in);
      EXPECT_TRUE(step) << Name(m.state, in.event);
      if (!step) continue;
      m = step->mark;
      last = step->task;
    }
    return {m, last};
  }
};

// Where a restart at each state of a node's life resumes: a node waiting, ready or in its PRE
// script starts over from not ready (its PRE script runs again, as DAGMan's recovery does); one
// with its job queued keeps waiting for that job; one in its POST script runs it again; results
// stay. Attempts are kept at every step.
TEST(NodeMachine, ARestartAtEveryStateResumesWhereTheNodeWas) {
  Life life;
  life.facts = {.pre = true, .post = true, .retries = 1};
  auto expect_resume = [&](S expected, T task, const char* when) {
    auto [m, t] = life.Restart();
    EXPECT_EQ(m.state, expected) << when << ": resumed in " << NodeStateName(m.state);
    EXPECT_EQ(m.attempts, life.mark.attempts) << when;
    EXPECT_EQ(t, task) << when << ": " << NodeTaskName(t);
  };
  expect_resume(S::kWaiting, T::kNone, "not ready");
  life.Feed({.event = E::kUnblocked});
  expect_resume(S::kWaiting, T::kNone, "ready");
  life.Feed({.event = E::kStart});
  ASSERT_EQ(life.mark.state, S::kPre);
  expect_resume(S::kWaiting, T::kNone, "in PRE");
  life.Feed({.event = E::kScriptEnded, .code = 0});
  life.Feed({.event = E::kSubmitted});
  ASSERT_EQ(life.mark.state, S::kSubmitted);
  expect_resume(S::kSubmitted, T::kNone, "job queued");
  life.Feed({.event = E::kJobEnded, .ok = false, .code = 2});
  ASSERT_EQ(life.mark.state, S::kPost);
  expect_resume(S::kPost, T::kRunPost, "in POST");
  life.Feed({.event = E::kScriptEnded, .code = 1});
  ASSERT_EQ(life.mark.state, S::kReady);
  ASSERT_EQ(life.mark.attempts, 1);
  expect_resume(S::kWaiting, T::kNone, "ready again after a failure");
  life.Feed({.event = E::kStart});
  life.Feed({.event = E::kScriptEnded, .code = 0});
  life.Feed({.event = E::kSubmitted});
  expect_resume(S::kSubmitted, T::kNone, "second job queued");
  life.Feed({.event = E::kJobEnded, .ok = true, .code = 0});
  life.Feed({.event = E::kScriptEnded, .code = 0});
  ASSERT_EQ(life.mark.state, S::kDone);
  expect_resume(S::kDone, T::kNone, "done");

  Life failing;
  failing.facts = {};
  failing.Feed({.event = E::kUnblocked});
  failing.Feed({.event = E::kStart});
  failing.Feed({.event = E::kSubmitted});
  failing.Feed({.event = E::kJobEnded, .ok = false, .code = 1});
  ASSERT_EQ(failing.mark.state, S::kFailed);
  auto [m, t] = failing.Restart();
  EXPECT_EQ(m.state, S::kFailed);
  EXPECT_EQ(t, T::kNone);
}

TEST(NodeMachine, ADoneLineWinsOverEverythingStored) {
  NodeMark m;
  NodeRecord post{S::kPost, 1, 12, 3};
  for (const auto& in : RestoreInputs(true, post, 2)) {
    if (auto step = Apply(m, {}, in)) m = step->mark;
  }
  EXPECT_EQ(m.state, S::kDone);
}

TEST(NodeRecord, EncodesAsJsonAndReadsTheOldTextForm) {
  for (S s : {S::kDone, S::kFailed, S::kPost, S::kReady}) {
    NodeRecord r{s, 2, 345, -1004};
    std::string text = EncodeNodeRecord(r);
    EXPECT_EQ(text.front(), '{') << text;
    auto back = ParseNodeRecord(text);
    ASSERT_TRUE(back) << text << ": " << back.error().message();
    EXPECT_EQ(*back, r) << text;
  }
  EXPECT_EQ(EncodeNodeRecord({S::kDone, 0, 12, 0}),
            R"({"state":"done","attempts":0,"cluster":12,"code":0})");
  auto old = ParseNodeRecord("post 1 23 -7");
  ASSERT_TRUE(old) << old.error().message();
  EXPECT_EQ(*old, (NodeRecord{S::kPost, 1, 23, -7}));
  auto retry = ParseNodeRecord("retry 2 0 1");
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->state, S::kReady);
}

TEST(NodeRecord, MalformedRecordsAreRefusedWithAReason) {
  const char* bad[] = {
      "",
      "done",
      "done 1 2",
      "done 1 2 3 4",
      "finished 0 1 0",
      "done x 1 0",
      "done 1 2 3x",
      "done -1 2 0",
      "done 99999999999 2 0",
      "{",
      "[]",
      R"({"state":"done","attempts":0,"cluster":1})",
      R"({"state":"ready","attempts":0,"cluster":1,"code":0})",
      R"({"state":"done","attempts":"0","cluster":1,"code":0})",
      R"({"state":"done","attempts":0,"cluster":-1,"code":0})",
      R"({"state":"done","attempts":0,"cluster":1,"code":4294967296})",
      R"({"state":7,"attempts":0,"cluster":1,"code":0})",
  };
  for (const char* text : bad) {
    auto r = ParseNodeRecord(text);
    EXPECT_FALSE(r) << "accepted: " << text;
    if (!r) {
      EXPECT_FALSE(r.error().message().empty()) << text;
    }
  }
}

}  // namespace
}  // namespace kite::dag
