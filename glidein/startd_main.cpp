// kite-startd: advertises slots to a Kite agent and runs the vanilla jobs it is given
// (docs/pool.md). Started by the agent for this machine's slots, and by a glide-in's bootstrap.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>

#include "common/log.h"
#include "common/paths.h"
#include "glidein/options.h"
#include "glidein/startd.h"

namespace {

// The base environment of every job: the startd's PATH (or a plain one), nothing else of its.
std::vector<std::string> BaseEnv() {
  const char* path = std::getenv("PATH");
  return {std::string("PATH=") + (path && *path ? path : "/usr/local/bin:/usr/bin:/bin")};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kite-startd: advertises slots to a Kite agent and runs the jobs it is given"};
  kite::glidein::StartdOptions o;
  o.AddFlags(app);
  CLI11_PARSE(app, argc, argv);
  kite::InitLogging("kite-startd", o.log_file, o.log_level);
  ::signal(SIGPIPE, SIG_IGN);

  boost::asio::io_context io;
  auto dialer = kite::glidein::MakeDialer(io, o.agent);
  if (!dialer) {
    std::fprintf(stderr, "kite-startd: %s\n", dialer.error().ToString().c_str());
    return 1;
  }
  boost::asio::signal_set stops(io, SIGTERM, SIGINT);
  int code = 1;
  kite::glidein::Startd startd(io, o,
                               {.exec_path = kite::ProgramPath("kite-exec"),
                                .env = BaseEnv(),
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
  return code;
}
