// The agent's job queue.
#include "agent/queue.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>

#include "agent/job_transitions.h"
#include "agent/userlog.h"
#include "classad/io.h"
#include "classad/parser.h"
#include "common/strings.h"

namespace kite::agent {
namespace {

constexpr size_t kTrimAfterRetiring = 1000;

// Attributes that belong to each job, never to the shared cluster ad: they change per job.
constexpr std::string_view kJobLevel[] = {"ProcId",     "JobStatus",      "EnteredCurrentStatus",
                                          "HoldReason", "HoldReasonCode", "HoldReasonSubCode"};

bool IsJobLevel(std::string_view name) {
  for (auto n : kJobLevel) {
    if (n.size() == name.size() && std::equal(n.begin(), n.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        }))
      return true;
  }
  return false;
}

int64_t Secs(double t) {
  return static_cast<int64_t>(std::floor(t));
}

}  // namespace

std::string StoredAdText(const classad::ClassAd& ad) {
  std::string out;
  for (auto& a : ad) {
    classad::AppendName(out, a.name());
    out += " = ";
    classad::AppendUnparse(out, a.expr());
    out += '\n';
  }
  return out;
}

const char* StatusLetter(int s) {
  switch (s) {
    case kIdle:
      return "I";
    case kRunning:
      return "R";
    case kRemoved:
      return "X";
    case kCompleted:
      return "C";
    case kHeld:
      return "H";
    case kSuspended:
      return "S";
  }
  return "?";
}

const char* StatusName(int s) {
  switch (s) {
    case kIdle:
      return "Idle";
    case kRunning:
      return "Running";
    case kRemoved:
      return "Removed";
    case kCompleted:
      return "Completed";
    case kHeld:
      return "Held";
    case kSuspended:
      return "Suspended";
  }
  return "Unknown";
}

std::string JobIdString(JobKey k) {
  return std::to_string(k.cluster) + "." + std::to_string(k.proc);
}

std::optional<JobKey> ParseJobIdString(std::string_view id) {
  auto dot = id.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto c = ParseCount(id.substr(0, dot)), p = ParseCount(id.substr(dot + 1));
  if (!c || !p || *c > kMaxJobId || *p > kMaxJobId) return std::nullopt;
  return JobKey{static_cast<int>(*c), static_cast<int>(*p)};
}

Result<JobSelector> ParseJobSelector(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Fail(ErrorCode::kInvalidInput, "bad job id '" + std::string(text) + "': " + why);
  };
  auto number = [&](std::string_view part, int64_t min) -> Result<int> {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || end != part.data() + part.size() ||
        (ec != std::errc() && ec != std::errc::result_out_of_range))
      return bad("expected CLUSTER or CLUSTER.PROC");
    if (ec == std::errc::result_out_of_range || v > kMaxJobId)
      return bad("ids go up to " + std::to_string(kMaxJobId));
    if (v < min) return bad(min == 1 ? "cluster ids start at 1" : "ids are not negative");
    return static_cast<int>(v);
  };
  size_t dot = text.find('.');
  auto cluster = number(text.substr(0, dot), 1);
  if (!cluster) return Fail(cluster.error());
  JobSelector s;
  s.cluster = *cluster;
  if (dot != std::string_view::npos) {
    auto proc = number(text.substr(dot + 1), 0);
    if (!proc) return Fail(proc.error());
    s.proc = *proc;
  }
  return s;
}

JobQueue::JobQueue(store::JobQueueStore* store, Clock clock, size_t history_max)
    : store_(store), clock_(std::move(clock)), history_max_(history_max) {}

Job& JobQueue::AddJob(Cluster& c, JobKey key, classad::ClassAd ad) {
  auto [it, inserted] = jobs_.try_emplace(key);
  Job& j = it->second;
  j.key = key;
  j.cluster = &c;
  j.ad = std::move(ad);
  j.ad.SetParent(&c.ad);
  j.status = static_cast<int>(j.ad.EvaluateInt("JobStatus").value_or(kIdle));
  j.universe = static_cast<int>(j.ad.EvaluateInt("JobUniverse").value_or(kUniverseVanilla));
  if (inserted) ++c.present;
  if (on_status_) on_status_(j, false);
  return j;
}

Status JobQueue::Load() {
  // An ad that does not load in full is never dropped: what parses is kept and the job is held
  // with the reason (a running one is stopped by the agent's recovery), so nothing acknowledged
  // vanishes and nothing runs unmanaged.
  std::map<int, std::string> cluster_damage;
  std::vector<std::pair<JobKey, std::string>> damaged;
  auto st = store_->Load(
      [&](int id, std::string_view text) {
        std::vector<std::string> bad;
        Cluster& c = clusters_[id];
        c.id = id;
        c.ad = classad::ParseOldAdSkippingErrors(text, &bad);
        c.total = static_cast<int>(c.ad.EvaluateInt("TotalSubmitProcs").value_or(0));
        c.stored = c.loaded = true;
        if (!bad.empty()) {
          spdlog::error("queue: cluster {} ad does not load in full: {}", id, bad.front());
          cluster_damage[id] = "the cluster's stored ad is damaged (" + bad.front() + ")";
        }
      },
      [&](JobKey key, std::string_view text) {
        std::vector<std::string> bad;
        auto ad = classad::ParseOldAdSkippingErrors(text, &bad);
        auto c = clusters_.find(key.cluster);
        if (c == clusters_.end()) {
          spdlog::error("queue: job {} has no cluster ad", JobIdString(key));
          Cluster& lost = clusters_[key.cluster];
          lost.id = key.cluster;
          lost.stored = lost.loaded = true;
          c = clusters_.find(key.cluster);
          cluster_damage[key.cluster] = "the cluster's stored ad is missing";
        }
        if (!bad.empty()) {
          spdlog::error("queue: job {} ad does not load in full: {}", JobIdString(key),
                        bad.front());
          damaged.emplace_back(key, "the job's stored ad is damaged (" + bad.front() + ")");
        }
        AddJob(c->second, key, std::move(ad));
      });
  if (!st) return st;
  for (auto& [key, j] : jobs_) {
    auto it = cluster_damage.find(key.cluster);
    if (it != cluster_damage.end()) damaged.emplace_back(key, it->second);
  }
  for (auto& [key, why] : damaged) HoldDamaged(jobs_.at(key), why);
  // A cluster whose jobs have all left is not kept (it may remain after a crash mid-retire).
  for (auto it = clusters_.begin(); it != clusters_.end();) {
    it = it->second.present == 0 ? clusters_.erase(it) : std::next(it);
  }
  return {};
}

void JobQueue::HoldDamaged(Job& job, const std::string& why) {
  if (job.status != kIdle && !RunUnderWay(job.status)) {
    AddEvent(job, kEventGeneric, "Queue damage found at load: " + why + ".");
    return;
  }
  Hold(job,
       "Kite could not load this job in full from its queue: " + why +
           ". Look at the job (kite q -json C.P), then release or remove it.",
       kHoldQueueDamage);
}

// The id is stored as handed out in the same commit as what was pending: one sync, not two.
Result<int> JobQueue::NewCluster() {
  int id = 0;
  auto st = Flush([&]() -> Status {
    auto r = store_->ReserveClusterId();
    if (!r) return Fail(r.error());
    id = *r;
    return {};
  });
  if (!st) return Fail(st.error());
  reserved_.insert(id);
  return id;
}

Result<std::vector<int>> JobQueue::NewClusters(int n) {
  std::vector<int> ids;
  auto st = Flush([&]() -> Status {
    ids.clear();
    for (int i = 0; i < n; ++i) {
      auto r = store_->ReserveClusterId();
      if (!r) return Fail(r.error());
      ids.push_back(*r);
    }
    return {};
  });
  if (!st) return Fail(st.error());
  reserved_.insert(ids.begin(), ids.end());
  return ids;
}

Status JobQueue::ReturnCluster(int id) {
  if (!reserved_.count(id)) {
    return Fail(ErrorCode::kConflict,
                "cluster " + std::to_string(id) + " is not a cluster id handed out and unused");
  }
  if (auto st = Flush(); !st) return Fail(st.error());
  if (auto st = store_->ReturnClusterId(id); !st) return Fail(st.error());
  reserved_.erase(id);
  return {};
}

namespace {

Result<classad::ExprPtr> ParseSubmitAttr(const SubmitAttr& a) {
  if (auto st = classad::CheckAttributeName(a.name); !st) return Fail(st.error());
  auto e = classad::ParseExpr(a.expr);
  if (!e) return Fail(ErrorCode::kInvalidInput, a.name + ": " + e.error().message());
  return *e;
}

// What a submit may set that the agent itself acts on: a job starts Idle or Held, in a universe
// Kite runs, under a ProcId that names it alone.
Status CheckJobLevel(const classad::ClassAd& ad, std::set<int64_t>* procs, bool dag) {
  auto whole = [&](const char* name) -> Result<std::optional<int64_t>> {
    const classad::Expr* e = ad.Lookup(name);
    if (!e) return std::optional<int64_t>();
    auto v = ad.EvaluateInt(name);
    if (!v)
      return Fail(ErrorCode::kInvalidInput, std::string(name) + " must be an integer literal");
    return std::optional<int64_t>(*v);
  };
  auto proc = whole("ProcId");
  if (!proc) return Fail(proc.error());
  if (!*proc || **proc < 0 || **proc > kMaxJobId)
    return Fail(ErrorCode::kInvalidInput,
                "ProcId must be an integer from 0 to " + std::to_string(kMaxJobId));
  if (!procs->insert(**proc).second)
    return Fail(ErrorCode::kInvalidInput, "ProcId " + std::to_string(**proc) + " appears twice");
  auto status = whole("JobStatus");
  if (!status) return Fail(status.error());
  if (*status && **status != kIdle && **status != kHeld)
    return Fail(ErrorCode::kInvalidInput, "JobStatus at submit must be 1 (Idle) or 5 (Held), not " +
                                              std::to_string(**status));
  auto universe = whole("JobUniverse");
  if (!universe) return Fail(universe.error());
  if (dag != (*universe && **universe == kUniverseScheduler))
    return Fail(ErrorCode::kInvalidInput, dag ? "a DAG's job must have JobUniverse 7"
                                              : "JobUniverse 7 (a DAG) is submitted with "
                                                "`kite dag submit`, not as a job");
  if (*universe && **universe != kUniverseVanilla && **universe != kUniverseGrid &&
      **universe != kUniverseLocal && **universe != kUniverseScheduler)
    return Fail(ErrorCode::kInvalidInput,
                "JobUniverse " + std::to_string(**universe) +
                    " is not one Kite runs (5 vanilla, 9 grid, 12 local)");
  return {};
}

}  // namespace

Result<int> JobQueue::Submit(const SubmitRequest& req, bool durable) {
  if (req.procs.empty()) return Fail(ErrorCode::kInvalidInput, "a cluster needs at least one job");
  if (req.procs.size() > kMaxJobsPerSubmit)
    return Fail(ErrorCode::kInvalidInput, "a cluster may hold at most " +
                                              std::to_string(kMaxJobsPerSubmit) +
                                              " jobs; submit several clusters");
  if (!reserved_.count(req.cluster))
    return Fail(ErrorCode::kConflict, "cluster " + std::to_string(req.cluster) +
                                          " is not a fresh cluster id (ask for one first)");
  double now = clock_();
  classad::ClassAd common;
  std::vector<std::pair<std::string, classad::ExprPtr>> job_level;
  for (auto& a : req.common) {
    auto e = ParseSubmitAttr(a);
    if (!e) return Fail(e.error());
    // The cluster's id is the one handed out, whatever a request says.
    if (EqualsIgnoreCase(a.name, "ClusterId") &&
        classad::Unparse(**e) != std::to_string(req.cluster))
      return Fail(ErrorCode::kInvalidInput, "ClusterId " + a.expr + " is not the cluster's id " +
                                                std::to_string(req.cluster));
    if (IsJobLevel(a.name)) {
      job_level.emplace_back(a.name, *e);
    } else {
      common.Insert(a.name, *e);
    }
  }
  std::vector<classad::ClassAd> procs(req.procs.size());
  std::set<int64_t> proc_ids;
  for (size_t i = 0; i < req.procs.size(); ++i) {
    for (auto& [name, e] : job_level) procs[i].Insert(name, e);
    for (auto& a : req.procs[i]) {
      auto e = ParseSubmitAttr(a);
      if (!e) return Fail(e.error());
      // A job's ClusterId is its cluster's: one of its own would say it belongs to another.
      if (EqualsIgnoreCase(a.name, "ClusterId"))
        return Fail(ErrorCode::kInvalidInput,
                    "job " + std::to_string(i) + ": ClusterId is the cluster's, not a job's own");
      procs[i].Insert(a.name, *e);
    }
    if (!procs[i].LookupOwn("ProcId")) procs[i].Assign("ProcId", static_cast<int64_t>(i));
    if (!procs[i].LookupOwn("JobStatus")) procs[i].Assign("JobStatus", int64_t{kIdle});
    procs[i].Assign("EnteredCurrentStatus", Secs(now));
    procs[i].SetParent(&common);
    auto st = CheckJobLevel(procs[i], &proc_ids, req.dag);
    procs[i].SetParent(nullptr);
    if (!st) return Fail(st.error().Wrap("job " + std::to_string(i)));
  }
  common.Assign("ClusterId", static_cast<int64_t>(req.cluster));
  common.Assign("QDate", Secs(now));
  common.Assign("TotalSubmitProcs", static_cast<int64_t>(req.procs.size()));
  // Everything parsed: from here on the cluster goes in whole.
  if (durable) {
    if (auto st = Flush(); !st) return Fail(st.error());
  }
  reserved_.erase(req.cluster);
  Cluster& c = clusters_[req.cluster];
  c.id = req.cluster;
  c.ad = std::move(common);
  c.total = static_cast<int>(req.procs.size());
  std::string submit_body = EventBody(kEventSubmit, SubmitDetail("<127.0.0.1:0>"));
  for (auto& ad : procs) {
    auto proc = ad.EvaluateInt("ProcId").value_or(0);
    Job& j = AddJob(c, JobKey{req.cluster, static_cast<int>(proc)}, std::move(ad));
    MarkDirty(j);
    AddEvent(j, kEventSubmit, submit_body);
  }
  if (!durable) {
    stats_.submitted += req.procs.size();
    return static_cast<int>(req.procs.size());
  }
  if (auto st = Flush(); !st) {
    // Not durable: take the cluster back out so memory matches disk.
    for (auto it = jobs_.lower_bound({req.cluster, 0});
         it != jobs_.end() && it->first.cluster == req.cluster;)
      it = jobs_.erase(it);
    clusters_.erase(req.cluster);
    dirty_.clear();
    events_.clear();
    return Fail(st.error());
  }
  stats_.submitted += req.procs.size();
  return static_cast<int>(req.procs.size());
}

Job* JobQueue::Find(JobKey key) {
  auto it = jobs_.find(key);
  return it == jobs_.end() ? nullptr : &it->second;
}

Cluster* JobQueue::FindCluster(int id) {
  auto it = clusters_.find(id);
  return it == clusters_.end() ? nullptr : &it->second;
}

void JobQueue::MarkDirty(Job& job) {
  if (!job.dirty) {
    job.dirty = true;
    dirty_.push_back(job.key);
  }
}

void JobQueue::SetAttr(Job& job, std::string_view name, classad::ExprPtr value) {
  job.ad.Insert(name, std::move(value));
  MarkDirty(job);
}

void JobQueue::SetStatus(Job& job, int status) {
  if (job.status != status) job.ad.Assign("LastJobStatus", static_cast<int64_t>(job.status));
  job.status = status;
  job.ad.Assign("JobStatus", static_cast<int64_t>(status));
  job.ad.Assign("EnteredCurrentStatus", Secs(clock_()));
  MarkDirty(job);
  if (on_status_) on_status_(job, false);
}

// A suspension is over (continued, or the run ended some other way): its length joins
// CumulativeSuspensionTime, as in HTCondor.
void JobQueue::EndSuspension(Job& job) {
  int64_t since = job.ad.EvaluateInt("LastSuspensionTime").value_or(0);
  int64_t now = Secs(clock_());
  if (since > 0 && now > since) {
    job.ad.Assign("CumulativeSuspensionTime",
                  job.ad.EvaluateInt("CumulativeSuspensionTime").value_or(0) + (now - since));
  }
  job.ad.Assign("LastSuspensionTime", int64_t{0});
}

void JobQueue::AddEvent(Job& job, int code, const std::string& body) {
  PendingEvent e;
  e.record = store::EventRecord{job.key, clock_(), code, body};
  if (auto log = job.ad.EvaluateString("UserLog")) e.user_log = *log;
  if (auto log = job.ad.EvaluateString("DAGManNodesLog"); log && *log != e.user_log)
    e.dag_log = *log;
  events_.push_back(std::move(e));
}

Status JobQueue::Transition(Job& job, JobEvent event, const Change& change) {
  auto to = NextJobStatus(job.status, event);
  if (!to) {
    return Fail(ErrorCode::kConflict, RefusalReason(JobIdString(job.key), job.status, event));
  }
  if (job.status == kSuspended) EndSuspension(job);
  SetStatus(job, *to);
  switch (event) {
    case JobEvent::kSuspend:
      job.ad.Assign("TotalSuspensions", job.ad.EvaluateInt("TotalSuspensions").value_or(0) + 1);
      job.ad.Assign("LastSuspensionTime", Secs(clock_()));
      AddEvent(job, kEventSuspended,
               EventBody(kEventSuspended, "\n\tNumber of processes actually suspended: 1"));
      if (!change.reason.empty()) AddEvent(job, kEventGeneric, change.reason);
      break;
    case JobEvent::kContinue:
      AddEvent(job, kEventUnsuspended, EventBody(kEventUnsuspended, ""));
      break;
    case JobEvent::kStart:
      if (change.program_started) RecordStart(job);
      break;
    case JobEvent::kRequeue:
      AddEvent(job, kEventEvicted, EventBody(kEventEvicted, EvictedDetail(nullptr)));
      if (!change.reason.empty()) AddEvent(job, kEventGeneric, change.reason);
      break;
    case JobEvent::kComplete: {
      ++stats_.completed;
      RunBytes bytes{job.ad.EvaluateInt("RunBytesWritten").value_or(0),
                     job.ad.EvaluateInt("RunBytesRead").value_or(0),
                     job.ad.EvaluateInt("BytesWritten").value_or(0),
                     job.ad.EvaluateInt("BytesRead").value_or(0)};
      AddEvent(job, kEventTerminated,
               EventBody(kEventTerminated, TerminatedDetail(ExitOf(job), bytes)));
      break;
    }
    case JobEvent::kHold:
      job.ad.Assign("HoldReason", change.reason);
      job.ad.Assign("HoldReasonCode", static_cast<int64_t>(change.code));
      job.ad.Assign("HoldReasonSubCode", static_cast<int64_t>(change.subcode));
      job.ad.Assign("NumHolds", job.ad.EvaluateInt("NumHolds").value_or(0) + 1);
      AddEvent(job, kEventHeld,
               EventBody(kEventHeld, HeldDetail(change.reason, change.code, change.subcode)));
      break;
    case JobEvent::kRelease:
      if (auto r = job.ad.EvaluateString("HoldReason")) job.ad.Assign("LastHoldReason", *r);
      job.ad.Remove("HoldReason");
      job.ad.Remove("HoldReasonCode");
      job.ad.Remove("HoldReasonSubCode");
      AddEvent(job, kEventReleased, EventBody(kEventReleased, ReleasedDetail(change.reason)));
      break;
    case JobEvent::kRemove:
      ++stats_.removed;
      job.ad.Assign("RemoveReason", change.reason);
      AddEvent(job, kEventAborted, EventBody(kEventAborted, AbortedDetail(change.reason)));
      break;
  }
  return {};
}

void JobQueue::RecordStart(Job& job) {
  double now = clock_();
  int64_t starts = job.ad.EvaluateInt("NumJobStarts").value_or(0) + 1;
  job.ad.Assign("NumJobStarts", starts);
  job.ad.Assign("JobRunCount", starts);
  job.ad.Assign("JobCurrentStartDate", Secs(now));
  if (!job.ad.Lookup("JobStartDate")) job.ad.Assign("JobStartDate", Secs(now));
  auto slot = job.ad.EvaluateString("RemoteHost");
  AddEvent(job, kEventExecute, EventBody(kEventExecute, slot ? "\n\tSlotName: " + *slot : ""));
}

// The run's end as MarkExited recorded it.
ExecStatus JobQueue::ExitOf(const Job& job) {
  ExecStatus st;
  if (job.ad.EvaluateBool("ExitBySignal").value_or(false)) {
    st.kind = ExecStatus::Kind::kSignaled;
    st.code = static_cast<int>(job.ad.EvaluateInt("ExitSignal").value_or(0));
  } else {
    st.code = static_cast<int>(job.ad.EvaluateInt("ExitCode").value_or(0));
  }
  st.utime = job.ad.EvaluateReal("RemoteUserCpu").value_or(0);
  st.stime = job.ad.EvaluateReal("RemoteSysCpu").value_or(0);
  return st;
}

void JobQueue::MarkExited(Job& job, const ExecStatus& st) {
  // Every exit counts, whatever the policy makes of it (max_retries reads it in OnExitRemove).
  job.ad.Assign("NumJobCompletions", job.ad.EvaluateInt("NumJobCompletions").value_or(0) + 1);
  bool signaled = st.kind == ExecStatus::Kind::kSignaled;
  job.ad.Assign("ExitBySignal", signaled);
  if (signaled) {
    job.ad.Assign("ExitSignal", static_cast<int64_t>(st.code));
    job.ad.Remove("ExitCode");
  } else {
    job.ad.Assign("ExitCode", static_cast<int64_t>(st.code));
    job.ad.Remove("ExitSignal");
  }
  job.ad.Assign("RemoteUserCpu", st.utime);
  job.ad.Assign("RemoteSysCpu", st.stime);
  double wall = st.end > st.start ? st.end - st.start : 0;
  double prev = job.ad.EvaluateReal("RemoteWallClockTime").value_or(0);
  job.ad.Assign("RemoteWallClockTime", prev + wall);
  job.ad.Assign("CompletionDate", Secs(st.end > 0 ? st.end : clock_()));
  // The run's peak as the wrapper saw it: a short job the periodic sampling never caught.
  if (st.max_rss_kb > job.ad.EvaluateInt("ResidentSetSize").value_or(0)) {
    job.ad.Assign("ResidentSetSize", st.max_rss_kb);
    job.ad.Assign("MemoryUsage", (st.max_rss_kb + 1023) / 1024);  // MiB, rounded up
  }
  MarkDirty(job);
}

bool JobQueue::RecordUsage(Job& job, const Usage& usage) {
  bool changed = false;
  auto set_if = [&](const char* name, auto value, bool only_larger) {
    using T = decltype(value);
    std::optional<T> now;
    if constexpr (std::is_same_v<T, double>) {
      now = job.ad.EvaluateReal(name);
    } else {
      now = job.ad.EvaluateInt(name);
    }
    if (now && (*now == value || (only_larger && *now > value))) return;
    job.ad.Assign(name, value);
    changed = true;
  };
  set_if("RemoteUserCpu", usage.user_cpu, false);
  set_if("RemoteSysCpu", usage.sys_cpu, false);
  set_if("ResidentSetSize", usage.rss_kib, true);
  set_if("ImageSize", usage.image_kib, true);
  // HTCondor's MemoryUsage: the largest resident set in MiB, rounded up.
  int64_t rss = job.ad.EvaluateInt("ResidentSetSize").value_or(usage.rss_kib);
  set_if("MemoryUsage", (rss + 1023) / 1024, false);
  if (changed) MarkDirty(job);
  return changed;
}

Status JobQueue::MarkRunning(Job& job, bool program_started) {
  return Transition(job, JobEvent::kStart, {.program_started = program_started});
}

bool JobQueue::ProgramStartRecorded(const Job& job, const std::string& run) {
  return job.ad.EvaluateString("KiteStartedRun").value_or("") == run;
}

void JobQueue::RecordProgramStart(Job& job, const std::string& run) {
  if (ProgramStartRecorded(job, run)) return;
  job.ad.Assign("KiteStartedRun", run);
  RecordStart(job);
  MarkDirty(job);
}
Status JobQueue::SetIdle(Job& job, const std::string& why) {
  return Transition(job, JobEvent::kRequeue, {.reason = why});
}
Status JobQueue::Hold(Job& job, const std::string& reason, int code, int subcode) {
  return Transition(job, JobEvent::kHold, {.reason = reason, .code = code, .subcode = subcode});
}
Status JobQueue::Release(Job& job, const std::string& reason) {
  return Transition(job, JobEvent::kRelease, {.reason = reason});
}
Status JobQueue::MarkRemoved(Job& job, const std::string& reason) {
  return Transition(job, JobEvent::kRemove, {.reason = reason});
}
Status JobQueue::MarkCompleted(Job& job) {
  return Transition(job, JobEvent::kComplete);
}
Status JobQueue::Suspend(Job& job, const std::string& why) {
  return Transition(job, JobEvent::kSuspend, {.reason = why});
}
Status JobQueue::Continue(Job& job) {
  return Transition(job, JobEvent::kContinue);
}

void JobQueue::Retire(Job& job) {
  Retired r;
  r.key = job.key;
  r.history = store::HistoryRecord{job.key, clock_(), FlatText(job)};
  Cluster* c = job.cluster;
  if (on_status_) on_status_(job, true);
  jobs_.erase(job.key);
  r.cluster_gone = --c->present == 0;
  if (r.cluster_gone) clusters_.erase(c->id);
  retired_.push_back(std::move(r));
}

std::string JobQueue::FlatText(const Job& job) const {
  classad::ClassAd flat;
  for (auto& a : job.cluster->ad) flat.Insert(a.name(), a.expr_ptr());
  for (auto& a : job.ad) flat.Insert(a.name(), a.expr_ptr());
  return classad::ToOldText(flat);
}

Status JobQueue::FlushInTransaction() {
  for (auto key : dirty_) {
    auto it = jobs_.find(key);
    if (it == jobs_.end()) continue;  // retired since
    Job& j = it->second;
    if (auto st = store_->PutJob(key, StoredAdText(j.ad)); !st) return st;
  }
  for (auto& e : events_) {
    if (auto st = store_->AppendEvent(e.record); !st) return st;
  }
  for (auto& r : retired_) {
    if (auto st = store_->DeleteJob(r.key); !st) return st;
    if (auto st = store_->AppendHistory(r.history); !st) return st;
    if (r.cluster_gone) {
      if (auto st = store_->DeleteCluster(r.key.cluster); !st) return st;
    }
  }
  for (auto& w : dag_writes_) {
    auto st =
        w.node.empty() ? store_->DeleteDag(w.dag) : store_->PutDagNode(w.dag, w.node, w.record);
    if (!st) return st;
  }
  if (history_max_ > 0 && !retired_.empty()) return store_->TrimHistory(history_max_);
  return {};
}

void JobQueue::SetDagNode(int dag, const std::string& node, std::string record) {
  dag_writes_.push_back({dag, node, std::move(record)});
}

void JobQueue::ForgetDag(int dag) {
  dag_writes_.push_back({dag, "", ""});
}

Status JobQueue::Flush(const std::function<Status()>& also) {
  if (!has_pending() && !also) return {};
  auto began = std::chrono::steady_clock::now();
  if (auto st = store_->Begin(); !st) return st;
  // New clusters are written in the same transaction as their first jobs.
  for (auto& [id, c] : clusters_) {
    if (c.stored) continue;
    if (auto st = store_->PutCluster(id, StoredAdText(c.ad)); !st) {
      store_->Rollback();
      return st;
    }
    c.stored = true;  // provisional until the commit below
  }
  auto st = FlushInTransaction();
  if (st && also) st = also();
  if (st) st = store_->Commit();
  if (!st) {
    store_->Rollback();
    for (auto& [id, c] : clusters_) c.stored = c.loaded;  // write new clusters again next time
    return st;
  }
  ++stats_.commits;
  stats_.commit_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  for (auto& [id, c] : clusters_) c.loaded = true;
  for (auto key : dirty_) {
    if (auto* j = Find(key)) j->dirty = false;
  }
  dirty_.clear();
  // Many jobs gone at once (a large cluster removed or finished): give their memory back to the
  // system instead of keeping the peak for the agent's lifetime.
  if (retired_.size() >= kTrimAfterRetiring) ::malloc_trim(0);
  retired_.clear();
  dag_writes_.clear();
  // User logs after the commit: the queue's event table is the durable record.
  std::map<std::string, std::string> logs;
  for (auto& e : events_) {
    for (const std::string* path : {&e.user_log, &e.dag_log}) {
      if (path->empty()) continue;
      logs[*path] += FormatEvent(e.record.code, e.record.job.cluster, e.record.job.proc,
                                 e.record.time, e.record.text);
    }
  }
  events_.clear();
  for (auto& [path, text] : logs) {
    if (auto w = AppendUserLog(path, text); !w) spdlog::warn("{}", w.error().ToString());
  }
  for (auto& fn : on_flushed_) fn();
  return {};
}

}  // namespace kite::agent
