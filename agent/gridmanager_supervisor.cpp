// Starting, reaping and restarting the gridmanagers.
#include "agent/gridmanager_supervisor.h"

#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <iterator>

#include "common/clock.h"
#include "common/paths.h"
#include "common/spawn.h"

namespace kite::agent {
namespace {

// The command line of the gridmanager for `proxy`: the [grid] settings, this agent's home and
// log level.
std::vector<std::string> GridManagerArgs(const AgentOptions& o, const std::string& proxy) {
  gridmanager::GridManagerOptions g = o.grid;
  g.home = o.home;
  g.proxy = proxy;
  g.log_file = o.home + "/gridmanager.log";
  g.log_level = o.log_level;
  std::vector<std::string> argv = {ProgramPath("kite-gridmanager")};
  std::ranges::copy(g.ToArgs(), std::back_inserter(argv));
  return argv;
}

}  // namespace

GridManagerSupervisor::GridManagerSupervisor(boost::asio::io_context& io,
                                             const AgentOptions& options,
                                             std::function<std::set<std::string>()> needed)
    : io_(io), options_(options), needed_(std::move(needed)), timer_(io) {}

void GridManagerSupervisor::Ensure() {
  if (!options_.start_gridmanagers) return;
  double now = SteadyNow();
  double wake = 0;
  for (const auto& proxy : needed_()) {
    Proc& g = procs_[proxy];
    if (g.pid > 0) continue;
    if (now < g.next_start || !Spawn(proxy, g, now)) {
      wake = wake == 0 ? g.next_start : std::min(wake, g.next_start);
    }
  }
  if (wake > 0) {
    timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>((wake - now) * 1000) + 10));
    timer_.async_wait([this](auto ec) {
      if (!ec) Ensure();
    });
  }
}

bool GridManagerSupervisor::Spawn(const std::string& proxy, Proc& g, double now) {
  SpawnOptions so;
  so.argv = GridManagerArgs(options_, proxy);
  so.program = so.argv.front();
  so.env = CurrentEnvironment();
  so.stdout_path = so.stderr_path = options_.home + "/gridmanager.out";
  auto pid = kite::Spawn(so);
  if (!pid) {
    spdlog::error("agent: cannot start kite-gridmanager: {}", pid.error().ToString());
    g.next_start = now + 10;
    return false;
  }
  g.pid = *pid;
  g.started = now;
  spdlog::info("agent: started kite-gridmanager {} for {}", g.pid, proxy);
  return true;
}

std::string GridManagerSupervisor::Describe(const std::string& proxy, double now) const {
  auto it = procs_.find(proxy);
  if (it == procs_.end()) return "not started (none is needed yet, or the proxy cannot be used)";
  const Proc& g = it->second;
  if (g.pid > 0) return "running (pid " + std::to_string(g.pid) + ")";
  if (g.next_start > now) {
    return "ended; started again in " + std::to_string(static_cast<int>(g.next_start - now) + 1) +
           " s (see gridmanager.out in the agent's home)";
  }
  return "not running; started when a job needs it";
}

bool GridManagerSupervisor::Reaped(pid_t pid, int status) {
  for (auto& [proxy, g] : procs_) {
    if (g.pid != pid) continue;
    g.pid = 0;
    double now = SteadyNow();
    bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    // One that keeps ending soon after it starts is restarted ever more slowly (up to a minute).
    g.backoff = now - g.started < 5 ? std::clamp(g.backoff * 2, 1.0, 60.0) : 0;
    g.next_start = now + g.backoff;
    if (clean) {
      spdlog::info("agent: kite-gridmanager {} for {} finished", pid, proxy);
    } else {
      spdlog::warn("agent: kite-gridmanager {} for {} ended ({}); restarting in {:.0f} s", pid,
                   proxy,
                   WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                       : "exit " + std::to_string(WEXITSTATUS(status)),
                   g.backoff);
    }
    boost::asio::post(io_, [this] { Ensure(); });
    return true;
  }
  return false;
}

}  // namespace kite::agent
