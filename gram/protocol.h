// The messages of Kite's GRAM-like protocol (docs/protocol.md): job descriptions, job status,
// states, failure codes, and their JSON forms. Pure data and parsing: no I/O, safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace kite::gram {

// Both ends send `Kite-Protocol: 1` and refuse a request or reply carrying another version.
inline constexpr int kProtocolVersion = 1;
inline constexpr char kProtocolHeader[] = "Kite-Protocol";
// Set by the gatekeeper on requests it forwards to a job manager: the verified client identity
// (Globus-form subject of the end entity) and when the presented chain lapses (Unix seconds).
inline constexpr char kIdentityHeader[] = "Kite-Identity";
inline constexpr char kIdentityExpiresHeader[] = "Kite-Identity-Expires";
// Largest request or reply body either end accepts; bigger ones get 413.
inline constexpr size_t kMaxBodyBytes = 1u << 20;

// GRAM-like job states. The numbers are stored on disk: never renumber.
enum class JobState {
  kPendingCommit = 1,  // stored, waiting for the client's commit (or the commit timeout)
  kStageIn = 2,        // fetching the executable and input files from GASS
  kPending = 3,        // handed to the batch system, not yet running
  kActive = 4,         // running
  kStageOut = 5,       // ended; sending the rest of stdout/stderr to GASS
  kDone = 6,           // ended and all output acknowledged (see `exit`)
  kFailed = 7,         // will not run (or not to completion); see `failure`
};
std::string_view JobStateName(JobState state);  // "pending-commit", "stage-in", ...
std::optional<JobState> ParseJobState(std::string_view name);
bool IsTerminal(JobState state);  // done or failed

// Why a job failed. Numbers are stored on disk: never renumber.
enum class FailureCode {
  kNone = 0,
  kCancelled = 1,            // the client cancelled it
  kBadExecutable = 2,        // the executable could not be started (missing, not executable)
  kBadRequest = 3,           // the description cannot work at this site (bad file name, ...)
  kAuthorisation = 4,        // the identity may not do this here
  kCredentialExpired = 5,    // the delegated proxy expired before the job could use it
  kStageInFailed = 6,        // an input could not be fetched from GASS
  kStageOutFailed = 7,       // output could not be delivered to GASS
  kBatchSubmitFailed = 8,    // the batch system refused the job
  kBatchLost = 9,            // the batch system lost the job (its wrapper vanished)
  kBatchLimitExceeded = 10,  // the batch system killed it for exceeding a limit (walltime, memory)
};
std::string_view FailureCodeName(FailureCode code);  // "bad-executable", ...
std::optional<FailureCode> ParseFailureCode(std::string_view name);
// True for site reasons (resubmitting, here or elsewhere, may work); false for "can never run as
// described" (the gridmanager holds the job instead).
bool IsRetryable(FailureCode code);

// A file named either at the site (absolute path) or on the client's GASS server (a relative
// name under the job's GASS URL). At most one is set; both empty means "none".
struct FileRef {
  std::string site;
  std::string gass;
  bool empty() const { return site.empty() && gass.empty(); }
  bool operator==(const FileRef&) const = default;
};

struct StageFile {
  std::string gass;  // name on the GASS server
  std::string as;    // file name in the job's directory at the site
  // stage_out only: `as` must be a folder (transfer_output_files "d/": what it holds comes back).
  bool folder = false;
  bool operator==(const StageFile&) const = default;
};

// What a job asks of the site's batch system. Zero or empty: the site's default. Adapters that
// cannot honour a request ignore it (the fork adapter ignores them all).
// Bounds of the resource requests: far above any real job, low enough to fit every batch system.
inline constexpr int64_t kMaxRequestCpus = 1 << 20;
inline constexpr int64_t kMaxRequestMemoryMb = int64_t{1} << 40;
inline constexpr int64_t kMaxRequestWalltimeS = int64_t{100} * 365 * 86400;

struct ResourceRequest {
  int64_t cpus = 0;        // CPU cores for the job's one task
  int64_t memory_mb = 0;   // memory, MiB
  int64_t walltime_s = 0;  // run-time limit, seconds (Slurm rounds up to whole minutes)
  std::string queue;       // partition (Slurm) or queue; see ValidBatchName
  std::string project;     // account or project charged; see ValidBatchName
  bool empty() const {
    return cpus == 0 && memory_mb == 0 && walltime_s == 0 && queue.empty() && project.empty();
  }
  bool operator==(const ResourceRequest&) const = default;
};

// What the client asks the site to run.
struct JobDescription {
  FileRef executable;  // required; a GASS executable is staged and made 0755
  std::vector<std::string> arguments;
  std::vector<std::pair<std::string, std::string>> environment;
  FileRef stdin_file;   // none: /dev/null
  FileRef stdout_file;  // gass: streamed/staged there; site: written there; none: kept at site
  FileRef stderr_file;
  std::vector<StageFile> stage_in;
  // Sent whole to GASS once the job has ended, after stdout and stderr (transfer_output_files):
  // `as` names a file or a folder in the job's directory at the site (a subdirectory allowed).
  // A folder's regular files go as "GASS/a/b"; anything else in it (a link, a FIFO), or a file
  // the job did not make, fails the job (stage-out-failed).
  std::vector<StageFile> stage_out;
  std::string gass_url;        // base URL of the job's files on GASS: https://HOST:PORT/jobs/<id>
  bool stream_output = false;  // send stdout while the job runs (else only at the end)
  bool stream_error = false;
  std::string delegation_id;  // credential for GASS and callbacks (required when either is used)
  std::string callback_url;   // HTTPS URL for state-change callbacks; empty: none
  ResourceRequest resources;  // "resources" in JSON; absent: the site's defaults
  bool operator==(const JobDescription&) const = default;
};

// How a finished job ended.
struct ExitInfo {
  bool signaled = false;
  int code = 0;  // exit code, or signal number when signaled
  bool operator==(const ExitInfo&) const = default;
};

// What the site says about a job (reply to submit/commit/status/cancel/signal, callback body).
struct JobStatus {
  std::string job_id;
  std::string contact;  // https://HOST:PORT/jobs/<job_id>
  JobState state = JobState::kPendingCommit;
  int64_t seq = 0;  // grows with each state change: a receiver drops stale callbacks
  FailureCode failure = FailureCode::kNone;
  std::string failure_message;
  std::optional<ExitInfo> exit;
  int64_t stdout_offset = 0;  // bytes of stdout acknowledged by GASS
  int64_t stderr_offset = 0;
  // The site's own word for the state, for people to read ("RUNNING" at an ARC CE), where its
  // grid type names states its own way; empty: Kite's name says it. Not on Kite's wire.
  std::string site_state;
  bool operator==(const JobStatus&) const = default;
};

struct SubmitRequest {
  std::string request_id;
  JobDescription job;
};
// commit, cancel, commit-end: only the request id.
struct SimpleRequest {
  std::string request_id;
  // cancel only: cancel only a job that has not started (pending-commit, stage-in, pending);
  // one that has is answered 409 and left alone (the broker moving a queued job elsewhere).
  bool only_pending = false;
};
struct SignalRequest {
  std::string request_id;
  std::string gass_url;       // non-empty: the GASS server moved here
  std::string delegation_id;  // non-empty: use this delegation from now on
  std::string callback_url;   // non-empty: send state-change callbacks here from now on
  // The sender's run (a gridmanager's start, Unix ms; 0: not said). A signal from an earlier run
  // than the newest one applied to the job changes nothing: a request the site handles late,
  // after its sender died, must not take the job back to that sender's dead servers.
  int64_t run = 0;
};
struct DelegationStartRequest {
  std::string request_id;
  std::string delegation_id;  // non-empty: refresh this delegation in place
};
struct DelegationCompleteRequest {
  std::string request_id;
  std::string chain_pem;  // the signed proxy, then the delegator's chain
};
struct DelegationReply {
  std::string delegation_id;
  std::string csr_pem;   // in the reply to a start
  double not_after = 0;  // in the reply to a completion: Unix seconds
};
struct ErrorReply {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

// Parsing is strict about types, sizes and required fields (kInvalidInput with the field's name)
// and ignores unknown fields, so a later minor addition does not break an older peer.
Result<SubmitRequest> ParseSubmitRequest(std::string_view json);
Result<SimpleRequest> ParseSimpleRequest(std::string_view json);
Result<SignalRequest> ParseSignalRequest(std::string_view json);
Result<DelegationStartRequest> ParseDelegationStartRequest(std::string_view json);
Result<DelegationCompleteRequest> ParseDelegationCompleteRequest(std::string_view json);
Result<DelegationReply> ParseDelegationReply(std::string_view json);
// The site ad's text in the `info` reply ({"protocol": 1, "ad": "[ ... ]"}); kInvalidInput when
// the reply is not that shape (the ad itself is the caller's to parse).
Result<std::string> ParseInfoReply(std::string_view json);
Result<JobStatus> ParseJobStatus(std::string_view json);
Result<ErrorReply> ParseErrorReply(std::string_view json);
Result<JobDescription> ParseJobDescription(std::string_view json);

std::string ToJson(const SubmitRequest& r);
std::string ToJson(const SimpleRequest& r);
std::string ToJson(const SignalRequest& r);
std::string ToJson(const DelegationStartRequest& r);
std::string ToJson(const DelegationCompleteRequest& r);
std::string ToJson(const DelegationReply& r);
std::string ToJson(const JobStatus& s);
std::string ToJson(const ErrorReply& e);
std::string ToJson(const JobDescription& j);

// Identifiers that end up in file names and URLs.
bool ValidRequestId(std::string_view id);  // 1..128 printable ASCII, no blanks
bool ValidJobId(std::string_view id);      // 16..64 of [0-9a-z-]
// A queue, partition or project name: 1..64 of [A-Za-z0-9_.+-] (it reaches batch commands).
bool ValidBatchName(std::string_view name);
// A GASS name or staged file name: relative, no "..", no empty or dot-leading component.
bool ValidRelativeName(std::string_view name);

// The error code a bare HTTP status stands for (a reply without a Kite error body). The other
// way, and the codes' wire names, are common/error.h's one table (HttpStatusFor, ErrorCodeName).
ErrorCode ErrorCodeForHttp(unsigned status);

}  // namespace kite::gram
