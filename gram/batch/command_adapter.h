// The half that the adapters driving a batch system through its command-line tools (slurm, sge)
// share: finding and running a tool with a deadline, pausing after the system could not be
// reached, running the submit tool and recording the job's batch id beside its script, the queue
// of cancels, and resuming a submission that a restart interrupted. Each adapter supplies its
// words and phrases (CommandAdapterWords), its script and submit arguments, how it finds and
// follows jobs, and how it sends the cancels queued here.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gram/batch/batch_adapter.h"
#include "gram/batch/command.h"
#include "gram/fault.h"

namespace kite::gram::batch {

// What one adapter calls things, and how it reads its tools. The control directory holds
// `<name>.sh` (its script, written durably before the submit tool runs) and `<name>.id` (the batch
// system's id, written after).
struct CommandAdapterWords {
  std::string name;    // "slurm": log prefix and file names
  std::string server;  // "the Slurm controller": what cannot be reached
  std::string client;  // "Slurm's client (slurm-client)": what to install when a tool is missing
  std::string submit_tool;  // "sbatch"
  // The tool's words when it could not talk to the system: nothing was decided, and the same
  // request may be sent again later.
  bool (*contact_failure)(const CommandResult&) = nullptr;
  // The submit tool's words when the system refuses a job for what it asks (a queue that does not
  // exist, more than any node has): submitting it again cannot work.
  bool (*request_refused)(const CommandResult&) = nullptr;
  // The batch id in the submit tool's output.
  Result<std::string> (*parse_submit)(std::string_view out) = nullptr;
  // Test-only: fires between the system's acceptance of a job and any record of its id.
  Fault crash_after_submit;
};

class CommandAdapter : public BatchAdapter {
 public:
  using Clock = std::chrono::steady_clock;

  // The batch id of a job this adapter already handed over (from `<name>.id`, or found by name
  // after a restart between the submit command and writing that file); otherwise SubmitNew.
  Result<std::string> Submit(const JobSpec& spec) final;

  // Queued: the adapter's SendCancels sends every cancel queued since the last. A cancel of the
  // same job is queued again at most every kCancelResend.
  Status Cancel(const std::string& id) final;

 protected:
  // No command may hold the job manager's thread longer than this.
  static constexpr std::chrono::seconds kCommandTimeout{30};
  // After the system could not be reached, Submit and Poll answer at once for this long instead
  // of waiting on it again for every job.
  static constexpr std::chrono::seconds kUnreachablePause{15};
  // A cancel of the same job is sent again at most this often (callers repeat Cancel every pass).
  static constexpr std::chrono::seconds kCancelResend{5};

  // `tool_env` is what every tool gets besides PATH (the variables naming the cluster).
  CommandAdapter(AdapterOptions options, CommandAdapterWords words,
                 std::vector<std::string> tool_env);

  // Submits a job the batch system has not seen. Called only while the system is not paused.
  virtual Result<std::string> SubmitNew(const JobSpec& spec) = 0;
  // The batch id under which the system knows `spec` (by its job name); empty when it knows none.
  virtual Result<std::string> FindSubmitted(const JobSpec& spec) = 0;

  // kUnavailable naming the last reason the system could not be reached; with `why`, a new
  // reason, and a pause of kUnreachablePause starts.
  std::unexpected<Error> Unreachable(const std::string& why = "");
  // True while a pause after an unreachable system lasts.
  bool Paused() const { return Clock::now() < unreachable_until_; }
  // True (and the next poll is due a poll interval later) when Poll should ask the system now:
  // the last poll is an interval ago and no pause lasts.
  bool PollDue();
  // How every Poll begins: the queued cancels go out; then, when a poll is due, `query` asks the
  // system about all of this account's jobs. nullopt when nothing is decided this time (not due,
  // or the query failed: logged with `what` and the number of jobs asked about).
  template <class Rows, class Query>
  std::optional<Rows> BeginPoll(size_t jobs, std::string_view what, Query query) {
    SendCancels();
    if (!PollDue()) return std::nullopt;
    Result<Rows> rows = query();
    if (!rows) {
      LogPollFailure(jobs, what, rows.error());
      return std::nullopt;
    }
    return std::move(*rows);
  }
  // Sends the cancels queued since the last call (Cancel queues them).
  virtual void SendCancels() = 0;
  // True when the system's queue no longer lists batch job `sid` (it ended, or a cancel took
  // it out): a cancel has nothing left to act on and is not sent again.
  virtual bool GoneFromQueue(const std::string& /*sid*/) const { return false; }

  void LogPollFailure(size_t jobs, std::string_view what, const Error& e) const;

  // Writes `<name>.id` in `dir` (a quick write: lost in a crash, the job is found by name) and
  // returns the batch id "<dir>#<sid>".
  Result<std::string> Remember(const std::string& dir, const std::string& sid);

  // Runs the submit tool for the job whose control directory is `dir` (its script written) and
  // returns the batch id it prints, remembered: kUnavailable when the system could not be reached
  // or the answer could not be read (the job may be there: it is looked up by name on the next
  // try), kInvalidInput when it refused what the job asks, kIo when it refused otherwise.
  Result<std::string> SubmitScript(const std::string& dir, const std::vector<std::string>& args,
                                   const std::vector<std::string>& env);

  // PATH and the cluster's variables: the whole environment of a tool run.
  std::vector<std::string> ToolEnvironment() const;
  const std::vector<std::string>& tool_env() const { return tool_env_; }

  // Runs batch tool `tool` from the job manager's PATH with `env`. Fails when the tool is missing
  // or cannot start; a command that ran is a result whatever its exit code. A command that times
  // out starts a pause.
  Result<CommandResult> Run(const std::string& tool, const std::vector<std::string>& args,
                            const std::vector<std::string>& env);
  Result<CommandResult> Run(const std::string& tool, const std::vector<std::string>& args) {
    return Run(tool, args, ToolEnvironment());
  }

  // The cancels to send `now` (every one queued since the last send); forgets sends older than
  // kCancelResend, so that a job cancelled again is sent again.
  std::vector<std::string> PendingCancels(Clock::time_point now);
  bool HasPendingCancels() const { return !to_cancel_.empty(); }
  // Queues a cancel of batch job `sid` (the adapter's own decision).
  void QueueCancel(const std::string& sid) { to_cancel_.insert(sid); }
  // Every pending cancel was sent (at `sent`).
  void CancelsSent(Clock::time_point sent);

  const AdapterOptions& options() const { return options_; }
  const CommandAdapterWords& words() const { return words_; }

 private:
  AdapterOptions options_;
  CommandAdapterWords words_;
  std::vector<std::string> tool_env_;  // the cluster's variables ("NAME=value")
  std::string path_;                   // where the tools are looked up
  Clock::time_point next_poll_{};
  Clock::time_point unreachable_until_{};
  std::string last_unreachable_ = "no contact yet";
  std::set<std::string> to_cancel_;                       // batch ids to cancel at the next send
  std::map<std::string, Clock::time_point> cancel_sent_;  // when each was last sent
};

// "<dir>#<batch id>" -> dir, batch id (empty when it is not known: the job ran, and the batch
// system forgot it before a restarted job manager could look it up).
std::pair<std::string, std::string> SplitId(const std::string& id);

// The value of variable `name` in `env` ("NAME=value" entries); nullopt when it is not there.
std::optional<std::string> EnvValue(const std::vector<std::string>& env, std::string_view name);

}  // namespace kite::gram::batch
