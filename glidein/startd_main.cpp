// kite-startd: advertises slots to a Kite agent and runs the vanilla jobs it is given
// (docs/pool.md). Started by the agent for this machine's slots, and by a glide-in's bootstrap.
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>

#include "common/files.h"
#include "common/log.h"
#include "common/memory.h"
#include "common/paths.h"
#include "glidein/options.h"
#include "glidein/startd.h"

namespace {

// One startd per work directory: it holds WORK/startd.lock while it lives (the agent looks at the
// lock before starting the local startd, so one that outlived a killed agent is not doubled).
bool LockWork(const std::string& work) {
  if (auto st = kite::MakeDirs(work, 0700); !st) {
    std::fprintf(stderr, "kite-startd: %s\n", st.error().ToString().c_str());
    return false;
  }
  std::string path = work + "/startd.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::fprintf(stderr, "kite-startd: another startd works in %s (%s is locked)\n", work.c_str(),
                 path.c_str());
    return false;
  }
  // The holder's pid, for an agent that must stop a startd it did not start.
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    std::fprintf(stderr, "kite-startd: cannot write %s\n", path.c_str());
  }
  return true;  // the descriptor stays open, and the lock held, for the process's life
}

}  // namespace

int main(int argc, char** argv) {
  kite::KeepLargeBuffersOnTheHeap();
  CLI::App app{"kite-startd: advertises slots to a Kite agent and runs the jobs it is given"};
  kite::glidein::StartdOptions o;
  o.AddFlags(app);
  CLI11_PARSE(app, argc, argv);
  kite::InitLogging("kite-startd", o.log_file, o.log_level);
  ::signal(SIGPIPE, SIG_IGN);
  if (!LockWork(o.work)) return 3;

  boost::asio::io_context io;
  auto dialer = kite::glidein::MakeDialer(
      io, o.agent, {.proxy = o.proxy, .ca_dir = o.ca_dir, .agent_identity = o.agent_identity});
  if (!dialer) {
    std::fprintf(stderr, "kite-startd: %s\n", dialer.error().ToString().c_str());
    return 1;
  }
  boost::asio::signal_set stops(io, SIGTERM, SIGINT);
  int code = 1;
  kite::glidein::Startd startd(io, o,
                               {.starter_path = kite::ProgramPath("kite-starter"),
                                .dialer = std::move(*dialer),
                                .on_exit = [&](int c) {
                                  code = c;
                                  stops.cancel();
                                }});
  stops.async_wait([&](auto ec, int sig) {
    if (!ec) startd.Leave(sig == SIGTERM ? "SIGTERM" : "SIGINT");
  });
  if (auto st = startd.Start(); !st) {
    std::fprintf(stderr, "kite-startd: %s\n", st.error().ToString().c_str());
    return 1;
  }
  io.run();
  // Once leaving, a stop signal changes nothing, and one arriving late must not kill the process
  // after it has finished: a batch system signals every process of the job (Slurm's
  // `scancel --full`), and kite-exec forwards its own copy, so a second SIGTERM can come after
  // the first was handled. The handlers stay to the end; the starters see their sockets close
  // and clean up on their own.
  kite::FlushLogsAndExit(code);
}
