// The Slurm adapter's stateful half: runs sbatch, squeue, scancel and scontrol (slurm_format.h
// holds what it writes and reads).
#include "gram/batch/slurm_adapter.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <set>

#include "common/exec_status.h"
#include "common/files.h"
#include "common/strings.h"
#include "gram/batch/command.h"
#include "gram/batch/slurm_format.h"
#include "gram/fault.h"

namespace kite::gram::batch {
namespace {

using Clock = std::chrono::steady_clock;
using slurm::Phase;

// No Slurm command may hold the job manager's thread longer than this.
constexpr std::chrono::seconds kCommandTimeout{30};
// After the controller could not be reached, Submit and Poll answer at once for this long
// instead of waiting on it again for every job (a command takes ~9 s to give up on a controller
// that is down, and the job manager's one thread waits for it).
constexpr std::chrono::seconds kUnreachablePause{15};
// A cancel of the same job is sent again at most this often (callers repeat Cancel every pass).
constexpr std::chrono::seconds kCancelResend{5};

// "<dir>#<slurm id>" -> dir, slurm id (empty when the id is not known: the job ran, Slurm forgot
// it before a restarted job manager could look it up).
std::pair<std::string, std::string> SplitId(const std::string& id) {
  auto hash = id.rfind('#');
  if (hash == std::string::npos) return {id, ""};
  return {id.substr(0, hash), id.substr(hash + 1)};
}

// Slurm's words when a command could not talk to the controller: nothing was decided, and the
// same request may be sent again later.
bool ContactFailure(const CommandResult& r) {
  return r.timed_out || MentionsAny(r.err, {
                                               "Unable to contact slurm controller",
                                               "Socket timed out",
                                               "Connection refused",
                                               "Zero Bytes were transmitted",
                                               "Communication connection failure",
                                               "temporarily unavailable",
                                               "Slurm backup controller in standby mode",
                                           });
}

// Slurm's words when it refuses a job for what the job asks (a partition or account that does
// not exist, more than any node has): submitting it again cannot work.
bool RequestRefused(const CommandResult& r) {
  return MentionsAny(r.err, {
                                "Invalid partition name",
                                "Invalid account",
                                "Invalid qos",
                                "Requested node configuration is not available",
                                "Memory specification can not be satisfied",
                                "Requested time limit is invalid",
                                "More processors requested than permitted",
                            });
}

class SlurmAdapter : public BatchAdapter {
 public:
  explicit SlurmAdapter(AdapterOptions options) : options_(std::move(options)) {
    if (const char* conf = std::getenv("SLURM_CONF")) slurm_conf_ = conf;
    const char* path = std::getenv("PATH");
    path_ = path ? path : "/usr/local/bin:/usr/bin:/bin";
    uid_ = std::to_string(::geteuid());
  }

  std::string_view Name() const override { return "slurm"; }

  Result<std::string> Submit(const JobSpec& spec) override {
    const std::string& dir = spec.control_dir;
    if (auto id = ReadFile(dir + "/slurm.id")) {
      std::string sid(Trim(*id));
      if (!sid.empty()) return dir + "#" + sid;
    }
    // The script is written (durably) before sbatch runs: with it, the job may be in Slurm
    // already, under its name.
    if (FileExists(dir + "/slurm.sh")) {
      auto found = FindByName(slurm::JobName(spec));
      if (!found) return Fail(found.error());
      if (!found->empty()) return Remember(dir, *found);
      // Ran, and Slurm has forgotten it since: kite-exec's record tells the rest.
      if (FileExists(dir + "/status") || ExecWrapperAlive(dir)) return dir + "#";
    }
    if (Clock::now() < unreachable_until_) return Unreachable();
    std::string script = dir + "/slurm.sh";
    if (auto st = WriteFileAtomic(script, slurm::BatchScript(spec, options_.exec_path), 0755);
        !st) {
      return Fail(st.error());
    }
    auto r = Run("sbatch", slurm::SbatchArgs(spec, script),
                 slurm::SbatchEnvironment(spec.env, slurm_conf_));
    if (!r) return Fail(r.error());
    if (r->exit_code != 0) {
      if (ContactFailure(*r)) return Unreachable(FirstLine(r->err));
      return Fail(RequestRefused(*r) ? ErrorCode::kInvalidInput : ErrorCode::kIo,
                  "sbatch refused the job: " + FirstLine(r->err));
    }
    auto sid = slurm::ParseSbatchOutput(r->out);
    if (!sid) {
      // It may have been accepted all the same: look it up by name on the next try.
      return Fail(ErrorCode::kUnavailable, sid.error().message());
    }
    // Test-only: die as a crash would between Slurm's acceptance and any record of the id.
    if (FaultFires("slurm-crash-after-sbatch")) std::_Exit(9);
    return Remember(dir, *sid);
  }

  std::map<std::string, BatchOutcome> Poll(const std::vector<std::string>& ids) override {
    SendCancels();
    std::map<std::string, BatchOutcome> out;
    auto now = Clock::now();
    if (now < next_poll_ || now < unreachable_until_) return out;
    next_poll_ = now + options_.poll_interval;
    auto rows = QueryAll();
    if (!rows) {
      spdlog::warn("slurm: asking squeue about {} jobs: {}", ids.size(), rows.error().message());
      return out;
    }
    for (const auto& id : ids) {
      auto [dir, sid] = SplitId(id);
      std::optional<slurm::SqueueRow> row;
      if (auto it = rows->find(sid); !sid.empty() && it != rows->end()) row = it->second;
      Phase phase = row ? slurm::ClassifyState(row->state) : Phase::kFinished;
      // kite-exec's files matter only once Slurm says the job is over, or has forgotten it.
      std::optional<ExecStatus> status;
      bool alive = false;
      if (phase == Phase::kFinished || phase == Phase::kLimit) {
        if (auto st = ReadExecStatus(dir)) status = *st;
        if (!row && !status) alive = ExecWrapperAlive(dir);
      }
      std::string detail;
      if (row && phase == Phase::kFinished && !status) detail = Details(sid, dir);
      auto o = slurm::DecideOutcome(sid, row, status, alive, detail);
      if (o) {
        out[id] = *o;
      } else if (unknown_states_.insert(row->state).second) {
        spdlog::warn("slurm: job {} is in state {}, unknown to Kite: waiting for another", sid,
                     row->state);
      }
    }
    return out;
  }

  // Queued: the next Poll sends one scancel for every job cancelled since the last.
  Status Cancel(const std::string& id) override {
    auto [dir, sid] = SplitId(id);
    if (sid.empty()) return {};  // Slurm has forgotten it: it ended long ago
    auto now = Clock::now();
    auto it = cancel_sent_.find(sid);
    if (it != cancel_sent_.end() && now - it->second < kCancelResend) return {};
    to_cancel_.insert(sid);
    return {};
  }

 private:
  std::unexpected<Error> Unreachable(const std::string& why = "") {
    if (!why.empty()) {
      unreachable_until_ = Clock::now() + kUnreachablePause;
      last_unreachable_ = why;
    }
    return Fail(ErrorCode::kUnavailable,
                "the Slurm controller cannot be reached (" + last_unreachable_ + ")");
  }

  Result<std::string> Remember(const std::string& dir, const std::string& sid) {
    // Lost in a crash, it is found again by name (slurm.sh is there).
    if (!WriteQuick(dir + "/slurm.id", sid + "\n")) {
      spdlog::warn("slurm: cannot write {}/slurm.id; job {} will be looked up by name", dir, sid);
    }
    return dir + "#" + sid;
  }

  std::vector<std::string> ToolEnvironment() const {
    std::vector<std::string> env = {"PATH=" + path_};
    if (!slurm_conf_.empty()) env.push_back("SLURM_CONF=" + slurm_conf_);
    return env;
  }

  // Runs Slurm command `tool` from PATH. Fails when the tool is missing or cannot start; a
  // command that ran is a result whatever its exit code.
  Result<CommandResult> Run(const std::string& tool, const std::vector<std::string>& args,
                            const std::vector<std::string>& env) {
    std::string path = FindInPath(tool, path_);
    if (path.empty()) {
      return Fail(ErrorCode::kNotFound, tool + " is not in the job manager's PATH (" + path_ +
                                            "): is Slurm's client (slurm-client) installed?");
    }
    std::vector<std::string> argv = {path};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = RunCommand(argv, env, kCommandTimeout);
    if (r && r->timed_out) {
      Unreachable(tool + " took longer than " + std::to_string(kCommandTimeout.count()) + " s");
    }
    return r;
  }

  // Every job of this account that Slurm knows, in every state: one squeue for all of them.
  Result<std::map<std::string, slurm::SqueueRow>> QueryAll() {
    auto r = Run("squeue",
                 {"--noheader", "--states=all", "--user=" + uid_,
                  std::string("--format=") + slurm::kSqueueFormat},
                 ToolEnvironment());
    if (!r) return Fail(r.error());
    if (r->exit_code != 0) {
      if (ContactFailure(*r)) return Unreachable(FirstLine(r->err));
      return Fail(ErrorCode::kUnavailable, "squeue failed: " + FirstLine(r->err));
    }
    return slurm::ParseSqueue(r->out);
  }

  // The Slurm id of this account's job named `name`, in any state; empty when there is none.
  Result<std::string> FindByName(const std::string& name) {
    if (Clock::now() < unreachable_until_) return Unreachable();
    auto r = Run("squeue",
                 {"--noheader", "--states=all", "--user=" + uid_, "--name=" + name,
                  std::string("--format=") + slurm::kSqueueFormat},
                 ToolEnvironment());
    if (!r) return Fail(r.error());
    if (r->exit_code != 0) {
      if (ContactFailure(*r)) return Unreachable(FirstLine(r->err));
      return Fail(ErrorCode::kUnavailable, "squeue failed: " + FirstLine(r->err));
    }
    auto rows = slurm::ParseSqueue(r->out);
    // Several (only if someone resubmitted by hand): the newest is the one that counts.
    return rows.empty() ? std::string() : rows.rbegin()->first;
  }

  // What scontrol says about a job that ended without kite-exec's record, for the message.
  std::string Details(const std::string& sid, const std::string& dir) {
    std::string where = "Slurm's output of the script: " + dir + "/slurm.out";
    auto r = Run("scontrol", {"--oneliner", "show", "job", sid}, ToolEnvironment());
    if (!r || r->exit_code != 0) return where;
    auto f = slurm::ParseScontrolJob(r->out);
    auto code = f.find("ExitCode");
    return code == f.end() ? where : "exit code " + code->second + "; " + where;
  }

  // At most one scancel per poll interval, for every cancel queued since the last (the job
  // manager polls on every pass, and cancels of many jobs come one request at a time).
  void SendCancels() {
    if (to_cancel_.empty()) return;
    auto now = Clock::now();
    if (now < next_cancel_) return;
    next_cancel_ = now + options_.poll_interval;
    std::erase_if(cancel_sent_, [&](const auto& e) { return now - e.second > kCancelResend; });
    std::vector<std::string> args(to_cancel_.begin(), to_cancel_.end());
    auto r = Run("scancel", args, ToolEnvironment());
    // Jobs that ended already make scancel complain: that is success here.
    if (!r || (r->exit_code != 0 && ContactFailure(*r))) {
      spdlog::warn("slurm: scancel of {} jobs failed, trying again: {}", args.size(),
                   r ? FirstLine(r->err) : r.error().message());
      return;
    }
    for (const auto& sid : to_cancel_) cancel_sent_[sid] = now;
    to_cancel_.clear();
  }

  AdapterOptions options_;
  std::string slurm_conf_;  // this process's SLURM_CONF ("": Slurm's default)
  std::string path_;        // where the commands are looked up
  std::string uid_;
  Clock::time_point next_poll_{};
  Clock::time_point next_cancel_{};  // the next scancel waits until then
  Clock::time_point unreachable_until_{};
  std::string last_unreachable_ = "no contact yet";
  std::set<std::string> to_cancel_;                       // Slurm ids to scancel at the next Poll
  std::map<std::string, Clock::time_point> cancel_sent_;  // when each was last sent
  std::set<std::string> unknown_states_;                  // warned about once each
};

}  // namespace

std::unique_ptr<BatchAdapter> MakeSlurmAdapter(const AdapterOptions& options) {
  return std::make_unique<SlurmAdapter>(options);
}

}  // namespace kite::gram::batch
