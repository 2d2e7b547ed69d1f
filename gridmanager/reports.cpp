// The updates the gridmanager sends the agent.
#include "gridmanager/reports.h"

#include <algorithm>

#include "grid/codes.h"

namespace kite::gridmanager {
namespace {

using grid::AttrChange;
using grid::AttrValue;
using grid::GridAction;
using grid::GridAttr;

void Set(grid::GridUpdate& u, GridAttr attr, AttrValue value) {
  u.set.push_back(AttrChange{attr, std::move(value)});
}

// GridJobSiteStatus, for types whose sites have their own word (Kite's have none: nothing set).
void SetSiteStatus(grid::GridUpdate& u, const std::string& site_state) {
  if (!site_state.empty()) Set(u, GridAttr::kJobSiteStatus, site_state);
}

std::string FailureText(const gram::JobStatus& st) {
  return std::string(gram::FailureCodeName(st.failure)) + ": " + st.failure_message;
}

void Outcome(grid::GridUpdate& u, const GridState& s, const std::string& resource,
             int max_resubmits) {
  const gram::JobStatus& end = s.final ? *s.final : gram::JobStatus{};
  switch (DecideEnd(s, max_resubmits)) {
    case EndOutcome::kNothing:
      return;
    case EndOutcome::kRetire:
      u.action = GridAction::kRetire;
      return;
    case EndOutcome::kExited:
      u.action = GridAction::kExited;
      u.exit = grid::ExitInfo{end.exit ? end.exit->signaled : false, end.exit ? end.exit->code : 0};
      // The history keeps where it ran, as HTCondor's does.
      std::erase_if(u.set, [](const AttrChange& c) { return c.attr == GridAttr::kJobId; });
      for (auto& c : u.set) {
        if (c.attr == GridAttr::kJobStatus) c.value = std::string("done");
      }
      return;
    case EndOutcome::kResubmit:
      u.action = GridAction::kIdle;
      u.reason = "The grid resource " + resource + " reported " + FailureText(end) +
                 "; resubmitting (attempt " + std::to_string(s.attempt + 1) + " of " +
                 std::to_string(max_resubmits + 1) + ").";
      return;
    case EndOutcome::kHold:
      u.action = GridAction::kHold;
      u.reason =
          "Error from grid resource " + resource + ": " + FailureText(end) +
          (gram::IsRetryable(end.failure) ? " (after " + std::to_string(s.attempt) + " attempts)"
                                          : "");
      u.hold_code = end.failure == gram::FailureCode::kCredentialExpired
                        ? kite::kHoldCorruptedCredential
                        : kite::kHoldGridError;
      u.hold_subcode = static_cast<int>(end.failure);
      return;
  }
}

}  // namespace

grid::GridUpdate SaveContactUpdate(const std::string& id, const GridState& s,
                                   const std::string& grid_resource) {
  grid::GridUpdate u{.id = id};
  Set(u, GridAttr::kJobId, s.contact);
  Set(u, GridAttr::kJobStatus, s.reported);
  SetSiteStatus(u, s.reported_site);
  Set(u, GridAttr::kAttempt, int64_t{s.attempt});
  u.event = grid::LogEvent{kite::kEventGridSubmit,
                           "Job submitted to grid resource\n    "
                           "GridResource: " +
                               grid_resource + "\n    GridJobId: " + s.contact};
  return u;
}

grid::GridUpdate SaveFinalUpdate(const std::string& id, const GridState& s) {
  grid::GridUpdate u{.id = id};
  const gram::JobStatus& end = s.final ? *s.final : s.news;
  Set(u, GridAttr::kFinal, true);
  Set(u, GridAttr::kJobStatus, std::string(gram::JobStateName(end.state)));
  SetSiteStatus(u, end.site_state);
  if (end.exit) {
    Set(u, GridAttr::kExitCode, int64_t{end.exit->code});
    Set(u, GridAttr::kExitBySignal, end.exit->signaled);
  }
  if (end.failure != gram::FailureCode::kNone) {
    Set(u, GridAttr::kFailureCode, std::string(gram::FailureCodeName(end.failure)));
    Set(u, GridAttr::kFailureMessage, end.failure_message);
  }
  return u;
}

std::optional<grid::GridUpdate> ReportUpdate(const std::string& id, const GridState& before,
                                             const GridState& after) {
  if (after.reported == before.reported && after.reported_site == before.reported_site) {
    return std::nullopt;
  }
  grid::GridUpdate u{.id = id};
  Set(u, GridAttr::kJobStatus, after.reported);
  if (after.reported_site != before.reported_site) {
    Set(u, GridAttr::kJobSiteStatus,
        after.reported_site.empty() ? AttrValue{} : AttrValue{after.reported_site});
  }
  if (before.status == kite::kIdle && after.status == kite::kRunning) {
    u.action = GridAction::kRunning;
  }
  return u;
}

grid::GridUpdate EndUpdate(const std::string& id, const GridState& after, GridTask task,
                           const std::string& resource, int max_resubmits) {
  grid::GridUpdate u{.id = id};
  Set(u, GridAttr::kJobId, AttrValue{});
  Set(u, GridAttr::kFinal, AttrValue{});
  Set(u, GridAttr::kJobStatus, AttrValue{});
  Set(u, GridAttr::kJobSiteStatus, AttrValue{});
  Set(u, GridAttr::kAttempt, int64_t{after.attempt});
  if (task != GridTask::kClear) Outcome(u, after, resource, max_resubmits);
  return u;
}

grid::GridUpdate RetireUpdate(const std::string& id) {
  return grid::GridUpdate{.id = id, .action = GridAction::kRetire};
}

grid::GridUpdate HoldUpdate(const std::string& id, const std::string& reason, int code,
                            int subcode) {
  return grid::GridUpdate{.id = id,
                          .action = GridAction::kHold,
                          .reason = reason,
                          .hold_code = code,
                          .hold_subcode = subcode};
}

}  // namespace kite::gridmanager
