// kite-jobmanager: one per mapped account, started by kite-gatekeeper (docs/protocol.md).
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <functional>

#include "common/accept_guard.h"
#include "common/files.h"
#include "common/log.h"
#include "common/paths.h"
#include "gram/jm_server.h"
#include "gram/job_manager.h"

int main(int argc, char** argv) {
  CLI::App app{
      "kite-jobmanager: runs one account's grid jobs at a site (started by kite-gatekeeper)"};
  kite::gram::JobManagerOptions o;
  o.AddFlags(app);
  CLI11_PARSE(app, argc, argv);
  o.exec_path = kite::ProgramPath("kite-exec");
  for (char** e = environ; *e != nullptr; ++e) o.environment.emplace_back(*e);
  kite::InitLogging("kite-jobmanager", o.log_file, o.log_level);
  kite::RaiseOpenFileLimit();  // connections are bounded per peer, not by the default 1,024
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGCHLD, SIG_DFL);  // the fork adapter reaps its wrappers itself

  if (auto st = kite::MakeDirs(o.state_dir, 0700); !st) {
    spdlog::error("{}", st.error().ToString());
    return 1;
  }
  // One job manager per account: a second one (started by a racing gatekeeper) leaves quietly.
  int lock = ::open((o.state_dir + "/jm.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0 || ::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    spdlog::info("another job manager serves {}; exiting", o.state_dir);
    return 0;
  }
  // For operators and tests: who serves this account now (the lock above is the real guard).
  (void)kite::WriteFileAtomic(o.state_dir + "/jm.pid", std::to_string(::getpid()) + "\n", 0644);
  boost::asio::io_context io;
  auto jm = kite::gram::JobManager::Open(io, o);
  if (!jm) {
    spdlog::error("{}", jm.error().ToString());
    return 1;
  }
  kite::gram::JmServer server(io, **jm);
  if (auto st = server.Listen(o.state_dir + "/jm.sock"); !st) {
    spdlog::error("{}", st.error().ToString());
    return 1;
  }
  (*jm)->Start();
  // A wrapper started by this job manager ended: look at once (polling stays the fallback for
  // wrappers started before a restart, which are not our children).
  boost::asio::signal_set children(io, SIGCHLD);
  std::function<void()> watch_children = [&] {
    children.async_wait([&](boost::system::error_code ec, int) {
      if (ec) return;
      (*jm)->Wake();
      watch_children();
    });
  };
  watch_children();
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](auto, int) {
    server.Close();
    children.cancel();
    (*jm)->Stop();
    io.stop();
  });
  io.run();
  spdlog::info("job manager stopped");
  return 0;
}
