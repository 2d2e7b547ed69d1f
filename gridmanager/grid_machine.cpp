// The grid job's table, Apply and NextAction.
#include "gridmanager/grid_machine.h"

#include <array>

#include "common/strings.h"
#include "grid/codes.h"

namespace kite::gridmanager {
namespace {

using P = GridPhase;
using E = GridEvent;
using T = GridTask;

constexpr unsigned R = kWishRun, H = kWishHold, X = kWishRemove, S = kWishStop, M = kWishMove,
                   A = kWishAny;
constexpr std::optional<GridPhase> kAnyPhase = std::nullopt;
constexpr std::optional<GridPhase> kSame = std::nullopt;

// Every {phase, event} not listed is ignored there. Rules for the request phases come in the same
// order: the reply, callbacks (reported at once; an end waits for the reply, which is then judged
// by it), not-found and conflict where they mean something, no answer, refusals.
constexpr std::array kTable = std::to_array<GridRule>({
    // Any phase.
    {kAnyPhase, E::kStatus, A, kSame, T::kNone},
    {kAnyPhase, E::kLeft, A, kSame, T::kForget},
    // Moved by the broker (M; where no M rule is listed, the R one applies): a job not yet at its
    // site is let go at once; one there is cancelled only if it has not started (a site that
    // says it has keeps it, and news of its start ends the move).
    {P::kIdle, E::kDrive, M, P::kReporting, T::kClear},
    {P::kSubmitted, E::kDrive, M, P::kCancelling, T::kCancel},
    {P::kCommitted, E::kDrive, M, P::kCancelling, T::kCancel},
    {P::kCancelling, E::kReplyEnded, M, P::kCancelled, T::kNone},
    {P::kCancelling, E::kConflict, M, P::kCommitted, T::kWait},
    // Nothing at a site.
    {P::kIdle, E::kDrive, R, P::kSubmitting, T::kSubmit},
    {P::kIdle, E::kDrive, X, P::kReporting, T::kRetire},
    {P::kIdle, E::kDrive, H, kSame, T::kForget},  // a release brings it back
    {P::kIdle, E::kQueueContact, A, P::kReconnect, T::kNone},
    {P::kIdle, E::kQueueFinal, A, P::kFinal, T::kNone},
    {P::kIdle, E::kProxyRefused, R, kSame, T::kHold},
    // Submit, then store the contact before the commit that lets it run.
    {P::kSubmitting, E::kSubmitted, A, P::kSavingContact, T::kSaveContact},
    {P::kSubmitting, E::kNotFound, A, P::kIdle, T::kRedelegate},
    {P::kSubmitting, E::kSiteDown, A, P::kIdle, T::kNone},
    {P::kSubmitting, E::kRefused, R, P::kIdle, T::kHold},
    {P::kSubmitting, E::kRefused, S, P::kIdle, T::kNone},
    {P::kSavingContact, E::kSaved, A, P::kSubmitted, T::kNone},
    {P::kSubmitted, E::kDrive, R, P::kCommitting, T::kCommit},
    {P::kSubmitted, E::kDrive, S, P::kCancelling, T::kCancel},
    // A type without a commit step: the stored contact is all the submit needed.
    {P::kSubmitted, E::kNoCommit, M, P::kCancelling, T::kCancel},
    {P::kSubmitted, E::kNoCommit, R, P::kCommitted, T::kReport},
    {P::kSubmitted, E::kNoCommit, S, P::kCancelling, T::kCancel},
    // A submit an earlier run may have sent: the signal commits it with this run's addresses.
    {P::kSubmitted, E::kSubmittedBefore, M, P::kCancelling, T::kCancel},
    {P::kSubmitted, E::kSubmittedBefore, R, P::kSignalling, T::kSignal},
    {P::kSubmitted, E::kSubmittedBefore, S, P::kCancelling, T::kCancel},
    {P::kSubmitted, E::kNewsPending, A, kSame, T::kReport},
    {P::kSubmitted, E::kNewsCommitted, A, P::kCommitted, T::kReport},
    {P::kSubmitted, E::kNewsEnded, R, P::kSavingFinal, T::kSaveFinal},
    {P::kSubmitted, E::kNewsEnded, S, P::kCancelled, T::kNone},
    {P::kSubmitted, E::kDelegationLost, A, P::kReconnect, T::kNone},
    // Commit.
    {P::kCommitting, E::kReplyPending, A, P::kCommitted, T::kReport},
    {P::kCommitting, E::kReplyCommitted, A, P::kCommitted, T::kReport},
    {P::kCommitting, E::kReplyEnded, R, P::kSavingFinal, T::kSaveFinal},
    {P::kCommitting, E::kReplyEnded, S, P::kCancelled, T::kNone},
    {P::kCommitting, E::kNewsPending, A, kSame, T::kReport},
    {P::kCommitting, E::kNewsCommitted, A, kSame, T::kReport},
    {P::kCommitting, E::kNewsEnded, A, kSame, T::kNone},
    {P::kCommitting, E::kNotFound, A, P::kReporting, T::kClear},  // its commit timeout: never ran
    {P::kCommitting, E::kSiteDown, A, P::kSubmitted, T::kNone},
    {P::kCommitting, E::kRefused, R, P::kSubmitted, T::kHold},  // then cancelled there
    {P::kCommitting, E::kRefused, X, P::kReporting, T::kReportEnd},
    {P::kCommitting, E::kRefused, H, P::kSubmitted, T::kWait},
    // Committed: callbacks, and a probe after probe_interval without news.
    {P::kCommitted, E::kDrive, S, P::kCancelling, T::kCancel},
    {P::kCommitted, E::kProbeDue, A, P::kProbing, T::kProbe},
    {P::kCommitted, E::kNewsPending, A, kSame, T::kReport},
    {P::kCommitted, E::kNewsCommitted, A, kSame, T::kReport},
    {P::kCommitted, E::kNewsEnded, R, P::kSavingFinal, T::kSaveFinal},
    {P::kCommitted, E::kNewsEnded, S, P::kCancelled, T::kNone},
    {P::kCommitted, E::kDelegationLost, A, P::kReconnect, T::kNone},
    {P::kProbing, E::kReplyPending, A, P::kCommitted, T::kReport},
    {P::kProbing, E::kReplyCommitted, A, P::kCommitted, T::kReport},
    {P::kProbing, E::kReplyEnded, R, P::kSavingFinal, T::kSaveFinal},
    {P::kProbing, E::kReplyEnded, S, P::kCancelled, T::kNone},
    {P::kProbing, E::kNewsPending, A, kSame, T::kReport},
    {P::kProbing, E::kNewsCommitted, A, kSame, T::kReport},
    {P::kProbing, E::kNewsEnded, A, kSame, T::kNone},
    {P::kProbing, E::kNotFound, A, P::kReporting, T::kReportLost},  // committed and lost
    {P::kProbing, E::kSiteDown, A, P::kCommitted, T::kNone},
    {P::kProbing, E::kRefused, R, P::kCommitted, T::kHold},
    {P::kProbing, E::kRefused, X, P::kReporting, T::kReportEnd},
    {P::kProbing, E::kRefused, H, P::kCommitted, T::kWait},
    // Reconnect: a signal with this run's addresses and delegation.
    {P::kReconnect, E::kDrive, R, P::kSignalling, T::kSignal},
    {P::kReconnect, E::kDrive, S, P::kCancelling, T::kCancel},
    {P::kReconnect, E::kNewsPending, A, kSame, T::kReport},
    {P::kReconnect, E::kNewsCommitted, A, kSame, T::kReport},
    {P::kReconnect, E::kNewsEnded, R, P::kSavingFinal, T::kSaveFinal},
    {P::kReconnect, E::kNewsEnded, S, P::kCancelled, T::kNone},
    {P::kReconnect, E::kQueueFinal, A, P::kFinal, T::kNone},
    {P::kReconnect, E::kProxyRefused, A, kSame, T::kNone},  // signalled without a delegation
    {P::kSignalling, E::kReplyPending, A, P::kSubmitted, T::kReport},
    {P::kSignalling, E::kReplyCommitted, A, P::kCommitted, T::kReport},
    {P::kSignalling, E::kReplyEnded, R, P::kSavingFinal, T::kSaveFinal},
    {P::kSignalling, E::kReplyEnded, S, P::kCancelled, T::kNone},
    {P::kSignalling, E::kNewsPending, A, kSame, T::kReport},
    {P::kSignalling, E::kNewsCommitted, A, kSame, T::kReport},
    {P::kSignalling, E::kNewsEnded, A, kSame, T::kNone},
    {P::kSignalling, E::kNotFound, A, P::kCommitting, T::kCommit},  // the commit tells how it
    {P::kSignalling, E::kConflict, A, P::kCommitting, T::kCommit},  // was lost, or ended
    {P::kSignalling, E::kSiteDown, A, P::kReconnect, T::kNone},
    {P::kSignalling, E::kRefused, R, P::kReconnect, T::kHold},
    {P::kSignalling, E::kRefused, X, P::kReporting, T::kReportEnd},
    {P::kSignalling, E::kRefused, H, P::kReconnect, T::kWait},
    // Cancel (removed or held with something at a site).
    {P::kCancelling, E::kReplyPending, A, P::kSubmitted, T::kWait},       // under way at the site:
    {P::kCancelling, E::kReplyCommitted, A, P::kCommitted, T::kWait},     // news brings its end
    {P::kCancelling, E::kReplyEnded, R, P::kSavingFinal, T::kSaveFinal},  // released meanwhile
    {P::kCancelling, E::kReplyEnded, S, P::kCancelled, T::kNone},
    {P::kCancelling, E::kNewsPending, A, kSame, T::kReport},
    {P::kCancelling, E::kNewsCommitted, A, kSame, T::kReport},
    {P::kCancelling, E::kNewsEnded, A, kSame, T::kNone},
    {P::kCancelling, E::kNotFound, A, P::kReporting, T::kReportEnd},  // already gone there
    {P::kCancelling, E::kSiteDown, A, P::kReconnect, T::kNone},
    {P::kCancelling, E::kRefused, R, P::kReconnect, T::kHold},
    {P::kCancelling, E::kRefused, X, P::kReporting, T::kReportEnd},
    {P::kCancelling, E::kRefused, H, P::kReconnect, T::kWait},
    // The end: stored, then commit-end lets the site forget it, then the agent is told.
    {P::kSavingFinal, E::kSaved, A, P::kFinal, T::kNone},
    {P::kFinal, E::kDrive, A, P::kEnding, T::kCommitEnd},
    {P::kCancelled, E::kDrive, A, P::kEndingCancelled, T::kCommitEnd},
    {P::kEnding, E::kForgotten, A, P::kReporting, T::kReportEnd},
    {P::kEnding, E::kSiteDown, A, P::kFinal, T::kNone},
    {P::kEnding, E::kRefused, R, P::kFinal, T::kHold},
    {P::kEnding, E::kRefused, X, P::kReporting, T::kReportEnd},
    {P::kEnding, E::kRefused, H, P::kFinal, T::kWait},
    {P::kEndingCancelled, E::kForgotten, A, P::kReporting, T::kReportEnd},
    {P::kEndingCancelled, E::kSiteDown, A, P::kCancelled, T::kNone},
    {P::kEndingCancelled, E::kRefused, R, P::kCancelled, T::kHold},
    {P::kEndingCancelled, E::kRefused, X, P::kReporting, T::kReportEnd},
    {P::kEndingCancelled, E::kRefused, H, P::kCancelled, T::kWait},
    {P::kReporting, E::kSaved, A, P::kIdle, T::kNone},
});

constexpr std::array<std::string_view, kGridPhases> kPhaseNames = {
    "idle",      "submitting", "saving-contact",   "submitted",  "committing",   "committed",
    "probing",   "reconnect",  "signalling",       "cancelling", "saving-final", "final",
    "cancelled", "ending",     "ending-cancelled", "reporting",
};

constexpr std::array<std::string_view, kGridEvents> kEventNames = {
    "drive",           "probe-due",    "status",           "saved",         "left",
    "queue-contact",   "queue-final",  "submitted",        "reply-pending", "reply-committed",
    "reply-ended",     "news-pending", "news-committed",   "news-ended",    "forgotten",
    "not-found",       "conflict",     "site-down",        "refused",       "proxy-refused",
    "delegation-lost", "no-commit",    "submitted-before",
};

// The rules of each {phase, event}, in table order: Apply runs on every event of every job, so
// it looks them up rather than scanning the table.
struct Index {
  std::array<std::array<std::vector<const GridRule*>, kGridEvents>, kGridPhases> rules;
  Index() {
    for (const auto& r : kTable) {
      for (int p = 0; p < kGridPhases; ++p) {
        if (!r.from || static_cast<int>(*r.from) == p) {
          rules[p][static_cast<size_t>(r.event)].push_back(&r);
        }
      }
    }
  }
};

const GridRule* Find(GridPhase phase, GridEvent event, Wish wish) {
  static const Index index;
  for (const GridRule* r : index.rules[static_cast<size_t>(phase)][static_cast<size_t>(event)]) {
    if (r->wishes & wish) return r;
  }
  // A job being moved is a job that runs wherever no rule of its own says otherwise.
  if (wish == kWishMove) return Find(phase, event, kWishRun);
  return nullptr;
}

bool IsReply(GridEvent e) {
  return e == E::kReplyPending || e == E::kReplyCommitted || e == E::kReplyEnded;
}
bool IsNews(GridEvent e) {
  return e == E::kNewsPending || e == E::kNewsCommitted || e == E::kNewsEnded;
}
bool IsFailure(GridEvent e) {
  return e == E::kNotFound || e == E::kConflict || e == E::kSiteDown || e == E::kRefused;
}
// Requests about a job at its site whose purpose an end reported meanwhile fulfils.
bool AsksAboutJob(GridPhase p) {
  return p == P::kCommitting || p == P::kProbing || p == P::kSignalling || p == P::kCancelling;
}

GridEvent Classify(gram::JobState state, bool reply) {
  if (state == gram::JobState::kPendingCommit) return reply ? E::kReplyPending : E::kNewsPending;
  if (gram::IsTerminal(state)) return reply ? E::kReplyEnded : E::kNewsEnded;
  return reply ? E::kReplyCommitted : E::kNewsCommitted;
}

// The event as judged against what is known: site news by the newest status, a failure of a
// request that an end reported meanwhile answers as that end.
GridEvent Judge(const GridState& s, GridEvent e) {
  bool ended = s.news.seq >= 0 && gram::IsTerminal(s.news.state);
  if (IsReply(e) || IsNews(e)) return Classify(s.news.state, IsReply(e));
  if (IsFailure(e) && ended && AsksAboutJob(s.phase)) return E::kReplyEnded;
  if (e == E::kDrive && s.phase == P::kSubmitted && !s.commits) return E::kNoCommit;
  if (e == E::kDrive && s.phase == P::kSubmitted && s.inherited) return E::kSubmittedBefore;
  return e;
}

// Clears what ties the job to the attempt that just ended; the next attempt gets a new number
// (and so new request ids). `final` stays until the outcome is stored (DecideEnd reads it).
void ClearAttempt(GridState& s) {
  ++s.attempt;
  s.inherited = false;
  s.contact.clear();
  s.news = GridState::NoNews();
  s.reported.clear();
  s.reported_site.clear();
}

gram::JobStatus LostStatus() {
  gram::JobStatus st;
  st.state = gram::JobState::kFailed;
  st.failure = gram::FailureCode::kBatchLost;
  st.failure_message = "the site no longer knows the job";
  return st;
}

// The fields an event's payload changes.
void TakePayload(GridState& s, const GridInput& in) {
  switch (in.event) {
    case E::kStatus:
    case E::kSaved:
      s.status = in.status;
      s.moving = in.moving;
      break;
    case E::kQueueContact:
      s.contact = in.contact;
      break;
    case E::kQueueFinal:
      s.final = in.site;
      break;
    case E::kSubmitted:
      s.contact = in.site.contact;
      s.news = in.site;
      s.inherited = in.existing;
      break;
    default:
      if ((IsReply(in.event) || IsNews(in.event)) && in.site.seq >= s.news.seq) s.news = in.site;
      break;
  }
}

// The fields a task changes.
void DoTask(GridState& s, GridTask task) {
  switch (task) {
    case T::kSignal:
      s.inherited = false;  // the site is told this run's addresses
      break;
    case T::kSaveContact:
      s.reported = std::string(gram::JobStateName(s.news.state));
      s.reported_site = s.news.site_state;
      break;
    case T::kSaveFinal:
      s.final = s.news;
      s.reported = std::string(gram::JobStateName(s.news.state));
      s.reported_site = s.news.site_state;
      break;
    case T::kReport: {
      std::string name(gram::JobStateName(s.news.state));
      if (name == s.reported && s.news.site_state == s.reported_site) break;
      s.reported_site = s.news.site_state;
      if (name == s.reported) break;
      s.reported = name;
      if (s.news.state == gram::JobState::kActive && s.status == kite::kIdle) {
        s.status = kite::kRunning;
        s.moving = false;
      }
      break;
    }
    case T::kReportLost:
      s.final = LostStatus();
      ClearAttempt(s);
      break;
    case T::kReportEnd:
    case T::kClear:
      ClearAttempt(s);
      break;
    case T::kHold:
      s.status = kite::kHeld;
      s.moving = false;
      break;
    default:
      break;
  }
}

}  // namespace

std::string_view PhaseName(GridPhase phase) {
  return EnumName(phase, kPhaseNames);
}

std::string_view EventName(GridEvent event) {
  return EnumName(event, kEventNames);
}

std::string_view TaskName(GridTask task) {
  static constexpr std::array<std::string_view, 18> kNames = {
      "none",        "wait",       "submit",       "commit",     "signal",     "cancel",
      "probe",       "commit-end", "save-contact", "save-final", "report",     "report-end",
      "report-lost", "clear",      "retire",       "hold",       "redelegate", "forget",
  };
  return EnumName(task, kNames);
}

Wish WishOf(int status, bool moving) {
  if (status == kite::kIdle && moving) return kWishMove;
  if (status == kite::kIdle || status == kite::kRunning) return kWishRun;
  if (status == kite::kRemoved) return kWishRemove;
  return kWishHold;
}

std::span<const GridRule> GridTable() {
  return kTable;
}

GridInput SiteNews(const gram::JobStatus& status, bool reply) {
  GridInput in;
  in.event = Classify(status.state, reply);
  in.site = status;
  return in;
}

std::optional<GridStep> Apply(const GridState& state, const GridInput& in) {
  GridState s = state;
  TakePayload(s, in);
  GridEvent e = Judge(s, in.event);
  const GridRule* rule = Find(s.phase, e, WishOf(s.status, s.moving));
  if (!rule && (e == E::kNotFound || e == E::kConflict)) {
    e = E::kRefused;
    rule = Find(s.phase, e, WishOf(s.status, s.moving));
  }
  if (!rule) return std::nullopt;
  if (rule->to) s.phase = *rule->to;
  if (s.phase == P::kIdle && rule->to) s.final.reset();
  DoTask(s, rule->task);
  return GridStep{std::move(s), rule->task, e};
}

std::vector<GridInput> RestoreInputs(const grid::StoredGridAttrs& stored) {
  std::vector<GridInput> out;
  if (!stored.job_id.empty()) {
    out.push_back(GridInput{.event = E::kQueueContact, .contact = stored.job_id});
  }
  if (stored.final) {
    GridInput in{.event = E::kQueueFinal};
    in.site.state = gram::ParseJobState(stored.job_status).value_or(gram::JobState::kFailed);
    if (stored.exit) in.site.exit = gram::ExitInfo{stored.exit->signaled, stored.exit->code};
    in.site.failure =
        gram::ParseFailureCode(stored.failure_code).value_or(gram::FailureCode::kNone);
    in.site.failure_message = stored.failure_message;
    out.push_back(std::move(in));
  }
  return out;
}

GridTask NextAction(const GridState& state) {
  const GridRule* rule =
      Find(state.phase, Judge(state, E::kDrive), WishOf(state.status, state.moving));
  return rule ? rule->task : T::kNone;
}

EndOutcome DecideEnd(const GridState& s, int max_resubmits) {
  if (s.status == kite::kRemoved) return EndOutcome::kRetire;
  if (!s.final || (WishOf(s.status, s.moving) & (kWishRun | kWishMove)) == 0)
    return EndOutcome::kNothing;
  if (s.final->state == gram::JobState::kDone) return EndOutcome::kExited;
  if (gram::IsRetryable(s.final->failure) && s.attempt <= max_resubmits) {
    return EndOutcome::kResubmit;
  }
  return EndOutcome::kHold;
}

}  // namespace kite::gridmanager
