// The command adapters' shared half: tools, pauses, the id file and the cancel queue.
#include "gram/batch/command_adapter.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "common/exec_status.h"
#include "common/files.h"
#include "common/strings.h"

namespace kite::gram::batch {

// Where the tools are looked up when the job manager has no PATH at all.
constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";

std::pair<std::string, std::string> SplitId(const std::string& id) {
  auto hash = id.rfind('#');
  if (hash == std::string::npos) return {id, ""};
  return {id.substr(0, hash), id.substr(hash + 1)};
}

std::optional<std::string> EnvValue(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& e : env) {
    if (e.size() > name.size() && e[name.size()] == '=' && e.starts_with(name)) {
      return e.substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

CommandAdapter::CommandAdapter(AdapterOptions options, CommandAdapterWords words,
                               std::vector<std::string> tool_env)
    : options_(std::move(options)), words_(std::move(words)), tool_env_(std::move(tool_env)) {
  path_ = EnvValue(options_.environment, "PATH").value_or(kDefaultPath);
}

Result<std::string> CommandAdapter::Submit(const JobSpec& spec) {
  const std::string& dir = spec.control_dir;
  if (auto id = ReadFile(dir + "/" + words_.name + ".id")) {
    std::string sid(Trim(*id));
    if (!sid.empty()) return dir + "#" + sid;
  }
  // The script is written (durably) before the submit command runs: with it, the job may be in
  // the batch system already, under its name.
  if (FileExists(dir + "/" + words_.name + ".sh")) {
    auto found = FindSubmitted(spec);
    if (!found) return Fail(found.error());
    if (!found->empty()) return Remember(dir, *found);
    // Ran, and the batch system has forgotten it since: kite-exec's record tells the rest.
    if (ReadExecStatus(dir) || ExecWrapperAlive(dir)) return dir + "#";
  }
  if (Paused()) return Unreachable();
  return SubmitNew(spec);
}

Status CommandAdapter::Cancel(const std::string& id) {
  auto [dir, sid] = SplitId(id);
  if (sid.empty() || GoneFromQueue(sid)) return {};  // nothing left in the queue to cancel
  auto it = cancel_sent_.find(sid);
  if (it != cancel_sent_.end() && Clock::now() - it->second < kCancelResend) return {};
  to_cancel_.insert(sid);
  return {};
}

std::unexpected<Error> CommandAdapter::Unreachable(const std::string& why) {
  if (!why.empty()) {
    unreachable_until_ = Clock::now() + kUnreachablePause;
    last_unreachable_ = why;
  }
  return Fail(ErrorCode::kUnavailable,
              words_.server + " cannot be reached (" + last_unreachable_ + ")");
}

void CommandAdapter::LogPollFailure(size_t jobs, std::string_view what, const Error& e) const {
  spdlog::warn("{}: asking {} about {} jobs: {}", Name(), what, jobs, e.message());
}

bool CommandAdapter::PollDue() {
  auto now = Clock::now();
  if (now < next_poll_ || now < unreachable_until_) return false;
  next_poll_ = now + options_.poll_interval;
  return true;
}

Result<std::string> CommandAdapter::Remember(const std::string& dir, const std::string& sid) {
  if (!WriteQuick(dir + "/" + words_.name + ".id", sid + "\n")) {
    spdlog::warn("{}: cannot write {}/{}.id; job {} will be looked up by name", words_.name, dir,
                 words_.name, sid);
  }
  return dir + "#" + sid;
}

Result<std::string> CommandAdapter::SubmitScript(const std::string& dir,
                                                 const std::vector<std::string>& args,
                                                 const std::vector<std::string>& env) {
  const std::string& tool = words_.submit_tool;
  auto r = Run(tool, args, env);
  if (!r) return Fail(r.error());
  if (r->exit_code != 0) {
    if (words_.contact_failure(*r)) return Unreachable(FirstLine(r->err));
    return Fail(words_.request_refused(*r) ? ErrorCode::kInvalidInput : ErrorCode::kIo,
                tool + " refused the job: " + FirstLine(r->err));
  }
  auto sid = words_.parse_submit(r->out);
  if (!sid) {
    // It may have been accepted all the same: look it up by name on the next try.
    return Fail(ErrorCode::kUnavailable, sid.error().message());
  }
  // Test-only: die as a crash would between the acceptance and any record of the id.
  if (FaultFires(words_.crash_after_submit)) std::_Exit(9);
  return Remember(dir, *sid);
}

std::vector<std::string> CommandAdapter::ToolEnvironment() const {
  std::vector<std::string> env = {"PATH=" + path_};
  env.insert(env.end(), tool_env_.begin(), tool_env_.end());
  return env;
}

Result<CommandResult> CommandAdapter::Run(const std::string& tool,
                                          const std::vector<std::string>& args,
                                          const std::vector<std::string>& env) {
  std::string path = FindInPath(tool, path_);
  if (path.empty()) {
    return Fail(ErrorCode::kNotFound, tool + " is not in the job manager's PATH (" + path_ +
                                          "): is " + words_.client + " installed?");
  }
  std::vector<std::string> argv = {path};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = RunCommand(argv, env, kCommandTimeout);
  if (r && r->timed_out) {
    Unreachable(tool + " took longer than " + std::to_string(kCommandTimeout.count()) + " s");
  }
  return r;
}

std::vector<std::string> CommandAdapter::PendingCancels(Clock::time_point now) {
  std::erase_if(cancel_sent_, [&](const auto& e) { return now - e.second > kCancelResend; });
  return {to_cancel_.begin(), to_cancel_.end()};
}

void CommandAdapter::CancelsSent(Clock::time_point sent) {
  for (const auto& sid : to_cancel_) cancel_sent_[sid] = sent;
  to_cancel_.clear();
}

}  // namespace kite::gram::batch
