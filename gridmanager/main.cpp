// kite-gridmanager: started by kite-agent, one per proxy file with grid jobs
// (docs/architecture.md).
#include <signal.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "common/accept_guard.h"
#include "common/log.h"
#include "common/paths.h"
#include "gridmanager/gridmanager.h"

int main(int argc, char** argv) {
  CLI::App app{
      "kite-gridmanager: runs the grid-universe jobs of one proxy at their sites (started by "
      "kite-agent; exits when none remain)"};
  kite::gridmanager::GridManagerOptions o;
  o.home = kite::KiteHome();
  o.AddFlags(app);
  CLI11_PARSE(app, argc, argv);
  kite::InitLogging("kite-gridmanager", o.log_file, o.log_level);
  kite::RaiseOpenFileLimit();  // connections are bounded per peer, not by the default 1,024
  ::signal(SIGPIPE, SIG_IGN);
  kite::gridmanager::GridManager gm(o);
  if (auto st = gm.Start(); !st) {
    std::fprintf(stderr, "kite-gridmanager: %s\n", st.error().ToString().c_str());
    return 1;
  }
  return gm.Run();
}
