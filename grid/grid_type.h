// The grid types Kite can run, one row each (docs/architecture.md, "Grid types"): the word that
// names the type in grid_resource, how its contact is read, how it is shown, and what the type's
// protocol can do. Everything outside a type's own files asks this registry; no other file names
// a type. The other half of a row (the link to a site, and its site information) is in
// grid/site_link.h.
//
// Threads: rows are added at start-up (and by tests); lookups may come from any thread.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "grid/resource.h"

namespace kite::grid {

// What a grid type's protocol offers.
struct GridTypeCaps {
  // Submit, then commit: the job cannot run before the commit, so a submit resent after a crash
  // never runs it twice (docs/protocol.md). Without it the grid job's machine goes from the
  // stored contact straight to committed, and the type's link makes its submit exactly-once by
  // its own means; its link answers a commit (sent while reconnecting) as a status request.
  bool two_phase_commit = true;
  // The site answers a request for site information (batch system, free CPUs, limits): the broker
  // can rank it.
  bool site_info = false;
  // transfer_output_files (and transfer_output_remaps) come back. Submit refuses them for types
  // without it.
  bool output_files = false;
  // ... sent by the site itself to the gridmanager's GASS server once the job has ended, as its
  // stdout (the job description's stage_out), rather than fetched by the link.
  bool output_files_by_gass = false;
  // An output name may be a folder at the site, its files coming back beneath it; and a name
  // ending in '/' (a folder's contents) is taken. Without it every output name must be a file.
  bool output_folders = false;
};

struct GridType {
  std::string name;     // as grid_resource spells it, lower case: "kite"
  std::string display;  // "Kite gatekeeper"
  std::string syntax;   // what follows the name: "HOST:PORT[/BATCH]"
  std::string example;  // a contact in that syntax, for messages
  // Reads the contact (the text after the name, trimmed). kInvalidInput says what is wrong; the
  // registry fills in GridResource::type.
  std::function<Result<GridResource>(std::string_view contact)> parse;
  // The short label `kite q -grid` shows in its GRID->MANAGER column ("kite->slurm").
  std::function<std::string(const GridResource&)> label;
  GridTypeCaps caps;
  // The site's id of a job, from the contact the site gave it (what the type's link is sent as
  // SiteRequest::job_id). Empty: the contact's last path segment (Kite's and ARC's contacts end
  // in the job's id).
  std::function<std::string(const std::string& contact)> job_id;
};

// The site's id of a job of grid type `type` from its contact (GridType::job_id).
std::string SiteJobId(std::string_view type, const std::string& contact);

// The row named `name` (any case); null when Kite has none.
const GridType* FindGridType(std::string_view name);
// Every row's name, in the order they were added, joined by ", " ("kite").
std::string GridTypeNames();
// "NAME EXAMPLE" of the first row, for messages that show a grid_resource.
std::string GridResourceExample();
// Adds a row (a new grid type, or a test's). kConflict when the name is taken, kInvalidInput when
// the row lacks a name, parse or label.
Status AddGridType(GridType type);

}  // namespace kite::grid
