// The Slurm adapter's stateful half: runs sbatch, squeue, scancel and scontrol (slurm_format.h
// holds what it writes and reads; command_adapter.h the half it shares with the sge adapter).
#include "gram/batch/slurm_adapter.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <set>

#include "common/exec_status.h"
#include "common/files.h"
#include "gram/batch/command.h"
#include "gram/batch/command_adapter.h"
#include "gram/batch/slurm_format.h"
#include "gram/fault.h"

namespace kite::gram::batch {
namespace {

using slurm::Phase;

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

// The cluster's variable for Slurm's tools and jobs, from the job manager's environment.
std::vector<std::string> SlurmToolEnvironment(const std::string& slurm_conf) {
  if (slurm_conf.empty()) return {};
  return {"SLURM_CONF=" + slurm_conf};
}

class SlurmAdapter : public CommandAdapter {
 public:
  explicit SlurmAdapter(AdapterOptions options, std::string slurm_conf)
      : CommandAdapter(std::move(options),
                       {.name = "slurm",
                        .server = "the Slurm controller",
                        .client = "Slurm's client (slurm-client)",
                        .submit_tool = "sbatch",
                        .contact_failure = ContactFailure,
                        .request_refused = RequestRefused,
                        .parse_submit = slurm::ParseSbatchOutput,
                        .crash_after_submit = Fault::kSlurmCrashAfterSbatch},
                       SlurmToolEnvironment(slurm_conf)),
        slurm_conf_(std::move(slurm_conf)),
        uid_(std::to_string(::geteuid())) {}

  std::string_view Name() const override { return "slurm"; }

  std::map<std::string, BatchOutcome> Poll(const std::vector<std::string>& ids) override {
    std::map<std::string, BatchOutcome> out;
    auto rows = BeginPoll<std::map<std::string, slurm::SqueueRow>>(ids.size(), "squeue",
                                                                   [this] { return QueryAll(); });
    if (!rows) return out;
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

  Result<SiteInfo> Info() override {
    if (Paused()) return Unreachable();
    std::string answers[3];
    const std::vector<std::string> asks[3] = {
        {"sinfo", "--noheader", "--Node", std::string("--format=") + slurm::kSinfoNodeFormat},
        {"sinfo", "--noheader", std::string("--format=") + slurm::kSinfoPartitionFormat},
        {"squeue", "--noheader", "--all", "--states=PENDING,RUNNING",
         std::string("--format=") + slurm::kSqueueStartFormat}};
    for (int i = 0; i < 3; ++i) {
      auto r = Run(asks[i][0], {asks[i].begin() + 1, asks[i].end()});
      if (!r) return Fail(r.error());
      if (r->exit_code != 0) {
        if (ContactFailure(*r)) return Unreachable(FirstLine(r->err));
        return Fail(ErrorCode::kUnavailable, asks[i][0] + " failed: " + FirstLine(r->err));
      }
      answers[i] = r->out;
    }
    return slurm::ParseSiteInfo(answers[0], answers[1], answers[2],
                                static_cast<double>(::time(nullptr)));
  }

 private:
  Result<std::string> SubmitNew(const JobSpec& spec) override {
    const std::string& dir = spec.control_dir;
    std::string script = dir + "/slurm.sh";
    if (auto st = WriteFileAtomic(script, slurm::BatchScript(spec, options().exec_path), 0755);
        !st) {
      return Fail(st.error());
    }
    return SubmitScript(dir, slurm::SbatchArgs(spec, script),
                        slurm::SbatchEnvironment(spec.env, slurm_conf_));
  }

  Result<std::string> FindSubmitted(const JobSpec& spec) override {
    return FindByName(slurm::JobName(spec));
  }

  // Every job of this account that Slurm knows, in every state: one squeue for all of them.
  Result<std::map<std::string, slurm::SqueueRow>> QueryAll() {
    auto r = Run("squeue", {"--noheader", "--states=all", "--user=" + uid_,
                            std::string("--format=") + slurm::kSqueueFormat});
    if (!r) return Fail(r.error());
    if (r->exit_code != 0) {
      if (ContactFailure(*r)) return Unreachable(FirstLine(r->err));
      return Fail(ErrorCode::kUnavailable, "squeue failed: " + FirstLine(r->err));
    }
    return slurm::ParseSqueue(r->out);
  }

  // The Slurm id of this account's job named `name`, in any state; empty when there is none.
  Result<std::string> FindByName(const std::string& name) {
    if (Paused()) return Unreachable();
    auto r = Run("squeue", {"--noheader", "--states=all", "--user=" + uid_, "--name=" + name,
                            std::string("--format=") + slurm::kSqueueFormat});
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
    auto r = Run("scontrol", {"--oneliner", "show", "job", sid});
    if (!r || r->exit_code != 0) return where;
    auto f = slurm::ParseScontrolJob(r->out);
    auto code = f.find("ExitCode");
    return code == f.end() ? where : "exit code " + code->second + "; " + where;
  }

  // At most one scancel per poll interval, for every cancel queued since the last (the job
  // manager polls on every pass, and cancels of many jobs come one request at a time).
  void SendCancels() override {
    if (!HasPendingCancels()) return;
    auto now = Clock::now();
    if (now < next_cancel_) return;
    next_cancel_ = now + options().poll_interval;
    std::vector<std::string> args = PendingCancels(now);
    auto r = Run("scancel", args);
    // Jobs that ended already make scancel complain: that is success here.
    if (!r || (r->exit_code != 0 && ContactFailure(*r))) {
      spdlog::warn("slurm: scancel of {} jobs failed, trying again: {}", args.size(),
                   r ? FirstLine(r->err) : r.error().message());
      return;
    }
    CancelsSent(now);
  }

  std::string slurm_conf_;  // the job manager's SLURM_CONF ("": Slurm's default)
  std::string uid_;
  Clock::time_point next_cancel_{};       // the next scancel waits until then
  std::set<std::string> unknown_states_;  // warned about once each
};

}  // namespace

std::unique_ptr<BatchAdapter> MakeSlurmAdapter(const AdapterOptions& options) {
  std::string slurm_conf = EnvValue(options.environment, "SLURM_CONF").value_or("");
  return std::make_unique<SlurmAdapter>(options, std::move(slurm_conf));
}

}  // namespace kite::gram::batch
