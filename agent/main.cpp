// kite-agent: the per-user daemon. Usually started by `kite agent start`.
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "agent/agent.h"
#include "agent/config.h"
#include "common/accept_guard.h"
#include "common/files.h"
#include "common/log.h"
#include "common/memory.h"
#include "common/paths.h"

namespace {

// A daemon that dies should say how: the signal and a backtrace go to stderr (agent.out).
void OnFatalSignal(int sig) {
  char msg[64];
  int n = std::snprintf(msg, sizeof msg, "kite-agent: fatal signal %d (%s)\n", sig, strsignal(sig));
  (void)!::write(2, msg, static_cast<size_t>(n));
  void* frames[64];
  int depth = ::backtrace(frames, 64);
  ::backtrace_symbols_fd(frames, depth, 2);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void InstallCrashReporter() {
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) ::signal(sig, OnFatalSignal);
  ::signal(SIGPIPE, SIG_IGN);
  std::set_terminate([] {
    if (auto e = std::current_exception()) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        std::fprintf(stderr, "kite-agent: uncaught exception: %s\n", x.what());
      } catch (...) {
        std::fprintf(stderr, "kite-agent: uncaught exception\n");
      }
    }
    std::abort();
  });
}

}  // namespace

int main(int argc, char** argv) {
  InstallCrashReporter();
  kite::KeepLargeBuffersOnTheHeap();
  CLI::App app{"kite-agent: the per-user Kite daemon that owns the job queue"};
  std::string home = kite::KiteHome();
  bool foreground_log = false;
  app.add_option("--home", home, "state directory (default $KITE_HOME or ~/.kite)");
  app.add_flag("--log-stderr", foreground_log, "log to stderr instead of HOME/agent.log");
  std::string rest;
  app.add_option("--rest", rest,
                 "serve the read-only REST status endpoint at HOST:PORT (overrides [rest] listen; "
                 "loopback unless [rest] allow_remote = true)")
      ->type_name("HOST:PORT");
  CLI11_PARSE(app, argc, argv);

  if (auto st = kite::MakeDirs(home, 0700); !st) {
    std::fprintf(stderr, "kite-agent: %s\n", st.error().message().c_str());
    return 1;
  }
  auto options = kite::agent::LoadAgentOptions(home);
  if (!options) {
    std::fprintf(stderr, "kite-agent: %s\n", options.error().message().c_str());
    return 1;
  }
  if (!rest.empty()) options->rest_listen = rest;
  // One agent per home: the pid file is locked for the agent's lifetime.
  int pid_fd = ::open(options->pid_path().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (pid_fd < 0 || ::flock(pid_fd, LOCK_EX | LOCK_NB) != 0) {
    std::fprintf(stderr, "kite-agent: another agent is running for %s\n", home.c_str());
    return 1;
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  (void)!::ftruncate(pid_fd, 0);
  (void)!::pwrite(pid_fd, pid.data(), pid.size(), 0);

  kite::InitLogging("agent", foreground_log ? "" : options->log_path(), options->log_level);
  kite::RaiseOpenFileLimit();  // connections are bounded per peer, not by the default 1,024
  kite::agent::Agent agent(*options);
  if (auto st = agent.Start(); !st) {
    std::fprintf(stderr, "kite-agent: %s\n", st.error().message().c_str());
    return 1;
  }
  agent.Run();
  ::unlink(options->socket_path().c_str());
  return 0;
}
