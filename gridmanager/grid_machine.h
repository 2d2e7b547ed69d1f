// A grid job's life at its site as data: phases, events, the {phase, event} -> {phase, task}
// table, and the pure Apply / NextAction pair (docs/architecture.md, "The grid job's machine"
// draws it; keep both in step).
//
// Apply is the only way a job's state changes, for live events and for a restart alike: a
// restarted gridmanager feeds what the queue holds (GridJobId, GridFinal) through the same Apply
// (kQueueContact, kQueueFinal). Write-ahead waits are phases of their own (saving-contact,
// saving-final, reporting): the next request is not sent until the queue holds what it depends
// on. At most one request per job is out at a time; a phase ending in -ing names it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <vector>

#include "gram/protocol.h"
#include "grid/messages.h"

namespace kite::gridmanager {

enum class GridPhase {
  kIdle,             // nothing at a site that we know of
  kSubmitting,       // submit sent
  kSavingContact,    // the site's contact (GridJobId) being committed to the queue
  kSubmitted,        // contact stored, not committed: commit next (or cancel)
  kCommitting,       // commit sent
  kCommitted,        // it may run: callbacks and probes bring news
  kProbing,          // status probe sent
  kReconnect,        // at a site that must be told this run's GASS and callback addresses and
                     // delegation (after a restart, or when the site's delegation was lost);
                     // committed or not, the signal's reply tells
  kSignalling,       // signal sent
  kCancelling,       // cancel sent
  kSavingFinal,      // how it ended (GridFinal, ...) being committed to the queue
  kFinal,            // how it ended is stored: commit-end next
  kCancelled,        // cancelled (or ended while not wanted) and confirmed: commit-end next
  kEnding,           // commit-end sent after a stored end
  kEndingCancelled,  // commit-end sent after a cancel
  kReporting,        // the attempt's outcome being committed to the queue
};
inline constexpr int kGridPhases = 16;
std::string_view PhaseName(GridPhase phase);  // "idle", "saving-contact", ...

enum class GridEvent {
  // From the engine and the agent.
  kDrive,         // the job may take its next step now (NextAction says which)
  kProbeDue,      // nothing heard of it for probe_interval
  kStatus,        // the agent's JobStatus changed (GridInput::status)
  kSaved,         // the agent committed the update the job waited on (status afterwards)
  kLeft,          // the job left the queue
  kQueueContact,  // restart: the queue holds GridJobId (GridInput::contact)
  kQueueFinal,    // restart: the queue holds GridFinal (GridInput::site: how it ended)
  // From the site: replies to the request under way, and callbacks. Site news is judged by the
  // newest status known (by seq), so a stale reply never takes a job back.
  kSubmitted,       // the submit's reply (GridInput::site, with the contact)
  kReplyPending,    // a reply: the job waits for its commit
  kReplyCommitted,  // a reply: committed, not ended
  kReplyEnded,      // a reply: done or failed
  kNewsPending,     // a callback: the job waits for its commit
  kNewsCommitted,   // a callback: committed, not ended
  kNewsEnded,       // a callback: done or failed
  kForgotten,       // the commit-end's reply (or the job was already forgotten)
  kNotFound,        // the site does not know the job (or, for a submit, our delegation)
  kConflict,        // the request is not valid in the job's state at the site
  kSiteDown,        // no answer (unreachable, timeout, lost connection): try again later
  kRefused,         // any other error: refused for good (GridInput::reason, hold_code)
  kProxyRefused,    // the site refused a delegation of our proxy (reason, hold_code)
  kDelegationLost,  // the delegation the job uses there is gone: it must be moved
  // Judged, never fed: a drive of a submitted job whose grid type has no commit step (the
  // submit let it run).
  kNoCommit,
  // Judged, never fed: a drive of a submitted job the site had made for an earlier send of the
  // submit (GridState::inherited), perhaps by an earlier run of the gridmanager, with that run's
  // GASS and callback addresses and delegation: it is signalled (which commits it with this
  // run's) instead of committed.
  kSubmittedBefore,
};
inline constexpr int kGridEvents = 23;
std::string_view EventName(GridEvent event);  // "drive", "reply-ended", ...

// What the engine does on a transition.
enum class GridTask {
  kNone,    // nothing: the job is driven on
  kWait,    // nothing, and the job is not driven on: it waits until its site is driven
            // (back-off over, proxy refreshed), so a refusal is not retried in a loop
  kSubmit,  // requests to the site
  kCommit,
  kSignal,
  kCancel,
  kProbe,
  kCommitEnd,
  kSaveContact,  // GridJobId, GridJobStatus, GridAttempt and the grid-submit event; waited on
  kSaveFinal,    // GridFinal, GridJobStatus, exit and failure; waited on
  kReport,       // GridJobStatus (and `running`) when changed; not waited on
  kReportEnd,    // the attempt's outcome (DecideEnd) with the attempt cleared; waited on
  kReportLost,   // as kReportEnd, after the site lost a committed job (a retryable failure)
  kClear,        // the attempt cleared, nothing else (the site forgot it uncommitted); waited on
  kRetire,       // a removed job with nothing at a site leaves the queue; waited on
  kHold,         // hold the job (GridInput::reason, hold_code); not waited on
  kRedelegate,   // the site lost our delegation: make a new one before the next submit
  kForget,       // the job leaves the gridmanager
};
std::string_view TaskName(GridTask task);

// Which agent statuses a rule applies to.
enum Wish : unsigned {
  kWishRun = 1,     // Idle or Running
  kWishHold = 2,    // Held or Completed
  kWishRemove = 4,  // Removed
  kWishStop = kWishHold | kWishRemove,
  // Idle, and the broker moves it to another site (GridState::moving): cancelled at its site
  // if it has not started there; otherwise as kWishRun (a rule for kWishMove comes first, else
  // the kWishRun one applies).
  kWishMove = 8,
  kWishAny = kWishRun | kWishStop | kWishMove,
};
Wish WishOf(int status, bool moving = false);

struct GridRule {
  std::optional<GridPhase> from;  // nullopt: any phase
  GridEvent event;
  unsigned wishes;              // Wish bits
  std::optional<GridPhase> to;  // nullopt: the phase does not change
  GridTask task;
};
// The whole table, for documentation and tests. The first rule that matches applies.
std::span<const GridRule> GridTable();

// What the gridmanager knows of one job. Changed only by Apply.
struct GridState {
  GridPhase phase = GridPhase::kIdle;
  int status = 1;                        // the agent's JobStatus (grid/codes.h) as last known
  bool moving = false;                   // ... Idle, and the broker moves it (grid::PollJob)
  int attempt = 0;                       // GridAttempt
  std::string contact;                   // the site's contact for this attempt; empty: none
  gram::JobStatus news = NoNews();       // the newest status from the site (seq -1: none)
  std::string reported;                  // GridJobStatus as the agent has it
  std::string reported_site;             // GridJobSiteStatus as the agent has it
  std::optional<gram::JobStatus> final;  // how the attempt ended, once it is (being) stored
  bool commits = true;  // its grid type submits, then commits (grid/grid_type.h); set on admission
  // The site's job was made for an earlier send of this attempt's submit (GridInput::existing);
  // cleared by the signal that tells the site this run's addresses, and by a new attempt.
  bool inherited = false;
  bool operator==(const GridState&) const = default;
  static gram::JobStatus NoNews() {
    gram::JobStatus s;
    s.seq = -1;
    return s;
  }
};

struct GridInput {
  GridEvent event = GridEvent::kDrive;
  int status = 0;         // kStatus, kSaved
  bool moving = false;    // kStatus, kSaved: Idle, and the broker moves it
  gram::JobStatus site;   // site events that carry a status; kQueueFinal
  std::string contact;    // kQueueContact
  std::string reason;     // kRefused, kProxyRefused: the hold's reason
  int hold_code = 0;      // kRefused, kProxyRefused
  bool existing = false;  // kSubmitted: the site made the job for an earlier send (SiteAnswer)
};
// The input for what the site said in reply (`reply`) or in a callback (!`reply`).
GridInput SiteNews(const gram::JobStatus& status, bool reply);

struct GridStep {
  GridState state;
  GridTask task = GridTask::kNone;
  GridEvent event =
      GridEvent::kDrive;  // the event as judged (a stale reply is judged by newer news)
};

// The transition for `in` in `state`, or nullopt when the event does not apply there (it is
// ignored). Pure. Errors the table does not name for a phase (not-found, conflict) count as
// refusals there; an end already reported by a callback answers any request still out.
std::optional<GridStep> Apply(const GridState& state, const GridInput& in);

// What a restarted gridmanager feeds Apply, from what the queue holds of the job (in order):
// kQueueContact when GridJobId is stored, kQueueFinal when GridFinal is.
std::vector<GridInput> RestoreInputs(const grid::StoredGridAttrs& stored);

// What kDrive would do now (kNone: nothing until an event comes). Pure.
GridTask NextAction(const GridState& state);

// What the agent is told when an attempt ends (kReportEnd, kReportLost), from the state Apply
// leaves (attempt already the next one).
enum class EndOutcome {
  kNothing,   // cancelled because held (or released meanwhile): nothing more to tell
  kRetire,    // removed: it leaves the queue
  kExited,    // done: the on-exit policy decides
  kResubmit,  // a retryable failure with attempts left: idle again
  kHold,      // any other failure: held with the site's reason
};
EndOutcome DecideEnd(const GridState& state, int max_resubmits);

}  // namespace kite::gridmanager
