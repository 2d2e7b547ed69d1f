// This desktop's own startd.
#include "agent/local_startd.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <thread>

#include "common/clock.h"
#include "common/files.h"
#include "common/paths.h"
#include "common/spawn.h"
#include "glidein/options.h"

namespace kite::agent {
namespace {

// One argument per line: how a startd's settings are kept beside its lock.
std::string ArgLines(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += a + "\n";
  return out;
}

// This host's name as a startd name (pool::CheckStartdName): other characters become '_'.
std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == 0) return "localhost";
  std::string name(buf, std::min<size_t>(std::strlen(buf), 128));
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  if (name[0] == '.' || name[0] == '-') name[0] = '_';
  return name;
}

// Whether a startd holds the lock of work directory `work` (one that outlived an agent killed
// with -9 goes on serving and reconnects; a second one must not start beside it).
bool StartdRunsIn(const std::string& work) {
  int fd = ::open((work + "/startd.lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return held;
}

}  // namespace

LocalStartd::LocalStartd(boost::asio::io_context& io, const PoolSettings& settings,
                         std::string home, std::string pool_socket, PoolAuthority& authority,
                         std::function<void(const std::string&)> died,
                         std::function<bool(const std::string&)> busy)
    : io_(io),
      settings_(settings),
      home_(std::move(home)),
      pool_socket_(std::move(pool_socket)),
      authority_(authority),
      died_(std::move(died)),
      busy_(std::move(busy)),
      name_(HostName()),
      timer_(io) {}

int LocalSlotCount(const PoolSettings& pool) {
  if (pool.local_slots >= 0) return pool.local_slots;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void LocalStartd::Start() {
  if (LocalSlotCount(settings_) == 0) return;
  // A fresh credential for each agent: good on the local door only, for this many slots.
  auto issued = authority_.IssueToFile(
      pool::CredentialClaims{.kind = pool::CredentialKind::kLocal,
                             .name = name_,
                             .slots = LocalSlotCount(settings_),
                             .expires = static_cast<int64_t>(authority_.Now() + 365 * 86400.0)},
      authority_.local_credential_path());
  if (!issued) {
    spdlog::error("agent: no local slots: cannot write the local startd's credential: {}",
                  issued.error().ToString());
    return;
  }
  Spawn();
}

void LocalStartd::Detach() {
  timer_.cancel();
  detached_ = true;
  if (pid_ > 0 || adopted_) spdlog::info("agent: the local startd runs on for the next agent");
}

void LocalStartd::Stop() {
  if (detached_) return;
  timer_.cancel();
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    return;
  }
  // One from before (adopted).
  SignalFromBefore(home_ + "/execute");
}

void LocalStartd::SignalFromBefore(const std::string& work) {
  // The lock file names it, while it holds the lock.
  auto text = ReadFile(work + "/startd.lock");
  if (!text || !StartdRunsIn(work)) return;
  pid_t pid = static_cast<pid_t>(std::atol(text->c_str()));
  if (pid > 1) ::kill(pid, SIGTERM);
}

glidein::StartdOptions LocalStartd::Settings() const {
  glidein::StartdOptions startd;
  startd.agent = "unix:" + pool_socket_;
  startd.name = name_;
  startd.slots = LocalSlotCount(settings_);
  startd.work = home_ + "/execute";
  startd.start = settings_.local_start;
  startd.policy = settings_.local_policy;
  startd.log_file = home_ + "/startd.log";
  startd.credential = authority_.local_credential_path();
  // It outlives the agent (`kite agent stop`, a crash) and dials the next one; when no agent comes
  // back within the default job lease it leaves, rather than dial a socket no one serves for ever.
  startd.agent_gone_timeout = kLocalStartdAgentGoneTimeout;
  return startd;
}

void LocalStartd::Adopt(const std::string& work) {
  if (!adopted_) {
    spdlog::info("agent: a local startd from before runs on; not starting another");
    auto before = ReadFile(work + "/startd.args");
    stale_ = !before || *before != ArgLines(Settings().ToArgs());
    if (stale_) {
      spdlog::warn(
          "agent: the local startd from before runs with other [pool] settings than config.toml's: "
          "they take effect once it has no running jobs (`kite agent stop --stop-startd` and "
          "`kite agent start` apply them now, vacating its jobs)");
    }
  }
  adopted_ = true;
  if (stale_ && !busy_(name_)) {
    spdlog::info(
        "agent: stopping the idle local startd from before, to start one with the new "
        "settings");
    SignalFromBefore(work);
  }
  After(5);
}

void LocalStartd::After(double seconds) {
  timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
  timer_.async_wait([this](auto ec) {
    if (!ec) Spawn();
  });
}

void LocalStartd::Spawn() {
  std::string work = home_ + "/execute";
  // Not our child: look again later, and start one when it is gone.
  if (StartdRunsIn(work)) return Adopt(work);
  if (adopted_) {
    // The startd from before has ended: runs it held are settled now, not when their lease ends.
    adopted_ = stale_ = false;
    spdlog::info("agent: the local startd from before has ended");
    died_(name_);
  }
  glidein::StartdOptions startd = Settings();
  std::vector<std::string> args = startd.ToArgs();
  if (auto st = WriteFileAtomic(work + "/startd.args", ArgLines(args), 0600); !st) {
    spdlog::warn("agent: cannot record the local startd's settings: {}", st.error().ToString());
  }
  SpawnOptions o;
  o.program = ProgramPath("kite-startd");
  o.argv = std::move(args);
  o.argv.insert(o.argv.begin(), o.program);
  o.env = CurrentEnvironment();
  o.stdout_path = o.stderr_path = home_ + "/startd.log";
  auto pid = kite::Spawn(o);
  started_ = SteadyNow();
  if (!pid) {
    spdlog::error("agent: cannot start the local startd: {}", pid.error().ToString());
    backoff_ = std::clamp(backoff_ * 2, 1.0, 60.0);
    return After(backoff_);
  }
  pid_ = *pid;
  spdlog::info("agent: local startd {} started with {} slot(s)", pid_, LocalSlotCount(settings_));
}

bool LocalStartd::Reaped(pid_t pid, int status) {
  if (pid_ == 0 || pid != pid_) return false;
  pid_ = 0;
  died_(name_);
  double now = SteadyNow();
  backoff_ = now - started_ < 5 ? std::clamp(backoff_ * 2, 1.0, 60.0) : 0;
  spdlog::warn("agent: the local startd ended ({}); restarting in {:.0f} s",
               WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                   : "exit " + std::to_string(WEXITSTATUS(status)),
               backoff_);
  After(backoff_);
  return true;
}

}  // namespace kite::agent
