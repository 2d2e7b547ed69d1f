// kite-starter: runs one job for its startd (docs/startd.md, "The starter"). Started by
// kite-startd, one per run, with a socket on descriptor 3 that carries the pool protocol's frames
// between the two; not meant to be run by hand.
#include <signal.h>
#include <sys/socket.h>
#include <CLI/CLI.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <functional>

#include "common/log.h"
#include "common/memory.h"
#include "common/paths.h"
#include "glidein/run_spec.h"
#include "glidein/starter.h"

int main(int argc, char** argv) {
  kite::KeepLargeBuffersOnTheHeap();
  CLI::App app{"kite-starter: runs one job for kite-startd (which starts it; not for use by hand)"};
  kite::glidein::StarterOptions o;
  int fd = 3;
  std::string log_file, log_level = "info";
  app.add_option("--work", o.work, "the startd's work directory (the sandbox is made in it)")
      ->required();
  app.add_option("--cpus", o.cpus, "the slot's cpus (OMP_NUM_THREADS)")->check(CLI::PositiveNumber);
  app.add_option("--kill-grace", o.kill_grace, "seconds from SIGTERM to SIGKILL when vacating")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--fd", fd, "the descriptor of the socket to the startd")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--log", log_file, "log file (default: standard error)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn or error");
  CLI11_PARSE(app, argc, argv);
  kite::InitLogging("kite-starter", log_file, log_level);
  ::signal(SIGPIPE, SIG_IGN);
  int type = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) {
    std::fprintf(stderr, "kite-starter: descriptor %d is not a stream socket to a startd\n", fd);
    return 1;
  }
  boost::asio::io_context io;
  boost::asio::local::stream_protocol::socket socket(io);
  socket.assign(boost::asio::local::stream_protocol(), fd);
  int code = 1;
  // SIGTERM and SIGINT do not end the starter (it ends when its startd does): they vacate the run
  // going on (Starter::OnStopSignal), however often they come. Installed before anything else
  // runs, so none arriving at start kills it.
  boost::asio::signal_set stops(io, SIGTERM, SIGINT);
  kite::glidein::Starter starter(
      io, o,
      {.exec_path = kite::ProgramPath("kite-exec"),
       .env = kite::glidein::JobBaseEnv(),
       .on_exit =
           [&](int c) {
             code = c;
             stops.cancel();
           }},
      std::make_unique<kite::pool::AsioByteStream<boost::asio::local::stream_protocol::socket>>(
          std::move(socket)));
  std::function<void()> wait_stop = [&] {
    stops.async_wait([&](auto ec, int sig) {
      if (ec) return;
      starter.OnStopSignal(sig);
      wait_stop();
    });
  };
  wait_stop();
  starter.Start();
  io.run();
  // Done: a late signal must not turn the exit code into a death by signal (see kite-startd).
  kite::FlushLogsAndExit(code);
}
