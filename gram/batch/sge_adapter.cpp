// The Grid Engine adapter's stateful half: runs qsub, qstat, qacct, qdel and qconf (sge_format.h
// holds what it writes and reads; command_adapter.h the half it shares with the slurm adapter).
#include "gram/batch/sge_adapter.h"

#include <pwd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <set>

#include "common/exec_status.h"
#include "common/files.h"
#include "common/strings.h"
#include "gram/batch/command.h"
#include "gram/batch/command_adapter.h"
#include "gram/batch/sge_format.h"
#include "gram/fault.h"

namespace kite::gram::batch {
namespace {

// A job qstat no longer lists, without kite-exec's record, whose accounting record has not
// appeared after this long is lost (Grid Engine writes it within its flush_time, 15 s by
// default; a job deleted before it started has none).
constexpr std::chrono::seconds kAccountingGrace{45};
// At most this many `qacct -j` per poll (each reads the accounting file); the rest wait for the
// next poll. Only jobs that ended without kite-exec's record need one.
constexpr int kMaxQacctPerPoll = 8;

// The variables that say which cell the commands talk to.
constexpr std::array<const char*, 4> kCellVariables = {"SGE_ROOT", "SGE_CELL", "SGE_QMASTER_PORT",
                                                       "SGE_EXECD_PORT"};

// Grid Engine's words when a command could not talk to qmaster: nothing was decided, and the same
// request may be sent again later.
bool ContactFailure(const CommandResult& r) {
  auto words = {
      std::string_view("unable to send message to qmaster"),
      std::string_view("unable to contact qmaster"),
      std::string_view("commlib error"),
      std::string_view("got send error"),
      std::string_view("Connection refused"),
      std::string_view("unable to read qmaster name"),
      std::string_view("cell directory"),
  };
  return r.timed_out || MentionsAny(r.err, words) || MentionsAny(r.out, words);
}

// Grid Engine's words when it refuses a job for what the job asks (a queue, project or parallel
// environment that does not exist, a request no queue satisfies): submitting it again cannot work.
bool RequestRefused(const CommandResult& r) {
  return MentionsAny(r.err, {
                                "unknown queue",
                                "does not exist",
                                "no suitable queues",
                                "is not a memory value",
                                "is not a time value",
                                "unknown resource",
                                "denied",
                                "not allowed",
                            });
}

// The variables of the job manager's environment that say which cell the tools talk to.
std::vector<std::string> CellEnvironment(const std::vector<std::string>& environment) {
  std::vector<std::string> cell;
  for (const char* name : kCellVariables) {
    if (auto v = EnvValue(environment, name); v && !v->empty()) cell.push_back(name + ("=" + *v));
  }
  return cell;
}

class SgeAdapter : public CommandAdapter {
 public:
  explicit SgeAdapter(const AdapterOptions& options)
      : CommandAdapter(options,
                       {.name = "sge",
                        .server = "Grid Engine's qmaster",
                        .client = "Grid Engine's client (gridengine-client)",
                        .submit_tool = "qsub",
                        .contact_failure = ContactFailure,
                        .request_refused = RequestRefused,
                        .parse_submit = sge::ParseQsubOutput,
                        .crash_after_submit = Fault::kSgeCrashAfterQsub},
                       CellEnvironment(options.environment)) {
    if (auto pe = EnvValue(options.environment, "KITE_SGE_PE"); pe && !pe->empty()) pe_ = *pe;
    if (const passwd* pw = ::getpwuid(::geteuid())) user_ = pw->pw_name;
    if (user_.empty()) user_ = std::to_string(::geteuid());
  }

  std::string_view Name() const override { return "sge"; }

  std::map<std::string, BatchOutcome> Poll(const std::vector<std::string>& ids) override {
    std::map<std::string, BatchOutcome> out;
    auto rows = BeginPoll<std::map<std::string, sge::QstatRow>>(ids.size(), "qstat",
                                                                [this] { return QueryAll(); });
    if (!rows) return out;
    // qstat -xml answers an empty list, exit 0 and no word on stderr when it cannot reach
    // qmaster (8.1.9): before a missing job counts as ended, qmaster must have answered.
    bool confirmed = false;
    int qacct_budget = kMaxQacctPerPoll;
    for (const auto& id : ids) {
      auto [dir, sid] = SplitId(id);
      std::optional<sge::QstatRow> row;
      if (auto it = rows->find(sid); !sid.empty() && it != rows->end()) row = it->second;
      if (row) missing_since_.erase(sid);
      sge::Ended ended;
      if (!row) {
        if (auto st = ReadExecStatus(dir)) ended.status = *st;
        if (!ended.status) ended.wrapper_alive = ExecWrapperAlive(dir);
        if (!ended.status && !ended.wrapper_alive && !sid.empty()) {
          if (!confirmed) {
            if (!QmasterAnswers()) return out;
            confirmed = true;
          }
          if (!LookUpAccounting(sid, &ended, &qacct_budget)) continue;
        }
      }
      auto o = sge::DecideOutcome(sid, row, ended,
                                  "Grid Engine's output of the script: " + dir + "/sge.out");
      if (!o) {
        if (row && unknown_states_.insert(row->state).second) {
          spdlog::warn("sge: job {} is in state {}, unknown to Kite: waiting for another", sid,
                       row->state);
        }
        continue;
      }
      // A job in the error state stays in the queue until someone acts: Kite reports it lost,
      // and deletes it so that it cannot run after all (a resubmission may be running by then).
      if (row && sge::ClassifyState(row->state) == sge::Phase::kError) QueueCancel(sid);
      if (o->state == BatchState::kEnded || o->state == BatchState::kLost) {
        acct_.erase(sid);
        missing_since_.erase(sid);
      }
      out[id] = *o;
    }
    return out;
  }

  Result<SiteInfo> Info() override {
    if (Paused()) return Unreachable();
    auto ask = [this](const std::string& tool,
                      const std::vector<std::string>& args) -> Result<std::string> {
      auto r = Run(tool, args);
      if (!r) return Fail(r.error());
      if (r->exit_code != 0) {
        if (ContactFailure(*r)) return Unreachable(FirstLine(r->err));
        return Fail(ErrorCode::kUnavailable, tool + " failed: " + FirstLine(r->err));
      }
      return r->out;
    };
    auto queues = ask("qstat", {"-g", "c"});
    if (!queues) return Fail(queues.error());
    auto jobs = ask("qstat", {"-xml", "-u", "*"});
    if (!jobs) return Fail(jobs.error());
    auto hosts = ask("qhost", {});
    if (!hosts) return Fail(hosts.error());
    std::vector<std::string> limits;
    for (const auto& q : sge::QueueNames(*queues)) {
      if (auto conf = ask("qconf", {"-sq", q})) limits.push_back(std::move(*conf));
    }
    return sge::ParseSiteInfo(*queues, *jobs, *hosts, limits);
  }

 private:
  Result<std::string> SubmitNew(const JobSpec& spec) override {
    const std::string& dir = spec.control_dir;
    std::string pe;
    if (spec.resources.cpus > 1) {
      auto p = ParallelEnvironment();
      if (!p) return Fail(p.error());
      pe = *p;
    }
    std::string script = dir + "/sge.sh";
    auto args = sge::QsubArgs(spec, script, pe);
    if (!args) return Fail(args.error());
    if (auto st = WriteFileAtomic(script, sge::JobScript(spec, options().exec_path), 0755); !st) {
      return Fail(st.error());
    }
    return SubmitScript(dir, *args, sge::QsubEnvironment(spec.env, tool_env()));
  }

  Result<std::string> FindSubmitted(const JobSpec& spec) override {
    return FindByName(sge::JobName(spec));
  }

  // Every job of this account that qmaster knows (pending, running, held, in error): one qstat.
  Result<std::map<std::string, sge::QstatRow>> QueryAll() {
    if (Paused()) return Unreachable();
    auto r = Run("qstat", {"-xml", "-u", user_});
    if (!r) return Fail(r.error());
    if (r->exit_code != 0) {
      if (ContactFailure(*r)) return Unreachable(FirstLine(r->err));
      return Fail(ErrorCode::kUnavailable, "qstat failed: " + FirstLine(r->err));
    }
    auto rows = sge::ParseQstatXml(r->out);
    if (!rows) return Fail(ErrorCode::kUnavailable, rows.error().message());
    return rows;
  }

  // Whether qmaster answers (plain qstat, unlike qstat -xml, fails when it cannot reach it).
  bool QmasterAnswers() {
    auto r = Run("qstat", {"-u", user_});
    if (r && r->exit_code == 0) return true;
    std::string why = r ? FirstLine(r->err) : r.error().message();
    if (r && ContactFailure(*r)) Unreachable(why);
    spdlog::warn("sge: qstat -xml listed fewer jobs, and qmaster does not answer: {}", why);
    return false;
  }

  // Fills ended->acct (or acct_given_up) for job `sid` from the cache or one `qacct -j`. False
  // when the job must wait for another poll without a decision (no budget left, qacct failed).
  bool LookUpAccounting(const std::string& sid, sge::Ended* ended, int* budget) {
    if (auto it = acct_.find(sid); it != acct_.end()) {
      ended->acct = it->second;
      return true;
    }
    auto now = Clock::now();
    auto since = missing_since_.try_emplace(sid, now).first->second;
    if (*budget <= 0) return false;
    --*budget;
    auto r = Run("qacct", {"-j", sid});
    if (!r) {
      spdlog::warn("sge: qacct -j {}: {}", sid, r.error().message());
      return false;
    }
    auto rec = sge::ParseQacct(r->out + r->err);
    if (rec) {
      acct_[sid] = *rec;
      ended->acct = *rec;
      return true;
    }
    if (rec.error().code() != ErrorCode::kNotFound) {
      spdlog::warn("sge: qacct -j {}: {}", sid, rec.error().message());
      return false;
    }
    ended->acct_given_up = now - since >= kAccountingGrace;
    return true;
  }

  // The job number of this account's job named `name` that Grid Engine knows, waiting or running
  // (qstat) or ended (qacct); empty when there is none.
  Result<std::string> FindByName(const std::string& name) {
    auto rows = QueryAll();
    if (!rows) return Fail(rows.error());
    // Several (only if someone resubmitted by hand): the newest is the one that counts.
    std::string newest;
    for (const auto& [sid, row] : *rows) {
      // Job numbers are digits: the longer, or the same length and later in order, is newer.
      bool newer = newest.empty() || sid.size() > newest.size() ||
                   (sid.size() == newest.size() && sid > newest);
      if (row.name == name && newer) newest = sid;
    }
    if (!newest.empty()) return newest;
    if (!QmasterAnswers()) return Unreachable("qmaster does not answer");
    auto r = Run("qacct", {"-j", name});
    if (!r) return Fail(r.error());
    auto rec = sge::ParseQacct(r->out + r->err);
    if (rec) return rec->id;
    if (rec.error().code() == ErrorCode::kNotFound) return std::string();
    return Fail(ErrorCode::kUnavailable, "qacct -j " + name + ": " + rec.error().message());
  }

  // The parallel environment for jobs asking for several CPUs: KITE_SGE_PE, else `smp` when the
  // cell has one; "" when neither.
  Result<std::string> ParallelEnvironment() {
    if (pe_) return *pe_;
    auto r = Run("qconf", {"-spl"});
    if (!r) return Fail(r.error());
    if (r->exit_code != 0 && ContactFailure(*r)) return Unreachable(FirstLine(r->err));
    // "no parallel environment defined" (exit 1) when there is none.
    std::string found;
    for (const auto& line : Split(r->out, '\n'))
      if (line == "smp") found = line;
    pe_ = found;
    return found;
  }

  void SendCancels() override {
    if (!HasPendingCancels() || Paused()) return;
    auto now = Clock::now();
    std::vector<std::string> args = PendingCancels(now);
    auto r = Run("qdel", args);
    // Jobs that ended already make qdel say "does not exist": that is success here.
    if (!r || (r->exit_code != 0 && ContactFailure(*r))) {
      std::string why = r ? FirstLine(r->err) : r.error().message();
      if (r) Unreachable(why);
      spdlog::warn("sge: qdel of {} jobs failed, trying again: {}", args.size(), why);
      return;
    }
    CancelsSent(now);
  }

  // qstat stopped listing it and its accounting record is awaited: a qdel would only be told
  // the job does not exist.
  bool GoneFromQueue(const std::string& sid) const override { return missing_since_.contains(sid); }

  std::optional<std::string> pe_;  // the parallel environment, once known ("" for none)
  std::string user_;               // this account's name, for qstat -u
  std::map<std::string, sge::AcctRecord> acct_;             // accounting records read
  std::map<std::string, Clock::time_point> missing_since_;  // gone from qstat, no record yet
  std::set<std::string> unknown_states_;                    // warned about once each
};

}  // namespace

std::unique_ptr<BatchAdapter> MakeSgeAdapter(const AdapterOptions& options) {
  return std::make_unique<SgeAdapter>(options);
}

}  // namespace kite::gram::batch
