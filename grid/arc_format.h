// What Kite sends an ARC CE and reads back through its REST interface (docs/grid-arc.md): the
// job's xRSL description and the files the client moves itself, the CE's JSON replies, its job
// states as Kite's, and the exit code in the job's diagnostics. Pure: no I/O, safe from any
// thread; unit-tested and fuzzed on their own.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "gram/protocol.h"
#include "grid/site_link.h"

namespace kite::grid::arc {

// One file the client moves: uploaded into the job's session directory before it runs
// (inputs), or downloaded from it after the job ended (outputs).
struct SessionFile {
  std::string site;   // name in the session directory
  std::string local;  // absolute path on this machine
  bool operator==(const SessionFile&) const = default;
};

// A job as an ARC CE takes it.
struct ArcJob {
  std::string xrsl;
  std::vector<SessionFile> uploads;    // executable, stdin, transfer_input_files
  std::vector<SessionFile> downloads;  // stdout, stderr
};

// The names stdin, stdout and stderr have in the session directory.
inline constexpr char kStdinName[] = "_kite_stdin";
inline constexpr char kStdoutName[] = "_kite_stdout";
inline constexpr char kStderrName[] = "_kite_stderr";

// The job described in xRSL, named `name` (the submit's request id: how a resent submit finds the
// job the CE made for an earlier send) and using delegation `delegation_id` (none when empty).
// `files` maps the description's GASS names to the files on this machine. kInvalidInput for what
// an ARC CE cannot be asked (an executable named like one of the input files, a GASS name with
// no file).
Result<ArcJob> DescribeJob(const gram::JobDescription& desc, const JobFiles& files,
                           std::string_view name, std::string_view delegation_id);

// One job of a reply to a bulk request (action=new, status, kill, clean, info).
struct JobReply {
  std::string id;      // empty only in a refusal (code 300 or more) of a new job
  int code = 0;        // the per-job HTTP status the CE gives ("status-code")
  std::string reason;  // its text
  std::string state;   // the REST state, upper case ("RUNNING"); empty when not given
  std::string name;    // info only: the job's name, when the CE says it
};
// {"job": OBJECT or [OBJECT...]} (a single job comes as an object). kProtocol for anything else.
Result<std::vector<JobReply>> ParseJobsReply(std::string_view body);
// The job ids of a job list (GET .../jobs), same shape.
Result<std::vector<std::string>> ParseJobList(std::string_view body);

// An ARC REST state in Kite's terms; nullopt for a state Kite does not know (the caller keeps the
// job as it was and says so).
std::optional<gram::JobState> MapState(std::string_view rest_state);
// True for the states in which the CE waits for the client's uploads.
bool AwaitsUploads(std::string_view rest_state);
// True for a state in which a cancel that must only take a job that has not started may act.
bool NotStarted(std::string_view rest_state);

// The exit code in the job's "diag" file (lines KEY=VALUE, "exitcode=3"); nullopt when absent or
// not a number.
std::optional<int> ParseExitCode(std::string_view diag);

// The delegation id at the end of a Location header ("https://ce/arex/rest/1.0/delegations/ID").
// kProtocol when there is none or it holds characters an id cannot have.
Result<std::string> DelegationIdOf(std::string_view location);
// A folder of a job's session directory as the CE lists it (GET .../session/DIR with
// Accept: application/xml): <list><file size="N">NAME</file><dir>NAME</dir>...</list>, or <list/>.
// Symbolic links are not listed.
struct SessionListing {
  std::vector<std::string> files;
  std::vector<std::string> folders;
};
// kProtocol for anything else, and for a name that is not one path segment ("", ".", "..", a '/'
// or NUL in it): what lands on this machine is only ever beneath the folder asked for.
Result<SessionListing> ParseSessionListing(std::string_view xml);

// True for a job or delegation id Kite puts into a URL path: letters, digits, '-', '_', '.'.
bool ValidArcId(std::string_view id);

}  // namespace kite::grid::arc
