// The agent <-> gridmanager messages (docs/api.md, "The gridmanager's API"): the long poll
// (grid/jobs) and the batched job updates (grid/update) as typed structs, with their JSON forms.
// Pure data and parsing: no I/O, safe from any thread.
//
// Parsing is strict about types and names (kInvalidInput naming the field) and ignores unknown
// members, as gram/protocol.h does, so a later addition does not break an older peer.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "classad/classad.h"
#include "classad/expr.h"
#include "common/error.h"
#include "grid/codes.h"

namespace kite::grid {

// What a gridmanager asks the agent to do with a job, beyond setting its Grid* attributes. The
// agent applies an action only where it still makes sense (docs/api.md), so a user's kite rm or
// kite hold made meanwhile wins.
enum class GridAction {
  kNone,     // only attributes and an event
  kRunning,  // the site runs it: Idle -> Running
  kExited,   // it ended at the site (with `exit`): the on-exit policy decides what follows
  kIdle,     // a new attempt follows (with `reason`): Running -> Idle
  kHold,     // hold it (with `reason`, `hold_code`, `hold_subcode`)
  kRetire,   // a removed job is settled at its site: it leaves the queue
};
std::string_view GridActionName(GridAction action);  // "" for kNone, "running", ...
std::optional<GridAction> ParseGridAction(std::string_view name);

// The attributes a gridmanager keeps in a job's ad, and their types.
enum class GridAttr {
  kJobId,           // GridJobId: the site's contact for the job (string)
  kJobStatus,       // GridJobStatus: the job's state at the site, in Kite's names (string)
  kJobSiteStatus,   // GridJobSiteStatus: ... in the site's own word, where it has one (string)
  kAttempt,         // GridAttempt: which attempt at running the job this is (integer)
  kFinal,           // GridFinal: how the attempt ended is stored (boolean)
  kExitCode,        // GridExitCode (integer)
  kExitBySignal,    // GridExitBySignal (boolean)
  kFailureCode,     // GridFailureCode: gram::FailureCodeName (string)
  kFailureMessage,  // GridFailureMessage (string)
};
enum class AttrType { kString, kInteger, kBool };
std::string_view GridAttrName(GridAttr attr);  // "GridJobId", ...
std::optional<GridAttr> ParseGridAttrName(std::string_view name);
AttrType GridAttrType(GridAttr attr);

// A new value: undefined (the attribute is cleared), or a literal of the attribute's type.
using AttrValue = std::variant<std::monostate, bool, int64_t, std::string>;
struct AttrChange {
  GridAttr attr = GridAttr::kJobId;
  AttrValue value;
  bool operator==(const AttrChange&) const = default;
};
// The ClassAd text of a value ("undefined", "true", "42", "\"text\"").
std::string AttrValueText(const AttrValue& value);
// The value as a ClassAd literal, to store in an ad.
classad::ExprPtr AttrValueExpr(const AttrValue& value);

struct ExitInfo {
  bool signaled = false;
  int code = 0;  // exit code, or signal number when signaled
  bool operator==(const ExitInfo&) const = default;
};

// A user-log event to write for the job (codes in grid/codes.h).
struct LogEvent {
  int code = 0;
  std::string text;
  bool operator==(const LogEvent&) const = default;
};

// One job's update: attributes set in order, then the event, then the action.
struct GridUpdate {
  std::string id;  // "C.P"
  std::vector<AttrChange> set;
  GridAction action = GridAction::kNone;
  std::optional<ExitInfo> exit;  // required with kExited, refused with any other action
  std::string reason;            // kHold: HoldReason; kIdle: the event's text
  int hold_code = 0;             // kHold: HoldReasonCode (grid/codes.h)
  int hold_subcode = 0;          // kHold: HoldReasonSubCode
  std::optional<LogEvent> event;
  bool operator==(const GridUpdate&) const = default;
};

// How a gridmanager last found a grid resource, for the REST endpoint.
struct ResourceReport {
  std::string resource;     // "HOST:PORT"
  bool reachable = false;   // its last request got an answer
  double last_contact = 0;  // unix time of its last answer; 0: none yet
  std::string last_error;   // why it was last unreachable
  bool operator==(const ResourceReport&) const = default;
};

struct UpdateRequest {
  std::vector<GridUpdate> updates;
  std::vector<ResourceReport> resources;  // sent only when not empty
  bool operator==(const UpdateRequest&) const = default;
};

// One entry of a received grid/update, parsed on its own: a malformed entry fails alone.
struct ParsedUpdate {
  std::string id;  // empty when the entry has none
  Result<GridUpdate> update;
};
struct ParsedUpdateRequest {
  std::vector<ParsedUpdate> updates;
  std::vector<ResourceReport> resources;  // all or none: a malformed one fails the request
};

// The agent's answer per update: the job's status afterwards (grid/codes.h; kStatusLeftQueue
// when it left the queue), or why it was not applied.
struct UpdateResult {
  std::string id;
  int status = 0;
  std::string error;    // not empty: nothing of the update was applied
  bool moving = false;  // an Idle job the broker moves off its site (as PollJob::moving)
  bool operator==(const UpdateResult&) const = default;
};
struct UpdateResponse {
  std::vector<UpdateResult> results;  // one per update, in order
  bool operator==(const UpdateResponse&) const = default;
};

// The longest a poll waits, in seconds.
inline constexpr double kMaxPollTimeout = 60;

// The long poll: jobs of `proxy` changed after `since` (docs/api.md).
struct PollRequest {
  std::string proxy;
  uint64_t since = 0;
  std::string epoch;
  double timeout = 0;  // seconds, 0..kMaxPollTimeout, whole milliseconds
  bool operator==(const PollRequest&) const = default;
};
struct PollJob {
  std::string id;
  int status = 0;  // kStatusLeftQueue: the job left the queue without the gridmanager's word
  std::string ad;  // old-syntax ad; empty when the job left the queue
  // An Idle job the broker is moving off its site (its GridMigrate is set): the gridmanager
  // cancels it there if it has not started, then lets it go (docs/broker.md, "Moving queued
  // jobs"). Only with status Idle.
  bool moving = false;
  bool operator==(const PollJob&) const = default;
};
struct PollResponse {
  std::string epoch;
  uint64_t generation = 0;
  std::vector<PollJob> jobs;
  bool operator==(const PollResponse&) const = default;
};

boost::json::value ToJsonValue(const GridUpdate& u);
boost::json::value ToJsonValue(const UpdateRequest& r);
boost::json::value ToJsonValue(const UpdateResponse& r);
boost::json::value ToJsonValue(const PollRequest& r);
boost::json::value ToJsonValue(const PollResponse& r);
template <class T>
std::string ToJson(const T& message);  // defined for the types above

Result<GridUpdate> ParseGridUpdate(const boost::json::value& v);  // one entry of "updates"
Result<ParsedUpdateRequest> ParseUpdateRequest(const boost::json::object& o);
Result<UpdateResponse> ParseUpdateResponse(const boost::json::object& o);
Result<PollRequest> ParsePollRequest(const boost::json::object& o);
Result<PollResponse> ParsePollResponse(const boost::json::object& o);
// A JSON object from text, for the parsers above (tests, the fuzz target).
Result<boost::json::object> ParseJsonObject(std::string_view text);

// What the queue holds of a job's grid attempts: its Grid* attributes, read back.
struct StoredGridAttrs {
  int attempt = 0;
  std::string job_id;            // GridJobId; empty: nothing stored at a site
  std::string job_status;        // GridJobStatus
  std::string job_site_status;   // GridJobSiteStatus
  bool final = false;            // GridFinal
  std::optional<ExitInfo> exit;  // GridExitCode, GridExitBySignal
  std::string failure_code;      // GridFailureCode
  std::string failure_message;   // GridFailureMessage
};
StoredGridAttrs ReadGridAttrs(const classad::ClassAd& ad);

}  // namespace kite::grid
