// The kite-exec launch of a run.
#include "glidein/run_spec.h"

#include <cstdlib>

#include "common/files.h"
#include "submit/quoting.h"

namespace kite::glidein {
namespace {

Result<std::vector<std::string>> JobArgs(const classad::ClassAd& job) {
  if (auto a = job.EvaluateString("Arguments")) {
    auto args = submit::SplitArgumentsV2(*a);
    if (!args) return Fail(args.error().Wrap("Arguments"));
    return *args;
  }
  if (auto old = job.EvaluateString("Args")) return submit::SplitArgumentsV1Raw(*old);
  return std::vector<std::string>{};
}

Result<std::vector<submit::EnvEntry>> JobEnv(const classad::ClassAd& job) {
  if (auto e = job.EvaluateString("Environment")) {
    auto v = submit::SplitEnvironmentV2(*e);
    if (!v) return Fail(v.error().Wrap("Environment"));
    return *v;
  }
  if (auto old = job.EvaluateString("Env")) {
    auto v = submit::SplitEnvironment(*old);
    if (!v) return Fail(v.error().Wrap("Env"));
    return *v;
  }
  return std::vector<submit::EnvEntry>{};
}

void SetEnv(std::vector<std::string>& env, const std::string& k, const std::string& v) {
  std::string prefix = k + "=";
  std::erase_if(env, [&](const std::string& x) { return x.starts_with(prefix); });
  env.push_back(prefix + v);
}

}  // namespace

std::vector<std::string> JobBaseEnv() {
  const char* path = std::getenv("PATH");
  return {std::string("PATH=") + (path && *path ? path : "/usr/local/bin:/usr/bin:/bin")};
}

Result<ExecLaunch> BuildRunLaunch(const classad::ClassAd& job, const Sandbox& box,
                                  const RunPlace& place) {
  auto cmd = job.EvaluateString("Cmd");
  if (!cmd || cmd->empty()) return Fail(ErrorCode::kInvalidInput, "the job has no Cmd");
  auto args = JobArgs(job);
  if (!args) return Fail(args.error());
  auto env = JobEnv(job);
  if (!env) return Fail(env.error());
  ExecLaunch l{.exec_path = place.exec_path,
               .dir = box.control_dir(),
               .cwd = box.path(),
               .out = JoinPath(box.path(), std::string(kStdoutName)),
               .err = JoinPath(box.path(), std::string(kStderrName)),
               .program = JoinPath(box.path(), *cmd),
               .args = std::move(*args),
               .env = place.env};
  auto in = job.EvaluateString("In");
  if (!place.in_place.empty()) {
    // The job's own files, where HTCondor's starter finds them on a shared file system.
    auto own = [&](const char* attr) {
      auto v = job.EvaluateString(attr).value_or("");
      return v.empty() ? std::string("/dev/null") : JoinPath(place.in_place, v);
    };
    l.cwd = place.in_place;
    l.program = JoinPath(place.in_place, *cmd);
    l.in = own("In");
    l.out = own("Out");
    l.err = own("Err");
  } else if (in && !in->empty() && in->front() != '/' && box.HasFile(*in)) {
    l.in = JoinPath(box.path(), *in);
  }
  SetEnv(l.env, "HOME", box.path());
  SetEnv(l.env, "TMPDIR", box.path());
  SetEnv(l.env, "_CONDOR_SCRATCH_DIR", box.path());
  SetEnv(l.env, "_CONDOR_SLOT", place.slot.substr(0, place.slot.find('@')));
  SetEnv(l.env, "OMP_NUM_THREADS", std::to_string(place.cpus));
  for (auto& [k, v] : *env) SetEnv(l.env, k, v);
  return l;
}

}  // namespace kite::glidein
