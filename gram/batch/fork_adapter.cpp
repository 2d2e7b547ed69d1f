// The fork adapter: posix_spawn of kite-exec in a new session, lock taken before the spawn.
#include "gram/batch/fork_adapter.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "common/exec_launch.h"
#include "common/exec_status.h"
#include "common/files.h"
#include "common/strings.h"

namespace kite::gram::batch {
namespace {

// "<dir>#<pid>" -> dir, pid (pid 0 when the id is malformed).
std::pair<std::string, pid_t> SplitId(const std::string& id) {
  auto hash = id.rfind('#');
  if (hash == std::string::npos) return {id, 0};
  return {id.substr(0, hash), static_cast<pid_t>(std::atoi(id.c_str() + hash + 1))};
}

// "<dir>#<pid>" of a job handed over before. A wrapper that has just started adds its pid to
// its lock at once; it is waited for (a moment) so the id names it.
std::string IdOf(const std::string& dir) {
  pid_t pid = ExecWrapperPid(dir);
  for (int i = 0; pid == 0 && i < 1000 && ExecWrapperAlive(dir); ++i) {
    ::usleep(1000);
    pid = ExecWrapperPid(dir);
  }
  return dir + "#" + std::to_string(pid);
}

// The test aid's limits (AdapterOptions::fork_limits_file).
struct ForkLimits {
  std::optional<int64_t> slots;  // nullopt: no limit
  double start_delay = 0;        // seconds
  bool any() const { return slots.has_value() || start_delay > 0; }
};

ForkLimits ParseForkLimits(const std::string& text) {
  ForkLimits l;
  for (const auto& raw : Split(text, '\n')) {
    std::string_view line = Trim(raw);
    if (line.empty() || line.starts_with('#')) continue;
    auto sp = line.find(' ');
    if (sp == std::string_view::npos) continue;
    std::string key(line.substr(0, sp));
    std::string value(Trim(line.substr(sp + 1)));
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || !(v >= 0)) continue;
    if (key == "slots") l.slots = static_cast<int64_t>(v);
    if (key == "start_delay") l.start_delay = v;
  }
  return l;
}

int64_t MachineMemoryMb() {
  long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? static_cast<int64_t>(pages) * size / (1024 * 1024) : 0;
}

class ForkAdapter : public BatchAdapter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ForkAdapter(AdapterOptions options) : options_(std::move(options)) {}

  std::string_view Name() const override { return "fork"; }

  Result<std::string> Submit(const JobSpec& spec) override {
    const std::string& dir = spec.control_dir;
    // Handed over before: a wrapper holds the lock, left a status, or had its pid recorded and
    // died.
    if (ExecWrapperAlive(dir) || ReadExecStatus(dir) || ExecWrapperPid(dir) > 0) {
      return IdOf(dir);
    }
    const ForkLimits& limits = Limits();
    if (limits.any()) {
      // Held back: "unavailable" leaves the job pending at the job manager, which asks again on
      // its next pass.
      auto now = Clock::now();
      auto [it, fresh] = waiting_.try_emplace(dir, Waiting{now, now});
      it->second.asked = now;
      PruneRunning();
      if (limits.slots && static_cast<int64_t>(running_.size()) >= *limits.slots) {
        return Fail(ErrorCode::kUnavailable,
                    "fork: all " + std::to_string(*limits.slots) + " slots are busy");
      }
      if (std::chrono::duration<double>(now - it->second.since).count() < limits.start_delay) {
        return Fail(ErrorCode::kUnavailable, "fork: the start delay has not passed");
      }
    }
    ExecLaunch l{.exec_path = options_.exec_path,
                 .dir = dir,
                 .cwd = spec.cwd,
                 .in = spec.stdin_path,
                 .out = spec.stdout_path,
                 .err = spec.stderr_path,
                 .program = spec.program,
                 .args = spec.args,
                 .env = spec.env};
    auto pid = LaunchUnderExec(l);
    if (!pid && pid.error().code() == ErrorCode::kConflict) {
      return IdOf(dir);  // a wrapper started in between
    }
    if (!pid) return Fail(pid.error());
    waiting_.erase(dir);
    running_.insert(dir);
    // The pid recorded in the lock marks "handed over": with it and neither a live lock nor a
    // status, the wrapper died.
    return dir + "#" + std::to_string(*pid);
  }

  std::map<std::string, BatchOutcome> Poll(const std::vector<std::string>& ids) override {
    // The wrappers we started are our children until we restart: reap them (their outcome is in
    // their status files, not in the wait status).
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    std::map<std::string, BatchOutcome> out;
    for (const auto& id : ids) {
      auto [dir, pid] = SplitId(id);
      out[id] = PollOne(dir, pid);
      if (out[id].state == BatchState::kRunning) running_.insert(dir);  // also after a restart
    }
    return out;
  }

  Result<SiteInfo> Info() override {
    const ForkLimits& limits = Limits();
    PruneRunning();
    // A job the job manager stopped asking about (cancelled, forgotten) no longer waits.
    auto now = Clock::now();
    std::erase_if(waiting_,
                  [&](const auto& w) { return now - w.second.asked > std::chrono::seconds(5); });
    SiteInfo i;
    i.batch_system = "fork";
    unsigned cores = std::thread::hardware_concurrency();
    i.total_cpus = limits.slots ? *limits.slots : static_cast<int64_t>(cores > 0 ? cores : 1);
    i.running_jobs = static_cast<int64_t>(running_.size());
    i.pending_jobs = static_cast<int64_t>(waiting_.size());
    i.free_cpus = std::max<int64_t>(0, i.total_cpus - i.running_jobs);
    i.memory_mb = MachineMemoryMb();
    return i;
  }

  Status Cancel(const std::string& id) override {
    auto [dir, pid] = SplitId(id);
    if (pid <= 0) pid = ExecWrapperPid(dir);  // an id made before the wrapper said its pid
    // Signal only a live wrapper: after it ended, its pid may belong to someone else. The wrapper
    // ignores SIGTERM and records the job's death by it.
    if (pid > 0 && ExecWrapperAlive(dir)) {
      ::kill(-pid, SIGTERM);
      ::kill(-pid, SIGCONT);
    }
    return {};
  }

 private:
  // `pid`: the wrapper's pid from the job's id (0 when the id was made before it was known).
  static BatchOutcome PollOne(const std::string& dir, pid_t pid) {
    BatchOutcome o;
    if (auto st = ReadExecStatus(dir)) {
      o.state = BatchState::kEnded;
      o.exit = *st;
      return o;
    }
    if (ExecWrapperAlive(dir)) {
      o.state = BatchState::kRunning;
      return o;
    }
    // The wrapper may have written its status and exited between the two checks.
    if (auto st = ReadExecStatus(dir)) {
      o.state = BatchState::kEnded;
      o.exit = *st;
      return o;
    }
    // Spawned (its id or the lock says its pid) and gone without a status: lost. A wrapper
    // killed before it wrote its pid into the lock is known by its id's pid.
    o.state = pid > 0 || ExecWrapperPid(dir) > 0 ? BatchState::kLost : BatchState::kQueued;
    return o;
  }

  // The limits file as it is now (read again when its size or modification time changes).
  const ForkLimits& Limits() {
    if (options_.fork_limits_file.empty()) return limits_;
    struct stat st {};
    if (::stat(options_.fork_limits_file.c_str(), &st) != 0) {
      limits_ = {};
      limits_stamp_ = {};
      return limits_;
    }
    std::pair<int64_t, int64_t> stamp{st.st_size,
                                      st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec};
    if (stamp != limits_stamp_) {
      limits_stamp_ = stamp;
      limits_ = ParseForkLimits(ReadFile(options_.fork_limits_file).value_or(""));
    }
    return limits_;
  }
  void PruneRunning() {
    std::erase_if(running_, [](const std::string& dir) { return !ExecWrapperAlive(dir); });
  }

  struct Waiting {
    Clock::time_point since;  // first asked to start
    Clock::time_point asked;  // last asked
  };
  AdapterOptions options_;
  ForkLimits limits_;
  std::pair<int64_t, int64_t> limits_stamp_{};
  std::map<std::string, Waiting> waiting_;  // control dirs held back by the limits
  std::set<std::string> running_;           // control dirs whose wrapper we saw alive
};

}  // namespace

std::unique_ptr<BatchAdapter> MakeForkAdapter(const AdapterOptions& options) {
  return std::make_unique<ForkAdapter>(options);
}

}  // namespace kite::gram::batch
