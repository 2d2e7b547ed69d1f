// The fork adapter: posix_spawn of kite-exec in a new session, lock taken before the spawn.
#include "gram/batch/fork_adapter.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "common/exec_launch.h"
#include "common/exec_status.h"
#include "common/files.h"

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

class ForkAdapter : public BatchAdapter {
 public:
  explicit ForkAdapter(AdapterOptions options) : options_(std::move(options)) {}

  std::string_view Name() const override { return "fork"; }

  Result<std::string> Submit(const JobSpec& spec) override {
    const std::string& dir = spec.control_dir;
    // Handed over before: a wrapper holds the lock, left a status, or had its pid recorded and
    // died.
    if (ExecWrapperAlive(dir) || ReadExecStatus(dir) || ExecWrapperPid(dir) > 0) {
      return IdOf(dir);
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
    }
    return out;
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

  AdapterOptions options_;
};

}  // namespace

std::unique_ptr<BatchAdapter> MakeForkAdapter(const AdapterOptions& options) {
  return std::make_unique<ForkAdapter>(options);
}

}  // namespace kite::gram::batch
