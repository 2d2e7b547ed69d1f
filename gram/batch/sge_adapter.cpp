// The Grid Engine adapter's stateful half: runs qsub, qstat, qacct, qdel and qconf (sge_format.h
// holds what it writes and reads).
#include "gram/batch/sge_adapter.h"

#include <pwd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <set>

#include "common/exec_status.h"
#include "common/files.h"
#include "common/strings.h"
#include "gram/batch/command.h"
#include "gram/batch/sge_format.h"
#include "gram/fault.h"

namespace kite::gram::batch {
namespace {

using Clock = std::chrono::steady_clock;

// No Grid Engine command may hold the job manager's thread longer than this.
constexpr std::chrono::seconds kCommandTimeout{30};
// After qmaster could not be reached, Submit and Poll answer at once for this long instead of
// asking it again for every job.
constexpr std::chrono::seconds kUnreachablePause{15};
// A cancel of the same job is sent again at most this often (callers repeat Cancel every pass).
constexpr std::chrono::seconds kCancelResend{5};
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

// "<dir>#<job number>" -> dir, job number (empty when it is not known: the job ran and Grid
// Engine forgot it before a restarted job manager could look it up).
std::pair<std::string, std::string> SplitId(const std::string& id) {
  auto hash = id.rfind('#');
  if (hash == std::string::npos) return {id, ""};
  return {id.substr(0, hash), id.substr(hash + 1)};
}

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

class SgeAdapter : public BatchAdapter {
 public:
  explicit SgeAdapter(AdapterOptions options) : options_(std::move(options)) {
    for (const char* name : kCellVariables) {
      if (const char* v = std::getenv(name); v && *v)
        cell_env_.push_back(name + ("=" + std::string(v)));
    }
    if (const char* pe = std::getenv("KITE_SGE_PE"); pe && *pe) pe_ = pe;
    const char* path = std::getenv("PATH");
    path_ = path ? path : "/usr/local/bin:/usr/bin:/bin";
    if (const passwd* pw = ::getpwuid(::geteuid())) user_ = pw->pw_name;
    if (user_.empty()) user_ = std::to_string(::geteuid());
  }

  std::string_view Name() const override { return "sge"; }

  Result<std::string> Submit(const JobSpec& spec) override {
    const std::string& dir = spec.control_dir;
    if (auto id = ReadFile(dir + "/sge.id")) {
      std::string sid(Trim(*id));
      if (!sid.empty()) return dir + "#" + sid;
    }
    // The script is written (durably) before qsub runs: with it, the job may be in Grid Engine
    // already, under its name.
    if (FileExists(dir + "/sge.sh")) {
      auto found = FindByName(sge::JobName(spec));
      if (!found) return Fail(found.error());
      if (!found->empty()) return Remember(dir, *found);
      // Ran, and Grid Engine has forgotten it since: kite-exec's record tells the rest.
      if (FileExists(dir + "/status") || ExecWrapperAlive(dir)) return dir + "#";
    }
    if (Clock::now() < unreachable_until_) return Unreachable();
    std::string pe;
    if (spec.resources.cpus > 1) {
      auto p = ParallelEnvironment();
      if (!p) return Fail(p.error());
      pe = *p;
    }
    std::string script = dir + "/sge.sh";
    auto args = sge::QsubArgs(spec, script, pe);
    if (!args) return Fail(args.error());
    if (auto st = WriteFileAtomic(script, sge::JobScript(spec, options_.exec_path), 0755); !st) {
      return Fail(st.error());
    }
    auto r = Run("qsub", *args, sge::QsubEnvironment(spec.env, cell_env_));
    if (!r) return Fail(r.error());
    if (r->exit_code != 0) {
      if (ContactFailure(*r)) return Unreachable(FirstLine(r->err));
      return Fail(RequestRefused(*r) ? ErrorCode::kInvalidInput : ErrorCode::kIo,
                  "qsub refused the job: " + FirstLine(r->err));
    }
    auto sid = sge::ParseQsubOutput(r->out);
    if (!sid) {
      // It may have been accepted all the same: look it up by name on the next try.
      return Fail(ErrorCode::kUnavailable, sid.error().message());
    }
    // Test-only: die as a crash would between Grid Engine's acceptance and any record of the id.
    if (FaultFires("sge-crash-after-qsub")) std::_Exit(9);
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
      spdlog::warn("sge: asking qstat about {} jobs: {}", ids.size(), rows.error().message());
      return out;
    }
    // qstat -xml answers an empty list, exit 0 and no word on stderr when it cannot reach
    // qmaster (8.1.9): before a missing job counts as ended, qmaster must have answered.
    bool confirmed = false;
    int qacct_budget = kMaxQacctPerPoll;
    for (const auto& id : ids) {
      auto [dir, sid] = SplitId(id);
      std::optional<sge::QstatRow> row;
      if (auto it = rows->find(sid); !sid.empty() && it != rows->end()) row = it->second;
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
      if (row && sge::ClassifyState(row->state) == sge::Phase::kError) to_cancel_.insert(sid);
      if (o->state == BatchState::kEnded || o->state == BatchState::kLost) {
        acct_.erase(sid);
        missing_since_.erase(sid);
      }
      out[id] = *o;
    }
    return out;
  }

  // Queued: the next Poll sends one qdel for every job cancelled since the last.
  Status Cancel(const std::string& id) override {
    auto [dir, sid] = SplitId(id);
    if (sid.empty()) return {};  // Grid Engine has forgotten it: it ended long ago
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
                "Grid Engine's qmaster cannot be reached (" + last_unreachable_ + ")");
  }

  Result<std::string> Remember(const std::string& dir, const std::string& sid) {
    // Lost in a crash, it is found again by name (sge.sh is there).
    if (!WriteQuick(dir + "/sge.id", sid + "\n")) {
      spdlog::warn("sge: cannot write {}/sge.id; job {} will be looked up by name", dir, sid);
    }
    return dir + "#" + sid;
  }

  std::vector<std::string> ToolEnvironment() const {
    std::vector<std::string> env = {"PATH=" + path_};
    env.insert(env.end(), cell_env_.begin(), cell_env_.end());
    return env;
  }

  // Runs Grid Engine command `tool` from PATH. Fails when the tool is missing or cannot start; a
  // command that ran is a result whatever its exit code.
  Result<CommandResult> Run(const std::string& tool, const std::vector<std::string>& args,
                            const std::vector<std::string>& env) {
    std::string path = FindInPath(tool, path_);
    if (path.empty()) {
      return Fail(ErrorCode::kNotFound,
                  tool + " is not in the job manager's PATH (" + path_ +
                      "): is Grid Engine's client (gridengine-client) installed?");
    }
    std::vector<std::string> argv = {path};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = RunCommand(argv, env, kCommandTimeout);
    if (r && r->timed_out) {
      Unreachable(tool + " took longer than " + std::to_string(kCommandTimeout.count()) + " s");
    }
    return r;
  }

  // Every job of this account that qmaster knows (pending, running, held, in error): one qstat.
  Result<std::map<std::string, sge::QstatRow>> QueryAll() {
    if (Clock::now() < unreachable_until_) return Unreachable();
    auto r = Run("qstat", {"-xml", "-u", user_}, ToolEnvironment());
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
    auto r = Run("qstat", {"-u", user_}, ToolEnvironment());
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
    auto r = Run("qacct", {"-j", sid}, ToolEnvironment());
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
    auto r = Run("qacct", {"-j", name}, ToolEnvironment());
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
    auto r = Run("qconf", {"-spl"}, ToolEnvironment());
    if (!r) return Fail(r.error());
    if (r->exit_code != 0 && ContactFailure(*r)) return Unreachable(FirstLine(r->err));
    // "no parallel environment defined" (exit 1) when there is none.
    std::string found;
    for (const auto& line : Split(r->out, '\n'))
      if (line == "smp") found = line;
    pe_ = found;
    return found;
  }

  void SendCancels() {
    if (to_cancel_.empty() || Clock::now() < unreachable_until_) return;
    auto now = Clock::now();
    std::erase_if(cancel_sent_, [&](const auto& e) { return now - e.second > kCancelResend; });
    std::vector<std::string> args(to_cancel_.begin(), to_cancel_.end());
    auto r = Run("qdel", args, ToolEnvironment());
    // Jobs that ended already make qdel say "does not exist": that is success here.
    if (!r || (r->exit_code != 0 && ContactFailure(*r))) {
      std::string why = r ? FirstLine(r->err) : r.error().message();
      if (r) Unreachable(why);
      spdlog::warn("sge: qdel of {} jobs failed, trying again: {}", args.size(), why);
      return;
    }
    for (const auto& sid : to_cancel_) cancel_sent_[sid] = now;
    to_cancel_.clear();
  }

  AdapterOptions options_;
  std::vector<std::string> cell_env_;  // SGE_ROOT=... and the rest that this process has
  std::optional<std::string> pe_;      // the parallel environment, once known ("" for none)
  std::string path_;                   // where the commands are looked up
  std::string user_;                   // this account's name, for qstat -u
  Clock::time_point next_poll_{};
  Clock::time_point unreachable_until_{};
  std::string last_unreachable_ = "no contact yet";
  std::set<std::string> to_cancel_;                         // job numbers to qdel at the next Poll
  std::map<std::string, Clock::time_point> cancel_sent_;    // when each was last sent
  std::map<std::string, sge::AcctRecord> acct_;             // accounting records read
  std::map<std::string, Clock::time_point> missing_since_;  // gone from qstat, no record yet
  std::set<std::string> unknown_states_;                    // warned about once each
};

}  // namespace

std::unique_ptr<BatchAdapter> MakeSgeAdapter(const AdapterOptions& options) {
  return std::make_unique<SgeAdapter>(options);
}

}  // namespace kite::gram::batch
