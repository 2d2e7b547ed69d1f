// The grid job's machine: every rule of the table, the shape of the table (no dead ends, no
// request that can hang), the paths a job takes, and how site news is judged.
#include "gridmanager/grid_machine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "grid/codes.h"
#include "gridmanager/reports.h"

namespace kite::gridmanager {
namespace {

using P = GridPhase;
using E = GridEvent;
using T = GridTask;

// A job as the agent describes it: its JobStatus, and whether the broker moves it (Idle only).
struct Agentside {
  int status;
  bool moving = false;
  std::string Name() const { return std::to_string(status) + (moving ? " moving" : ""); }
};
const Agentside kStatuses[] = {{kite::kIdle},      {kite::kRunning}, {kite::kRemoved},
                               {kite::kCompleted}, {kite::kHeld},    {kite::kIdle, true}};
const Agentside kMoving{kite::kIdle, true};

gram::JobStatus Site(gram::JobState state, int64_t seq) {
  gram::JobStatus s;
  s.job_id = "0123456789abcdef";
  s.contact = "https://site:1/jobs/0123456789abcdef";
  s.state = state;
  s.seq = seq;
  if (state == gram::JobState::kDone) s.exit = gram::ExitInfo{false, 0};
  if (state == gram::JobState::kFailed) s.failure = gram::FailureCode::kBatchLost;
  return s;
}

// An input that is `event` as Apply judges it, for a state that has heard nothing yet.
GridInput InputFor(E event) {
  GridInput in{.event = event, .status = kite::kIdle};
  switch (event) {
    case E::kSubmitted:
    case E::kReplyPending:
    case E::kNewsPending:
      in.site = Site(gram::JobState::kPendingCommit, 1);
      break;
    case E::kReplyCommitted:
    case E::kNewsCommitted:
      in.site = Site(gram::JobState::kActive, 2);
      break;
    case E::kReplyEnded:
    case E::kNewsEnded:
    case E::kQueueFinal:
      in.site = Site(gram::JobState::kDone, 3);
      break;
    case E::kQueueContact:
      in.contact = "https://site:1/jobs/0123456789abcdef";
      break;
    case E::kRefused:
    case E::kProxyRefused:
      in.reason = "refused";
      in.hold_code = kite::kHoldGridError;
      break;
    default:
      break;
  }
  return in;
}

std::vector<P> AllPhases() {
  std::vector<P> out;
  for (int i = 0; i < kGridPhases; ++i) out.push_back(static_cast<P>(i));
  return out;
}

// The rule Apply uses for {phase, event, status}: the first that matches.
// A job being moved (kWishMove) takes its own rules first, then those of a job that runs.
const GridRule* RuleFor(P phase, E event, Agentside a) {
  Wish wish = WishOf(a.status, a.moving);
  for (const auto& r : GridTable()) {
    if ((!r.from || *r.from == phase) && r.event == event && (r.wishes & wish)) return &r;
  }
  if (wish == kWishMove) return RuleFor(phase, event, {kite::kIdle});
  return nullptr;
}

TEST(GridMachine, EveryRuleIsWhatApplyDoes) {
  for (const auto& rule : GridTable()) {
    std::vector<P> phases = rule.from ? std::vector<P>{*rule.from} : AllPhases();
    int used = 0;
    for (P phase : phases) {
      for (Agentside a : kStatuses) {
        if (RuleFor(phase, rule.event, a) != &rule) continue;  // another rule comes first
        ++used;
        GridState s{.phase = phase, .status = a.status, .moving = a.moving};
        GridInput in = InputFor(rule.event);
        if (rule.event == E::kStatus || rule.event == E::kSaved) {
          in.status = a.status;
          in.moving = a.moving;
        }
        auto step = Apply(s, in);
        std::string what = std::string(PhaseName(phase)) + " + " +
                           std::string(EventName(rule.event)) + " (status " + a.Name() + ")";
        ASSERT_TRUE(step) << what;
        EXPECT_EQ(step->state.phase, rule.to.value_or(phase)) << what;
        EXPECT_EQ(step->task, rule.task) << what;
        EXPECT_EQ(step->event, rule.event) << what;
      }
    }
    EXPECT_GT(used, 0) << "a rule no case reaches: " << EventName(rule.event);
  }
}

TEST(GridMachine, NoTwoRulesOverlap) {
  std::set<std::tuple<int, int, unsigned>> seen;
  for (const auto& r : GridTable()) {
    for (P p : r.from ? std::vector<P>{*r.from} : AllPhases()) {
      for (unsigned w : {kWishRun, kWishHold, kWishRemove, kWishMove}) {
        if (!(r.wishes & w)) continue;
        bool fresh = seen.insert({static_cast<int>(p), static_cast<int>(r.event), w}).second;
        // The any-phase rules (status, left) come first and are the only ones for their events.
        EXPECT_TRUE(fresh) << PhaseName(p) << " + " << EventName(r.event);
      }
    }
  }
}

// Phases a request is out in: each must be left by any answer, for every status.
const std::map<P, std::vector<E>> kRequestPhases = {
    {P::kSubmitting, {E::kSubmitted, E::kNotFound, E::kSiteDown, E::kRefused}},
    {P::kCommitting,
     {E::kReplyPending, E::kReplyCommitted, E::kReplyEnded, E::kNotFound, E::kConflict,
      E::kSiteDown, E::kRefused}},
    {P::kProbing,
     {E::kReplyPending, E::kReplyCommitted, E::kReplyEnded, E::kNotFound, E::kConflict,
      E::kSiteDown, E::kRefused}},
    {P::kSignalling,
     {E::kReplyPending, E::kReplyCommitted, E::kReplyEnded, E::kNotFound, E::kConflict,
      E::kSiteDown, E::kRefused}},
    {P::kCancelling,
     {E::kReplyPending, E::kReplyCommitted, E::kReplyEnded, E::kNotFound, E::kConflict,
      E::kSiteDown, E::kRefused}},
    {P::kEnding, {E::kForgotten, E::kConflict, E::kSiteDown, E::kRefused}},
    {P::kEndingCancelled, {E::kForgotten, E::kConflict, E::kSiteDown, E::kRefused}},
};
const std::set<P> kSavingPhases = {P::kSavingContact, P::kSavingFinal, P::kReporting};

TEST(GridMachine, EveryAnswerEndsTheRequestUnderWay) {
  for (const auto& [phase, answers] : kRequestPhases) {
    for (E e : answers) {
      for (Agentside a : kStatuses) {
        auto step =
            Apply(GridState{.phase = phase, .status = a.status, .moving = a.moving}, InputFor(e));
        ASSERT_TRUE(step) << PhaseName(phase) << " + " << EventName(e) << " " << a.Name();
        EXPECT_NE(step->state.phase, phase) << PhaseName(phase) << " + " << EventName(e);
      }
    }
    EXPECT_EQ(NextAction(GridState{.phase = phase}), T::kNone) << PhaseName(phase);
  }
}

TEST(GridMachine, WritesAheadWaitForTheQueueAndNothingElse) {
  for (P phase : kSavingPhases) {
    for (Agentside a : kStatuses) {
      GridState s{.phase = phase, .status = a.status, .moving = a.moving};
      EXPECT_EQ(NextAction(s), T::kNone) << PhaseName(phase);
      EXPECT_FALSE(Apply(s, InputFor(E::kDrive))) << PhaseName(phase);
      auto saved = Apply(s, GridInput{.event = E::kSaved, .status = a.status, .moving = a.moving});
      ASSERT_TRUE(saved) << PhaseName(phase);
      EXPECT_NE(saved->state.phase, phase);
      auto left = Apply(s, GridInput{.event = E::kLeft});
      ASSERT_TRUE(left);
      EXPECT_EQ(left->task, T::kForget);
    }
  }
}

// Every phase can be reached from idle, and idle (or forgetting the job) from every phase.
TEST(GridMachine, NoPhaseIsADeadEnd) {
  std::map<P, std::set<P>> next;
  for (const auto& r : GridTable()) {
    if (!r.from || !r.to) continue;
    next[*r.from].insert(*r.to);
  }
  auto reach = [&](P from) {
    std::set<P> seen{from};
    std::vector<P> todo{from};
    while (!todo.empty()) {
      P p = todo.back();
      todo.pop_back();
      for (P q : next[p]) {
        if (seen.insert(q).second) todo.push_back(q);
      }
    }
    return seen;
  };
  EXPECT_EQ(reach(P::kIdle).size(), static_cast<size_t>(kGridPhases));
  for (P p : AllPhases()) EXPECT_TRUE(reach(p).count(P::kIdle)) << PhaseName(p);
}

TEST(GridMachine, NamesAreDistinct) {
  std::set<std::string_view> phases, events;
  for (P p : AllPhases()) EXPECT_TRUE(phases.insert(PhaseName(p)).second);
  for (int i = 0; i < kGridEvents; ++i) {
    EXPECT_TRUE(events.insert(EventName(static_cast<E>(i))).second);
    EXPECT_NE(EventName(static_cast<E>(i)), "?");
  }
  EXPECT_EQ(PhaseName(P::kSavingContact), "saving-contact");
}

// Feeds `events` from `s`, checking each task; returns the state reached.
GridState Walk(GridState s, const std::vector<std::pair<GridInput, T>>& events) {
  for (const auto& [in, task] : events) {
    auto step = Apply(s, in);
    EXPECT_TRUE(step) << PhaseName(s.phase) << " + " << EventName(in.event);
    if (!step) return s;
    EXPECT_EQ(step->task, task) << PhaseName(s.phase) << " + " << EventName(in.event);
    s = step->state;
  }
  return s;
}

GridInput Saved(int status) {
  return GridInput{.event = E::kSaved, .status = status};
}

TEST(GridMachine, ATypeWithoutACommitStepGoesFromTheStoredContactToCommitted) {
  GridState s = Walk(GridState{.commits = false}, {{InputFor(E::kDrive), T::kSubmit},
                                                   {InputFor(E::kSubmitted), T::kSaveContact},
                                                   {Saved(kite::kIdle), T::kNone}});
  EXPECT_EQ(s.phase, P::kSubmitted);
  EXPECT_EQ(NextAction(s), T::kReport) << "no commit is sent";
  auto step = Apply(s, InputFor(E::kDrive));
  ASSERT_TRUE(step);
  EXPECT_EQ(step->event, E::kNoCommit);
  EXPECT_EQ(step->state.phase, P::kCommitted);
  EXPECT_EQ(step->task, T::kReport);
  // Held or removed before that drive: cancelled at the site, as a job of any type.
  for (Agentside a : {Agentside{kite::kHeld}, Agentside{kite::kRemoved}, kMoving}) {
    GridState stop = s;
    stop.status = a.status;
    stop.moving = a.moving;
    auto c = Apply(stop, InputFor(E::kDrive));
    ASSERT_TRUE(c) << a.Name();
    EXPECT_EQ(c->state.phase, P::kCancelling) << a.Name();
    EXPECT_EQ(c->task, T::kCancel) << a.Name();
  }
  // A type with one still waits for its commit.
  s.commits = true;
  EXPECT_EQ(NextAction(s), T::kCommit);
}

// A site's own word for a state (ARC's) is reported when it changes, also within one of Kite's
// states (QUEUING and SUBMITTING are both pending), and cleared with the attempt.
TEST(GridMachine, TheSitesOwnWordForTheStateIsReportedWhenItChanges) {
  GridState s = Walk(GridState{.commits = false}, {{InputFor(E::kDrive), T::kSubmit},
                                                   {InputFor(E::kSubmitted), T::kSaveContact},
                                                   {Saved(kite::kIdle), T::kNone}});
  auto news = [](gram::JobState state, int64_t seq, std::string word) {
    gram::JobStatus st = Site(state, seq);
    st.site_state = std::move(word);
    return st;
  };
  auto step = Apply(s, SiteNews(news(gram::JobState::kPending, 3, "SUBMITTING"), false));
  ASSERT_TRUE(step);
  auto u = ReportUpdate("1.0", s, step->state);
  ASSERT_TRUE(u);
  EXPECT_NE(std::find(u->set.begin(), u->set.end(),
                      grid::AttrChange{grid::GridAttr::kJobSiteStatus, std::string("SUBMITTING")}),
            u->set.end());
  s = step->state;
  step = Apply(s, SiteNews(news(gram::JobState::kPending, 4, "QUEUING"), false));
  ASSERT_TRUE(step);
  EXPECT_EQ(step->state.reported_site, "QUEUING");
  u = ReportUpdate("1.0", s, step->state);
  ASSERT_TRUE(u) << "a new word within one of Kite's states is news";
  s = step->state;
  step = Apply(s, SiteNews(news(gram::JobState::kPending, 5, "QUEUING"), false));
  ASSERT_TRUE(step);
  EXPECT_FALSE(ReportUpdate("1.0", s, step->state)) << "the same word again is not";
  // Kite's own sites have no word of their own: nothing of it is set.
  GridState kite = Walk(
      GridState{}, {{InputFor(E::kDrive), T::kSubmit}, {InputFor(E::kSubmitted), T::kSaveContact}});
  for (const auto& c : SaveContactUpdate("1.0", kite, "kite h:1").set) {
    EXPECT_NE(c.attr, grid::GridAttr::kJobSiteStatus);
  }
}

TEST(GridMachine, TheNormalPathStoresEachStepBeforeTheNext) {
  GridState s = Walk(
      GridState{}, {{InputFor(E::kDrive), T::kSubmit}, {InputFor(E::kSubmitted), T::kSaveContact}});
  EXPECT_EQ(s.phase, P::kSavingContact);
  EXPECT_EQ(s.contact, "https://site:1/jobs/0123456789abcdef");
  EXPECT_EQ(s.reported, "pending-commit");
  EXPECT_EQ(NextAction(s), T::kNone);  // no commit before the contact is stored
  s = Walk(s, {{Saved(kite::kIdle), T::kNone},
               {InputFor(E::kDrive), T::kCommit},
               {SiteNews(Site(gram::JobState::kActive, 2), true), T::kReport}});
  EXPECT_EQ(s.phase, P::kCommitted);
  EXPECT_EQ(s.status, kite::kRunning);  // `running` goes with the report
  EXPECT_EQ(NextAction(s), T::kNone);   // callbacks and probes bring news
  s = Walk(s, {{SiteNews(Site(gram::JobState::kDone, 4), false), T::kSaveFinal}});
  EXPECT_EQ(s.phase, P::kSavingFinal);
  ASSERT_TRUE(s.final);
  EXPECT_EQ(s.final->state, gram::JobState::kDone);
  EXPECT_EQ(NextAction(s), T::kNone);  // no commit-end before the end is stored
  s = Walk(s, {{Saved(kite::kRunning), T::kNone},
               {InputFor(E::kDrive), T::kCommitEnd},
               {InputFor(E::kForgotten), T::kReportEnd}});
  EXPECT_EQ(s.phase, P::kReporting);
  EXPECT_EQ(s.attempt, 1);
  EXPECT_TRUE(s.contact.empty());
  EXPECT_EQ(DecideEnd(s, 3), EndOutcome::kExited);
  s = Walk(s, {{Saved(kite::kIdle), T::kNone}});  // on_exit_remove = false: again
  EXPECT_EQ(s.phase, P::kIdle);
  EXPECT_FALSE(s.final);
  EXPECT_EQ(NextAction(s), T::kSubmit);
}

TEST(GridMachine, ARestartRebuildsFromTheQueueThroughApply) {
  auto rebuild = [](const grid::StoredGridAttrs& stored) {
    GridState s{.status = kite::kRunning, .attempt = stored.attempt};
    for (const auto& in : RestoreInputs(stored)) {
      auto step = Apply(s, in);
      EXPECT_TRUE(step) << EventName(in.event);
      if (step) s = step->state;
    }
    return s;
  };
  EXPECT_EQ(rebuild({}).phase, P::kIdle);
  GridState at_site = rebuild({.attempt = 2, .job_id = "https://site:1/jobs/x"});
  EXPECT_EQ(at_site.phase, P::kReconnect);
  EXPECT_EQ(at_site.contact, "https://site:1/jobs/x");
  EXPECT_EQ(NextAction(at_site), T::kSignal);
  GridState ended = rebuild({.attempt = 1,
                             .job_id = "https://site:1/jobs/x",
                             .job_status = "failed",
                             .final = true,
                             .failure_code = "stage-in-failed",
                             .failure_message = "no such file"});
  EXPECT_EQ(ended.phase, P::kFinal);
  ASSERT_TRUE(ended.final);
  EXPECT_EQ(ended.final->state, gram::JobState::kFailed);
  EXPECT_EQ(ended.final->failure, gram::FailureCode::kStageInFailed);
  EXPECT_EQ(NextAction(ended), T::kCommitEnd);
}

TEST(GridMachine, RemovedOrHeldJobsAtASiteAreCancelled) {
  for (P phase : {P::kSubmitted, P::kCommitted, P::kReconnect}) {
    for (int status : {kite::kRemoved, kite::kHeld}) {
      GridState s{.phase = phase, .status = status, .contact = "c"};
      EXPECT_EQ(NextAction(s), T::kCancel) << PhaseName(phase);
      s = Walk(s, {{InputFor(E::kDrive), T::kCancel},
                   {SiteNews(Site(gram::JobState::kFailed, 9), true), T::kNone}});
      EXPECT_EQ(s.phase, P::kCancelled);
      s = Walk(s, {{InputFor(E::kDrive), T::kCommitEnd}, {InputFor(E::kForgotten), T::kReportEnd}});
      EXPECT_EQ(DecideEnd(s, 3),
                status == kite::kRemoved ? EndOutcome::kRetire : EndOutcome::kNothing);
    }
  }
  // Nothing at a site: a removed job retires, a held one is forgotten until released.
  EXPECT_EQ(NextAction(GridState{.status = kite::kRemoved}), T::kRetire);
  EXPECT_EQ(NextAction(GridState{.status = kite::kHeld}), T::kForget);
}

// The broker moves a queued job (idle and moving): cancelled at its site while it has not
// started, then the attempt is cleared with no outcome; a site that says it has started keeps it,
// and an end it reports is taken as for any running job.
TEST(GridMachine, AMovedJobIsCancelledOnlyBeforeItStarts) {
  for (P phase : {P::kSubmitted, P::kCommitted}) {
    GridState s{.phase = phase, .status = kite::kIdle, .moving = true, .contact = "c"};
    EXPECT_EQ(NextAction(s), T::kCancel) << PhaseName(phase);
    s = Walk(s, {{InputFor(E::kDrive), T::kCancel},
                 {SiteNews(Site(gram::JobState::kFailed, 9), true), T::kNone}});
    EXPECT_EQ(s.phase, P::kCancelled);
    s = Walk(s, {{InputFor(E::kDrive), T::kCommitEnd}, {InputFor(E::kForgotten), T::kReportEnd}});
    EXPECT_EQ(DecideEnd(s, 3), EndOutcome::kNothing);
  }
  // Not at a site yet: let go at once.
  EXPECT_EQ(NextAction(GridState{.status = kite::kIdle, .moving = true}), T::kClear);
  EXPECT_EQ(NextAction(GridState{.status = kite::kIdle}), T::kSubmit) << "not moving: submitted";
  // The site refuses the cancel: it started there. The job waits for news.
  GridState s{.phase = P::kCancelling, .status = kite::kIdle, .moving = true, .contact = "c"};
  auto step = Apply(s, GridInput{.event = E::kConflict});
  ASSERT_TRUE(step);
  EXPECT_EQ(step->state.phase, P::kCommitted);
  EXPECT_EQ(step->task, T::kWait);
  // News that it runs reports it running; news that it ended is stored as any end.
  s = step->state;
  step = Apply(s, SiteNews(Site(gram::JobState::kActive, 10), false));
  ASSERT_TRUE(step);
  EXPECT_EQ(step->task, T::kReport);
  EXPECT_EQ(step->state.status, kite::kRunning);
  EXPECT_FALSE(step->state.moving) << "a running job is not moved";
  step = Apply(s, SiteNews(Site(gram::JobState::kDone, 11), false));
  ASSERT_TRUE(step);
  EXPECT_EQ(step->state.phase, P::kSavingFinal);
  step = Apply(step->state, GridInput{.event = E::kSaved, .status = kite::kIdle, .moving = true});
  ASSERT_TRUE(step);
  step = Apply(step->state, InputFor(E::kDrive));
  ASSERT_TRUE(step);
  step = Apply(step->state, InputFor(E::kForgotten));
  ASSERT_TRUE(step);
  EXPECT_EQ(DecideEnd(step->state, 3), EndOutcome::kExited);
}

TEST(GridMachine, AStaleReplyIsJudgedByNewerNews) {
  GridState s{.phase = P::kCommitting, .contact = "c"};
  s.news = Site(gram::JobState::kPendingCommit, 1);
  // The job ends (callback, seq 5) while the commit is out: the end waits for the reply ...
  s = Walk(s, {{SiteNews(Site(gram::JobState::kDone, 5), false), T::kNone}});
  EXPECT_EQ(s.phase, P::kCommitting);
  // ... whose older news (seq 2) does not take the job back: it is judged an end.
  auto step = Apply(s, SiteNews(Site(gram::JobState::kStageIn, 2), true));
  ASSERT_TRUE(step);
  EXPECT_EQ(step->event, E::kReplyEnded);
  EXPECT_EQ(step->state.phase, P::kSavingFinal);
  EXPECT_EQ(step->state.news.seq, 5);
}

TEST(GridMachine, AnEndReportedMeanwhileAnswersAFailedRequest) {
  for (P phase : {P::kCommitting, P::kProbing, P::kSignalling, P::kCancelling}) {
    GridState s{.phase = phase, .contact = "c"};
    s = Walk(s, {{SiteNews(Site(gram::JobState::kDone, 5), false), T::kNone}});
    auto step = Apply(s, GridInput{.event = E::kSiteDown});
    ASSERT_TRUE(step) << PhaseName(phase);
    EXPECT_EQ(step->state.phase, P::kSavingFinal) << PhaseName(phase);
  }
}

TEST(GridMachine, ARefusalWhileHeldWaitsInsteadOfRetryingAtOnce) {
  for (const auto& [phase, rest] :
       std::vector<std::pair<P, P>>{{P::kCommitting, P::kSubmitted},
                                    {P::kCancelling, P::kReconnect},
                                    {P::kEnding, P::kFinal},
                                    {P::kEndingCancelled, P::kCancelled}}) {
    GridState s{.phase = phase, .status = kite::kHeld, .contact = "c"};
    auto step = Apply(s, InputFor(E::kRefused));
    ASSERT_TRUE(step);
    EXPECT_EQ(step->task, T::kWait) << PhaseName(phase);
    EXPECT_EQ(step->state.phase, rest);
    // Wanted to run: held with the refusal's reason instead.
    s.status = kite::kRunning;
    step = Apply(s, InputFor(E::kRefused));
    ASSERT_TRUE(step);
    EXPECT_EQ(step->task, T::kHold);
    EXPECT_EQ(step->state.status, kite::kHeld);
    // Removed: settled without the site.
    s.status = kite::kRemoved;
    step = Apply(s, InputFor(E::kRefused));
    ASSERT_TRUE(step);
    EXPECT_EQ(step->task, T::kReportEnd);
  }
}

TEST(GridMachine, NotFoundAndConflictMeanWhatTheRequestWasFor) {
  auto task = [](P phase, E e) { return Apply(GridState{.phase = phase}, InputFor(e))->task; };
  EXPECT_EQ(task(P::kSubmitting, E::kNotFound), T::kRedelegate);  // our delegation is gone
  EXPECT_EQ(task(P::kCommitting, E::kNotFound), T::kClear);       // forgotten uncommitted
  EXPECT_EQ(task(P::kProbing, E::kNotFound), T::kReportLost);     // lost after its commit
  EXPECT_EQ(task(P::kSignalling, E::kNotFound), T::kCommit);      // the commit tells
  EXPECT_EQ(task(P::kSignalling, E::kConflict), T::kCommit);
  EXPECT_EQ(task(P::kCancelling, E::kNotFound), T::kReportEnd);  // already gone
  EXPECT_EQ(task(P::kCommitting, E::kConflict), T::kHold);       // a refusal there
  auto lost = Apply(GridState{.phase = P::kProbing, .contact = "c"}, InputFor(E::kNotFound));
  ASSERT_TRUE(lost && lost->state.final);
  EXPECT_EQ(lost->state.final->failure, gram::FailureCode::kBatchLost);
  EXPECT_EQ(DecideEnd(lost->state, 3), EndOutcome::kResubmit);
}

TEST(GridMachine, WhatTheAgentIsToldWhenAnAttemptEnds) {
  auto ended = [](int status, gram::FailureCode failure, int attempt) {
    GridState s{.phase = P::kReporting, .status = status, .attempt = attempt};
    s.final = Site(
        failure == gram::FailureCode::kNone ? gram::JobState::kDone : gram::JobState::kFailed, 1);
    s.final->failure = failure;
    return s;
  };
  EXPECT_EQ(DecideEnd(ended(kite::kRunning, gram::FailureCode::kNone, 1), 3), EndOutcome::kExited);
  EXPECT_EQ(DecideEnd(ended(kite::kRunning, gram::FailureCode::kStageInFailed, 3), 3),
            EndOutcome::kResubmit);
  EXPECT_EQ(DecideEnd(ended(kite::kRunning, gram::FailureCode::kStageInFailed, 4), 3),
            EndOutcome::kHold);
  EXPECT_EQ(DecideEnd(ended(kite::kRunning, gram::FailureCode::kBadExecutable, 1), 3),
            EndOutcome::kHold);
  EXPECT_EQ(DecideEnd(ended(kite::kHeld, gram::FailureCode::kNone, 1), 3), EndOutcome::kNothing);
  EXPECT_EQ(DecideEnd(ended(kite::kRemoved, gram::FailureCode::kNone, 1), 3), EndOutcome::kRetire);
  GridState cancelled{.phase = P::kReporting, .status = kite::kIdle, .attempt = 1};
  EXPECT_EQ(DecideEnd(cancelled, 3), EndOutcome::kNothing);  // released after a hold
}

TEST(GridMachine, StaleCallbacksChangeNothingTheAgentSees) {
  GridState s{.phase = P::kCommitted, .status = kite::kRunning, .contact = "c"};
  s.news = Site(gram::JobState::kActive, 7);
  s.reported = "active";
  auto step = Apply(s, SiteNews(Site(gram::JobState::kPending, 3), false));
  ASSERT_TRUE(step);
  EXPECT_EQ(step->state.reported, "active");
  EXPECT_EQ(step->state.news.seq, 7);
}

}  // namespace
}  // namespace kite::gridmanager
