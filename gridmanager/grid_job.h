// What a grid-universe job ad asks for, worked out into the pieces the gridmanager sends: the
// site's job description, the files the GASS server exposes to the site, and the request ids.
// Pure functions of the ad: no I/O, so they are unit-tested and fuzzed on their own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "classad/classad.h"
#include "common/error.h"
#include "gass/job_table.h"
#include "gram/protocol.h"
#include "grid/resource.h"

namespace kite::gridmanager {

// `GridResource = "kite HOST:PORT[/BATCH]"`.
using grid::GridResource;
using grid::ParseGridResource;

// The job as the site and the GASS server must see it. `desc` lacks what only the running
// gridmanager knows (gass_url, delegation_id, callback_url).
struct GridJobPlan {
  GridResource resource;
  gram::JobDescription desc;
  std::vector<gass::ReadableFile> readable;  // executable, stdin, transfer_input_files
  // stdout, stderr; and transfer_output_files ("output/NAME") for types whose site sends them
  std::vector<gass::WritableFile> writable;
  // transfer_output_files, for grid types that send them back (GridTypeCaps::output_files): the
  // name at the site, the path here (its base name under Iwd, or where a remap puts it). A name
  // ending in '/' is a folder whose contents come into the path (Iwd unless remapped).
  std::vector<std::pair<std::string, std::string>> results;
  std::string proxy;  // x509userproxy
};

// Reads GridResource, Cmd, Iwd, TransferExecutable, Arguments/Args, Environment/Env, In, Out,
// Err, StreamOut, StreamErr, TransferInput (TransferInputFiles in jobs queued before),
// TransferOutput and TransferOutputRemaps (for types whose link fetches output files) and
// x509userproxy, and what the job asks of the site's batch system: RequestCpus, RequestMemory (MB),
// MaxWallTime (seconds; when absent, BatchRuntime), BatchQueue and BatchProject into
// desc.resources. kInvalidInput, naming the attribute, for what cannot be run as described (a
// relative executable that is not transferred, a URL or a duplicate file name in
// transfer_input_files, a request that is not a number, ...).
Result<GridJobPlan> PlanGridJob(const classad::ClassAd& ad);

// The prefix of every request id of one attempt at running the job: unique per queue entry
// (QDate, ClusterId, ProcId) and attempt, and the same after any restart, so a resent request is
// recognised by the site (docs/protocol.md, "Request ids").
std::string RequestIdBase(const classad::ClassAd& ad, int attempt);

}  // namespace kite::gridmanager
