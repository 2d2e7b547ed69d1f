// The Slurm adapter's pure half: scripts and arguments out, command output in.
#include "gram/batch/slurm_format.h"

#include <time.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <set>

#include "common/strings.h"
#include "gram/batch/command.h"

namespace kite::gram::batch::slurm {
namespace {

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// A job id as squeue prints it: digits, or an array/het element ("12_3", "12+1").
bool ValidJobId(std::string_view s) {
  if (s.empty() || s.size() > 64 || s[0] < '0' || s[0] > '9') return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || c == '_' || c == '+' || c == '[' || c == ']')) return false;
  return true;
}

struct StatePhase {
  std::string_view state;
  Phase phase;
};
// Every state name Slurm 22.05's job_state_string() prints (base states and the flags it prints
// instead of them).
constexpr std::array<StatePhase, 27> kStates = {{
    {"PENDING", Phase::kWaiting},       {"REQUEUED", Phase::kWaiting},
    {"REQUEUE_FED", Phase::kWaiting},   {"REQUEUE_HOLD", Phase::kWaiting},
    {"RESV_DEL_HOLD", Phase::kWaiting}, {"SPECIAL_EXIT", Phase::kWaiting},
    {"CONFIGURING", Phase::kWaiting},   {"POWER_UP_NODE", Phase::kWaiting},
    {"RUNNING", Phase::kRunning},       {"SUSPENDED", Phase::kRunning},
    {"STOPPED", Phase::kRunning},       {"COMPLETING", Phase::kRunning},
    {"SIGNALING", Phase::kRunning},     {"STAGE_OUT", Phase::kRunning},
    {"RESIZING", Phase::kRunning},      {"UPDATE_DB", Phase::kRunning},
    {"COMPLETED", Phase::kFinished},    {"FAILED", Phase::kFinished},
    {"TIMEOUT", Phase::kLimit},         {"OUT_OF_MEMORY", Phase::kLimit},
    {"DEADLINE", Phase::kLimit},        {"CANCELLED", Phase::kLost},
    {"NODE_FAIL", Phase::kLost},        {"PREEMPTED", Phase::kLost},
    {"BOOT_FAIL", Phase::kLost},        {"REVOKED", Phase::kLost},
    {"LAUNCH_FAILED", Phase::kLost},
}};

std::string LimitReason(const SqueueRow& row) {
  std::string what = row.state == "TIMEOUT"         ? "its time limit (walltime)"
                     : row.state == "OUT_OF_MEMORY" ? "its memory limit"
                                                    : "its deadline";
  return "Slurm stopped job " + row.id + " (" + row.state + "): it went past " + what;
}

}  // namespace

std::string JobName(const JobSpec& spec) {
  return "kite-" + spec.name;
}

std::string BatchScript(const JobSpec& spec, const std::string& exec_path) {
  std::string s = "#!/bin/sh\n";
  s += "# Kite job " + spec.name + ", written by kite-jobmanager's slurm adapter. kite-exec runs\n";
  s += "# the job and records how it ended in the control directory's status file.\n";
  return s + ExecLine(spec, exec_path);
}

std::vector<std::string> SbatchArgs(const JobSpec& spec, const std::string& script_path) {
  std::vector<std::string> a = {
      "--parsable",
      "--job-name=" + JobName(spec),
      // Slurm's own output (the script's, before kite-exec takes over): for diagnosing a launch.
      "--output=" + spec.control_dir + "/slurm.out",
      "--chdir=" + spec.cwd,
      "--export=ALL",
      // Exactly once: Slurm must not run a job a second time after a node failure or
      // preemption; Kite reports such a job lost and the client decides.
      "--no-requeue",
      "--ntasks=1",
  };
  const ResourceRequest& r = spec.resources;
  if (r.cpus > 0) a.push_back("--cpus-per-task=" + std::to_string(r.cpus));
  if (r.memory_mb > 0) a.push_back("--mem=" + std::to_string(r.memory_mb) + "M");
  if (r.walltime_s > 0) {
    // Slurm keeps time limits in whole minutes: round up, never cut a job short.
    a.push_back("--time=" + std::to_string((r.walltime_s + 59) / 60));
  }
  if (!r.queue.empty()) a.push_back("--partition=" + r.queue);
  if (!r.project.empty()) a.push_back("--account=" + r.project);
  a.push_back(script_path);
  return a;
}

std::vector<std::string> SbatchEnvironment(const std::vector<std::string>& job_env,
                                           const std::string& slurm_conf) {
  static constexpr std::array<std::string_view, 4> kSlurmInputs = {"SLURM_", "SBATCH_", "SALLOC_",
                                                                   "SRUN_"};
  std::vector<std::string> env;
  for (const auto& e : job_env) {
    bool slurm = false;
    for (auto p : kSlurmInputs) slurm = slurm || e.starts_with(p);
    if (!slurm) env.push_back(e);
  }
  if (!slurm_conf.empty()) env.push_back("SLURM_CONF=" + slurm_conf);
  return env;
}

Result<std::string> ParseSbatchOutput(std::string_view out) {
  // The id is on the last non-empty line (warnings go to stderr, but be lenient).
  std::vector<std::string> lines = Split(out, '\n');  // trimmed, empty ones dropped
  std::string line = lines.empty() ? "" : lines.back();
  std::string id = line.substr(0, line.find(';'));
  if (!AllDigits(id) || id.size() > 20) {
    return Fail(ErrorCode::kProtocol, "sbatch printed no job id: '" + line + "'");
  }
  return id;
}

std::map<std::string, SqueueRow> ParseSqueue(std::string_view out) {
  std::map<std::string, SqueueRow> rows;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == std::string_view::npos) end = out.size();
    std::string_view line = Trim(out.substr(start, end - start));
    start = end + 1;
    size_t a = line.find('|');
    if (a == std::string_view::npos) continue;
    size_t b = line.find('|', a + 1);
    if (b == std::string_view::npos) continue;
    SqueueRow r;
    r.id = std::string(Trim(line.substr(0, a)));
    r.state = std::string(Trim(line.substr(a + 1, b - a - 1)));
    r.reason = std::string(Trim(line.substr(b + 1)));
    if (!ValidJobId(r.id) || r.state.empty()) continue;
    rows.insert_or_assign(r.id, std::move(r));
  }
  return rows;
}

std::map<std::string, std::string> ParseScontrolJob(std::string_view out) {
  std::map<std::string, std::string> fields;
  std::string_view line = out.substr(0, out.find('\n'));
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t end = line.find(' ', i);
    if (end == std::string_view::npos) end = line.size();
    std::string_view word = line.substr(i, end - i);
    i = end;
    size_t eq = word.find('=');
    if (eq == 0 || eq == std::string_view::npos) continue;
    fields.insert_or_assign(std::string(word.substr(0, eq)), std::string(word.substr(eq + 1)));
  }
  return fields;
}

Phase ClassifyState(std::string_view state) {
  // Some Slurm versions add a suffix ("CANCELLED by 0"): the first word is the state.
  std::string_view word = state.substr(0, state.find(' '));
  for (const auto& s : kStates)
    if (s.state == word) return s.phase;
  return Phase::kUnknown;
}

std::optional<BatchOutcome> DecideOutcome(const std::string& slurm_id,
                                          const std::optional<SqueueRow>& row,
                                          const std::optional<ExecStatus>& status,
                                          bool wrapper_alive, const std::string& detail) {
  BatchOutcome o;
  std::string tail = detail.empty() ? "" : " (" + detail + ")";
  if (!row) {
    // Slurm forgot the job (it ended longer than MinJobAge ago, or never existed): kite-exec's
    // record is all there is.
    if (status) {
      o.state = BatchState::kEnded;
      o.exit = status;
    } else if (wrapper_alive) {
      o.state = BatchState::kRunning;
    } else {
      o.state = BatchState::kLost;
      o.reason = "Slurm no longer knows job " + (slurm_id.empty() ? "?" : slurm_id) +
                 " and the job left no record of how it ended" + tail;
    }
    return o;
  }
  switch (ClassifyState(row->state)) {
    case Phase::kWaiting:
      o.state = BatchState::kQueued;
      return o;
    case Phase::kRunning:
      // Includes COMPLETING: kite-exec may have written its record already, but Slurm's final
      // word (COMPLETED or TIMEOUT, say) is not in yet.
      o.state = BatchState::kRunning;
      return o;
    case Phase::kFinished:
      if (status) {
        o.state = BatchState::kEnded;
        o.exit = status;
      } else {
        o.state = BatchState::kLost;
        o.reason = "Slurm job " + row->id + " ended (" + row->state + ", " + row->reason +
                   ") before kite-exec recorded how the job ended" + tail;
      }
      return o;
    case Phase::kLimit:
      o.state = BatchState::kEnded;
      o.limit_exceeded = true;
      o.exit = status;
      o.reason = LimitReason(*row);
      return o;
    case Phase::kLost:
      o.state = BatchState::kLost;
      o.reason = "Slurm ended job " + row->id + " as " + row->state +
                 (row->reason.empty() || row->reason == "None" ? "" : " (" + row->reason + ")") +
                 ", not the job itself" + tail;
      return o;
    case Phase::kUnknown:
      break;
  }
  return std::nullopt;
}

namespace {

// "2026-11-27T11:00:00" (local time) -> Unix time.
std::optional<double> ParseStart(std::string_view t) {
  struct tm tm {};
  std::string text(t);
  const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  tm.tm_isdst = -1;
  time_t when = ::mktime(&tm);
  if (when == -1) return std::nullopt;
  return static_cast<double>(when);
}

}  // namespace

std::optional<int64_t> ParseTimeLimit(std::string_view text) {
  text = Trim(text);
  if (text == "UNLIMITED" || text == "INFINITE") return 0;
  int64_t days = 0;
  bool have_days = false;
  if (auto dash = text.find('-'); dash != std::string_view::npos) {
    auto d = ParseCount(text.substr(0, dash));
    if (!d) return std::nullopt;
    days = *d;
    have_days = true;
    text = text.substr(dash + 1);
  }
  std::vector<int64_t> parts;
  for (const auto& p : Split(std::string(text), ':')) {
    auto n = ParseCount(p);
    if (!n) return std::nullopt;
    parts.push_back(*n);
  }
  if (parts.empty() || parts.size() > 3) return std::nullopt;
  int64_t s = 0;
  if (have_days) {
    // days-hours[:minutes[:seconds]]
    s = parts[0] * 3600 + (parts.size() > 1 ? parts[1] * 60 : 0) +
        (parts.size() > 2 ? parts[2] : 0);
  } else if (parts.size() == 1) {
    s = parts[0] * 60;  // minutes
  } else if (parts.size() == 2) {
    s = parts[0] * 60 + parts[1];  // minutes:seconds
  } else {
    s = parts[0] * 3600 + parts[1] * 60 + parts[2];
  }
  if (days > 1000000 || s > INT64_MAX / 2) return std::nullopt;
  return days * 86400 + s;
}

Result<SiteInfo> ParseSiteInfo(std::string_view nodes, std::string_view partitions,
                               std::string_view queue, double now) {
  SiteInfo info;
  info.batch_system = "slurm";
  std::set<std::string> seen;
  bool any_node = false;
  for (const auto& line : Split(std::string(nodes), '\n')) {
    auto f = Split(std::string(Trim(line)), '|');
    if (f.size() != 3) continue;
    auto cpus = Split(f[1], '/');
    if (cpus.size() != 4) continue;
    auto idle = ParseCount(cpus[1]), total = ParseCount(cpus[3]);
    auto mem = ParseCount(Trim(f[2]));
    if (!idle || !total) continue;
    any_node = true;
    if (!seen.insert(f[0]).second) continue;  // a node in several partitions counts once
    info.total_cpus += *total;
    info.free_cpus += *idle;
    if (mem) info.memory_mb = std::max(info.memory_mb, *mem);
  }
  if (!any_node) return Fail(ErrorCode::kProtocol, "sinfo named no node with its CPUs");
  bool any_partition = false, unlimited = false;
  for (const auto& line : Split(std::string(partitions), '\n')) {
    auto f = Split(std::string(Trim(line)), '|');
    if (f.size() != 3 || f[0].empty()) continue;
    std::string name = f[0];
    bool is_default = name.ends_with('*');
    if (is_default) name.pop_back();
    if (name.empty()) continue;
    any_partition = true;
    info.queues.push_back(name);
    if (is_default) info.default_queue = name;
    if (f[1] != "up") continue;
    auto limit = ParseTimeLimit(f[2]);
    if (!limit) continue;
    if (*limit == 0) unlimited = true;
    info.max_walltime_s = std::max(info.max_walltime_s, *limit);
  }
  if (!any_partition) return Fail(ErrorCode::kProtocol, "sinfo named no partition");
  if (unlimited) info.max_walltime_s = 0;
  std::optional<double> latest;
  for (const auto& line : Split(std::string(queue), '\n')) {
    auto f = Split(std::string(Trim(line)), '|');
    if (f.size() != 2) continue;
    if (f[0] == "RUNNING") ++info.running_jobs;
    if (f[0] != "PENDING") continue;
    ++info.pending_jobs;
    if (auto when = ParseStart(f[1])) latest = std::max(latest.value_or(*when), *when);
  }
  // A job sent now queues behind the pending ones: it starts no sooner than the last of them.
  if (latest) {
    info.estimated_start_s = std::max(0.0, *latest - now);
  } else if (info.pending_jobs == 0 && info.free_cpus > 0) {
    info.estimated_start_s = 0;
  }
  return info;
}

}  // namespace kite::gram::batch::slurm
