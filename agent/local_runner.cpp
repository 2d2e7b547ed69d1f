// Local-universe job launching.
#include "agent/local_runner.h"

#include <signal.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "common/exec_launch.h"
#include "common/files.h"
#include "submit/quoting.h"

namespace kite::agent {

Result<LaunchSpec> BuildLaunchSpec(const Job& job, const std::vector<std::string>& base_env) {
  LaunchSpec s;
  auto cmd = job.ad.EvaluateString("Cmd");
  if (!cmd || cmd->empty()) return Fail(ErrorCode::kInvalidInput, "job has no Cmd");
  s.iwd = job.ad.EvaluateString("Iwd").value_or("/");
  s.program = JoinPath(s.iwd, *cmd);
  if (auto a = job.ad.EvaluateString("Arguments")) {
    auto args = submit::SplitArgumentsV2(*a);
    if (!args) return Fail(args.error().Wrap("Arguments"));
    s.args = std::move(*args);
  } else if (auto old = job.ad.EvaluateString("Args")) {
    s.args = submit::SplitArgumentsV1Raw(*old);  // condor_submit's V1 raw form
  }
  s.env = base_env;
  std::vector<submit::EnvEntry> env;
  if (auto e = job.ad.EvaluateString("Environment")) {
    auto v = submit::SplitEnvironmentV2(*e);
    if (!v) return Fail(v.error().Wrap("Environment"));
    env = std::move(*v);
  } else if (auto old = job.ad.EvaluateString("Env")) {
    auto v = submit::SplitEnvironment(*old);
    if (!v) return Fail(v.error().Wrap("Env"));
    env = std::move(*v);
  }
  for (auto& [k, v] : env) {
    std::string prefix = k + "=";
    std::erase_if(s.env, [&](const std::string& x) { return x.starts_with(prefix); });
    s.env.push_back(prefix + v);
  }
  auto path_of = [&](const char* attr, const char* dflt) {
    auto v = job.ad.EvaluateString(attr);
    if (!v || v->empty()) return std::string(dflt);
    return JoinPath(s.iwd, *v);
  };
  s.in = path_of("In", "/dev/null");
  s.out = path_of("Out", "/dev/null");
  s.err = path_of("Err", "/dev/null");
  return s;
}

LocalRunner::LocalRunner(boost::asio::io_context& io, std::string spool_dir, std::string exec_path)
    : io_(io), spool_(std::move(spool_dir)), exec_path_(std::move(exec_path)) {}

LocalRunner::~LocalRunner() {
  workers_.join();
}

std::string LocalRunner::SlotDir(int slot) const {
  return spool_ + "/slots/" + std::to_string(slot);
}

std::string LocalRunner::DirOf(JobKey key) const {
  if (auto it = slot_of_.find(key); it != slot_of_.end()) return SlotDir(it->second);
  return spool_ + "/" + std::to_string(key.cluster) + "." + std::to_string(key.proc);
}

namespace {

std::string OwnerOf(JobKey key, int64_t start) {
  return std::to_string(key.cluster) + "." + std::to_string(key.proc) + " " + std::to_string(start);
}

// "C.P S" -> key and start; nullopt when malformed.
std::optional<std::pair<JobKey, int64_t>> ParseOwner(const std::string& owner) {
  JobKey key;
  long long start = 0;
  char tail = 0;
  if (std::sscanf(owner.c_str(), "%d.%d %lld%c", &key.cluster, &key.proc, &start, &tail) != 3) {
    return std::nullopt;
  }
  return std::pair{key, static_cast<int64_t>(start)};
}

}  // namespace

void LocalRunner::Recover(const std::function<std::optional<int64_t>(JobKey)>& start_of) {
  std::error_code ec;
  std::vector<int> seen;
  for (const auto& e : std::filesystem::directory_iterator(spool_ + "/slots", ec)) {
    std::string name = e.path().filename().string();
    char* end = nullptr;
    long n = std::strtol(name.c_str(), &end, 10);
    if (name.empty() || *end != '\0' || n < 0 || n > 1000000) continue;
    seen.push_back(static_cast<int>(n));
  }
  std::sort(seen.begin(), seen.end());
  slot_count_ = seen.empty() ? 0 : seen.back() + 1;
  made_.assign(static_cast<size_t>(slot_count_), false);
  std::vector<bool> taken(static_cast<size_t>(slot_count_), false);
  for (int n : seen) {
    made_[static_cast<size_t>(n)] = true;
    std::string dir = SlotDir(n);
    auto owner = ParseOwner(ReadExecLock(dir).owner);
    if (owner && start_of(owner->first) == owner->second) {
      slot_of_[owner->first] = n;
      taken[static_cast<size_t>(n)] = true;
    } else if (ExecWrapperAlive(dir)) {
      // A wrapper of a run the queue does not expect: never reuse its slot.
      spdlog::warn("agent: {} is held by a wrapper of no known run ({}); left alone", dir,
                   ReadExecLock(dir).owner);
      taken[static_cast<size_t>(n)] = true;
    }
  }
  for (int n = slot_count_ - 1; n >= 0; --n) {
    if (!taken[static_cast<size_t>(n)]) free_.push_back(n);
  }
  // An older Kite's spool/C.P/: kept while the queue expects its run, else removed.
  std::vector<std::string> leftovers;
  for (const auto& e : std::filesystem::directory_iterator(spool_, ec)) {
    JobKey key;
    char tail = 0;
    std::string name = e.path().filename().string();
    if (std::sscanf(name.c_str(), "%d.%d%c", &key.cluster, &key.proc, &tail) != 2) continue;
    if (start_of(key) && !slot_of_.count(key)) {
      old_layout_.insert(key);
    } else if (!ExecWrapperAlive(e.path().string())) {
      leftovers.push_back(e.path().string());
    }
  }
  RemoveAsync(std::move(leftovers));
}

void LocalRunner::RemoveAsync(std::vector<std::string> dirs) {
  if (dirs.empty()) return;
  boost::asio::post(workers_, [dirs = std::move(dirs)] {
    for (const auto& d : dirs) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  });
}

int LocalRunner::TakeSlot() {
  if (free_.empty()) {
    made_.push_back(false);
    return slot_count_++;
  }
  int n = free_.back();
  free_.pop_back();
  return n;
}

void LocalRunner::StartAsync(JobKey key, int64_t start, LaunchSpec spec,
                             std::function<void(Result<pid_t>)> done) {
  if (slot_of_.count(key)) ReleaseAfterCommit(key);  // a slot of an earlier run: not this one's
  int slot = TakeSlot();
  slot_of_[key] = slot;
  bool made = made_[static_cast<size_t>(slot)];
  made_[static_cast<size_t>(slot)] = true;  // by the time anyone else takes it
  ExecLaunch l{.exec_path = exec_path_,
               .dir = SlotDir(slot),
               .cwd = std::move(spec.iwd),
               .in = std::move(spec.in),
               .out = std::move(spec.out),
               .err = std::move(spec.err),
               .program = std::move(spec.program),
               .args = std::move(spec.args),
               .env = std::move(spec.env),
               .owner = OwnerOf(key, start)};
  boost::asio::post(workers_, [this, made, l = std::move(l), done = std::move(done)]() mutable {
    Result<pid_t> pid = [&]() -> Result<pid_t> {
      if (auto st = made ? Status{} : MakeDirs(l.dir, 0700); !st) return Fail(st.error());
      // The last run's owner line and outcome are written over in one go (exec_status.h).
      return LaunchUnderExec(l);
    }();
    boost::asio::post(io_, [pid, done = std::move(done)] { done(pid); });
  });
}

void LocalRunner::ReleaseAfterCommit(JobKey key) {
  auto it = slot_of_.find(key);
  if (it == slot_of_.end()) {
    if (old_layout_.count(key)) old_dirs_.push_back(key);
    return;
  }
  releasing_.push_back(it->second);
  slot_of_.erase(it);
}

void LocalRunner::Committed() {
  free_.insert(free_.end(), releasing_.begin(), releasing_.end());
  releasing_.clear();
  if (old_dirs_.empty()) return;
  std::vector<std::string> dirs;
  for (JobKey key : old_dirs_) {
    dirs.push_back(DirOf(key));
    old_layout_.erase(key);
  }
  old_dirs_.clear();
  RemoveAsync(std::move(dirs));
}

pid_t LocalRunner::Group(const Job& job) const {
  if (job.pid > 0) return job.pid;
  std::string dir = DirOf(job.key);
  pid_t pid = ExecWrapperPid(dir);
  // Only a wrapper that still holds the job's lock: the pid may have been reused.
  return pid > 0 && ExecWrapperAlive(dir) ? pid : 0;
}

void LocalRunner::Signal(const Job& job, int sig) const {
  if (pid_t pid = Group(job); pid > 0) ::kill(-pid, sig);
}

}  // namespace kite::agent
