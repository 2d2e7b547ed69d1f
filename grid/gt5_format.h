// What Kite sends a GRAM5 gatekeeper through kite-gt5-helper, and reads back (docs/grid-gt5.md):
// the job's RSL, with its files served by the helper's GASS server under names only the job's
// site is told; GRAM's job states and error codes as Kite's. Pure: no I/O, safe from any thread;
// unit-tested and fuzzed on their own.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "gram/protocol.h"
#include "grid/rsl.h"
#include "grid/site_link.h"

namespace kite::grid::gt5 {

// One file the helper's GASS server lets the job's site read (R) or write (W), at URL path
// "/NAME".
struct ServedFile {
  char mode = 'R';
  std::string name;
  std::string path;  // absolute, on this machine
  bool operator==(const ServedFile&) const = default;
};

struct Gt5Job {
  std::string rsl;
  std::vector<ServedFile> served;
};

// How long an uncommitted job waits at the site for the commit (RSL two_phase), in seconds.
inline constexpr int kCommitTimeout = 600;

// The name under which the helper serves `file` of the job whose request ids start with `base`:
// 32 hex digits of HMAC-SHA256 under `key`. A site is told only its own jobs' names and cannot
// work out others' without the key.
std::string ServedName(std::string_view key, std::string_view base, std::string_view file);

// The job described in GRAM5's RSL: two-phase commit, state saved for a job manager restart, a
// scratch directory of its own at the site, and its files as URLs under `gass_base`
// ("https://HOST:PORT") named with ServedName(key, base, ...). `files` maps the description's
// GASS names to this machine's files. kInvalidInput for what cannot be described.
Result<Gt5Job> DescribeJob(const gram::JobDescription& desc, const JobFiles& files,
                           std::string_view gass_base, std::string_view key, std::string_view base);

// The RSL of GRAM's STDIO_UPDATE signal that names the job's stdout and stderr again, from their
// start ("" when the job sends neither here): a job manager that reloaded a job (after it was
// restarted) sends them only when told again. Served names as DescribeJob gives them.
std::string StdioRsl(const gram::JobDescription& desc, std::string_view gass_base,
                     std::string_view key, std::string_view base);
// The served names of the job's stdout and stderr (those it sends here).
std::vector<std::string> StdioNames(const gram::JobDescription& desc, std::string_view key,
                                    std::string_view base);

// GRAM's job state (globus_gram_protocol_job_state_t) as Kite's; nullopt for a value GRAM does
// not define.
std::optional<gram::JobState> MapState(int gram_state);
// Why GRAM says a job failed, as Kite's failure code.
gram::FailureCode MapFailure(int gram_error);

// A STATUS answer from the helper: "STATE ERROR EXIT" (EXIT "-" when the site gives none).
struct StatusReply {
  int state = 0;
  int error = 0;
  std::optional<int> exit;
};
Result<StatusReply> ParseStatus(const std::vector<std::string>& fields);

// GRAM error codes the link acts on (globus_gram_protocol_constants.h).
inline constexpr int kErrorAuthorization = 7;
inline constexpr int kErrorConnectionFailed = 12;
inline constexpr int kErrorProtocolFailed = 10;
inline constexpr int kErrorUserProxyNotFound = 29;
inline constexpr int kErrorContactingJobManager = 79;
inline constexpr int kErrorJobQueryDenial = 94;  // the job manager refuses it in this state
inline constexpr int kErrorWaitingForCommit = 110;
inline constexpr int kErrorJmStopped = 130;
inline constexpr int kErrorJobContactNotFound = 156;
inline constexpr int kErrorAuthorizationDenied = 162;

// Whether `e` (from ErrorOf) says no job manager answers at a job's contact (GRAM error 79):
// the one case for GRAM's restart. A helper that died, or a gatekeeper that does not answer, is
// not: restarting a job whose job manager is alive would name its output again mid-run.
bool JobManagerGone(const Error& e);
// Whether `e` (from ErrorOf) carries GRAM error `gram_error`.
bool IsGramError(const Error& e, int gram_error);

// GRAM's error as Kite's error: no answer (kUnavailable), the job is unknown (kNotFound), the
// identity is refused (kAuthFailed), or the site's refusal (kInvalidInput), with `text`.
Error ErrorOf(int gram_error, const std::string& text);

}  // namespace kite::grid::gt5
