// `kite agent start|stop|status`.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "agent/cli/commands.h"
#include "agent/cli/util.h"
#include "agent/config.h"
#include "agent/listen_address.h"
#include "common/files.h"
#include "common/paths.h"
#include "common/spawn.h"
#include "common/strings.h"

namespace kite::cli {
namespace {

namespace json = boost::json;

// The pid of the agent holding HOME/agent.pid's lock, or 0 when none does.
int RunningAgentPid(const std::string& home) {
  std::string path = home + "/agent.pid";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  bool locked = ::flock(fd, LOCK_SH | LOCK_NB) != 0;
  ::close(fd);
  if (!locked) return 0;
  auto text = ReadFile(path);
  return text ? std::atoi(text->c_str()) : 0;
}

bool WaitFor(const std::function<bool()>& ready, double seconds) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ready();
}

// Where the agent's REST endpoint listens ("http://HOST:PORT/"), or "" when it has none.
std::string RestUrl(const std::string& home) {
  auto text = ReadFile(home + "/rest.address");
  return text ? std::string(Trim(*text)) : std::string();
}

void Start(bool foreground, const std::string& rest) {
  std::string home = KiteHome();
  if (int pid = RunningAgentPid(home)) {
    std::printf("kite-agent is already running (pid %d) for %s\n", pid, home.c_str());
    if (!rest.empty())
      std::printf("--rest applies when the agent starts: `kite agent stop` first to change it\n");
    if (auto url = RestUrl(home); !url.empty())
      std::printf("REST status endpoint: %s (token in %s/rest.token)\n", url.c_str(), home.c_str());
    return;
  }
  if (auto st = MakeDirs(home, 0700); !st) Die(st.error());
  // Check the configuration here too, so a bad file is reported to the user who typed the command.
  auto options = agent::LoadAgentOptions(home);
  if (!options) Die(options.error());
  if (!rest.empty()) {
    if (auto a = agent::ParseListenAddress(rest, options->rest_allow_remote); !a)
      Die("--rest " + rest + ": " + a.error().message());
  }
  // agent.out is appended to: only what this start adds to it is its reason for failing.
  struct stat out_before {};
  off_t out_offset =
      ::stat((home + "/agent.out").c_str(), &out_before) == 0 ? out_before.st_size : 0;
  SpawnOptions so;
  so.program = ProgramPath("kite-agent");
  so.argv = {so.program, "--home", home};
  if (!rest.empty()) so.argv.insert(so.argv.end(), {"--rest", rest});
  so.env = CurrentEnvironment();
  so.new_session = !foreground;
  so.stdout_path = home + "/agent.out";
  so.stderr_path = home + "/agent.out";
  if (foreground) {
    so.argv.push_back("--log-stderr");
    std::vector<char*> argv;
    for (auto& a : so.argv) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(so.program.c_str(), argv.data());
    Die("cannot run " + so.program);
  }
  auto pid = Spawn(so);
  if (!pid) Die(pid.error());
  // Up when the agent we started answers (not a stale socket someone else still holds).
  bool ended = false;  // it exited (a configuration or start-up error): no need to wait on
  bool up = WaitFor(
      [&] {
        int status = 0;
        if (::waitpid(*pid, &status, WNOHANG) == *pid) return ended = true;
        auto c = AgentClient::Connect(home);
        if (!c) return false;
        auto r = (*c)->Get("/v1/ping");
        if (!r || r->status != 200) return false;
        boost::system::error_code ec;
        auto v = json::parse(r->body, ec);
        return !ec && v.is_object() && v.as_object().contains("pid") &&
               v.as_object().at("pid").to_number<int64_t>() == *pid;
      },
      15);
  if (!up || ended) {
    auto out = ReadFile(home + "/agent.out");
    std::string added = out && out->size() > static_cast<size_t>(out_offset)
                            ? out->substr(static_cast<size_t>(out_offset))
                            : "";
    std::string why = Trim(added).empty() ? "" : ": " + std::string(Trim(added));
    Die("kite-agent did not start" + why);
  }
  std::printf("kite-agent started (pid %d) for %s\n", *pid, home.c_str());
  if (auto url = RestUrl(home); !url.empty())
    std::printf("REST status endpoint: %s (token in %s/rest.token)\n", url.c_str(), home.c_str());
}

void Stop(bool stop_startd) {
  std::string home = KiteHome();
  int pid = RunningAgentPid(home);
  if (!pid) {
    std::printf("kite-agent is not running for %s\n", home.c_str());
    return;
  }
  if (auto c = AgentClient::Connect(home)) {
    json::object body;
    if (stop_startd) body["startd"] = true;
    (void)(*c)->Post("/v1/shutdown", body);
  } else {
    if (stop_startd) std::fprintf(stderr, "kite: the agent does not answer: its startd runs on\n");
    ::kill(pid, SIGTERM);
  }
  if (!WaitFor([&] { return RunningAgentPid(home) == 0; }, 30)) Die("kite-agent did not stop");
  std::printf("kite-agent stopped\n");
}

void Status() {
  std::string home = KiteHome();
  auto c = AgentClient::Connect(home);
  if (!c) {
    std::printf("kite-agent is not running for %s\n", home.c_str());
    throw CLI::RuntimeError(3);
  }
  auto r = (*c)->Get("/v1/ping");
  if (!r || r->status != 200) Die("kite-agent does not answer");
  auto v = json::parse(r->body).as_object();
  std::printf("kite-agent is running (pid %lld) for %s with %lld job(s) queued\n",
              static_cast<long long>(v["pid"].as_int64()), home.c_str(),
              static_cast<long long>(v["jobs"].to_number<int64_t>()));
  if (auto url = RestUrl(home); !url.empty())
    std::printf("REST status endpoint: %s (token in %s/rest.token)\n", url.c_str(), home.c_str());
}

}  // namespace

void RegisterAgentCommands(CLI::App& app) {
  auto* agent = app.add_subcommand("agent", "start, stop or check the per-user kite-agent");
  agent->require_subcommand(1);
  static bool foreground = false;
  static std::string rest;
  auto* start = agent->add_subcommand("start", "start the agent in the background");
  start->add_flag("--foreground", foreground, "run in the foreground, logging to stderr");
  start
      ->add_option("--rest", rest,
                   "also serve the read-only REST status endpoint and status page at HOST:PORT, "
                   "e.g. 127.0.0.1:8080 (bearer token in $KITE_HOME/rest.token; overrides "
                   "[rest] listen in config.toml)")
      ->type_name("HOST:PORT");
  start->callback([] { Start(foreground, rest); });
  static bool stop_startd = false;
  auto* stop = agent->add_subcommand(
      "stop",
      "stop the agent (running jobs keep running: local ones, and pool jobs on their startds; the "
      "next agent adopts them)");
  stop->add_flag("--stop-startd", stop_startd,
                 "also stop the local startd: its running jobs are vacated and run again later");
  stop->callback([] { Stop(stop_startd); });
  agent->add_subcommand("status", "say whether the agent runs (exit 3 when not)")->callback(Status);
}

}  // namespace kite::cli
