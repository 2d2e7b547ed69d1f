// What the agent is told about a grid job (docs/api.md, "The gridmanager's API"): the
// grid::GridUpdate each task of the grid job's machine sends. Pure functions of the job's state.
#pragma once

#include <optional>
#include <string>

#include "grid/messages.h"
#include "gridmanager/grid_machine.h"

namespace kite::gridmanager {

// kSaveContact: the contact, stored before the commit that lets the job run, with the
// grid-submit event, which names `grid_resource` as the job ad does ("gt5 HOST:PORT/SERVICE").
grid::GridUpdate SaveContactUpdate(const std::string& id, const GridState& s,
                                   const std::string& grid_resource);
// kSaveFinal: how the job ended, stored before commit-end lets the site forget it.
grid::GridUpdate SaveFinalUpdate(const std::string& id, const GridState& s);
// kReport: the site's state when it changed from `before` to `after`, and `running` when the
// site started the job; nullopt when there is nothing new to tell.
std::optional<grid::GridUpdate> ReportUpdate(const std::string& id, const GridState& before,
                                             const GridState& after);
// kReportEnd, kReportLost (the outcome of DecideEnd) and kClear (the attempt cleared, nothing
// else), from the state Apply leaves.
grid::GridUpdate EndUpdate(const std::string& id, const GridState& after, GridTask task,
                           const std::string& resource, int max_resubmits);
grid::GridUpdate RetireUpdate(const std::string& id);
grid::GridUpdate HoldUpdate(const std::string& id, const std::string& reason, int code,
                            int subcode = 0);

}  // namespace kite::gridmanager
