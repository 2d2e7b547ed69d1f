// Local-universe job launching.
#include "agent/local_runner.h"

#include <signal.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cstdio>
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

void LocalRunner::StartAsync(JobKey key, LaunchSpec spec, std::function<void(Result<pid_t>)> done) {
  boost::asio::post(workers_,
                    [this, key, spec = std::move(spec), done = std::move(done)]() mutable {
                      auto pid = Start(key, spec);
                      boost::asio::post(io_, [pid, done = std::move(done)] { done(pid); });
                    });
}

void LocalRunner::CleanupAsync(JobKey key) {
  boost::asio::post(workers_, [this, key] { Cleanup(key); });
}

std::string LocalRunner::JobDir(JobKey key) const {
  return spool_ + "/" + std::to_string(key.cluster) + "." + std::to_string(key.proc);
}

Result<pid_t> LocalRunner::Start(JobKey key, const LaunchSpec& spec) {
  std::string dir = JobDir(key);
  if (auto st = MakeDirs(dir, 0700); !st) return Fail(st.error());
  ::unlink((dir + "/status").c_str());  // a rerun must not read the last run's outcome
  ExecLaunch l{.exec_path = exec_path_,
               .dir = dir,
               .cwd = spec.iwd,
               .in = spec.in,
               .out = spec.out,
               .err = spec.err,
               .program = spec.program,
               .args = spec.args,
               .env = spec.env};
  return LaunchUnderExec(l);
}

pid_t LocalRunner::Group(const Job& job) const {
  if (job.pid > 0) return job.pid;
  pid_t pid = ExecWrapperPid(JobDir(job.key));
  // Only a wrapper that still holds the job's lock: the pid may have been reused.
  return pid > 0 && WrapperAlive(job.key) ? pid : 0;
}

void LocalRunner::Signal(const Job& job, int sig) const {
  if (pid_t pid = Group(job); pid > 0) ::kill(-pid, sig);
}

void LocalRunner::Cleanup(JobKey key) const {
  std::error_code ec;
  std::filesystem::remove_all(JobDir(key), ec);
}

}  // namespace kite::agent
