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
  std::string log_file, log_level = "info";
  o.home = kite::KiteHome();
  app.add_option("--home", o.home, "KITE_HOME of the agent whose jobs to run");
  app.add_option("--proxy", o.proxy, "the proxy file (x509userproxy) of the jobs to run")
      ->required();
  app.add_option("--ca-dir", o.ca_dir, "trusted CA directory (default: as the Globus tools)");
  app.add_option("--listen-host", o.listen_host, "address for the GASS and callback servers");
  app.add_option("--probe-interval", o.probe_interval,
                 "seconds without news of a job before its site is asked");
  app.add_option("--max-resubmits", o.max_resubmits,
                 "resubmissions after site failures before a job is held");
  app.add_option("--max-jobs-per-resource", o.max_jobs_per_resource,
                 "jobs submitted and not finished at one site");
  app.add_option("--max-requests-per-resource", o.max_requests_per_resource,
                 "requests in flight to one site");
  app.add_option("--log", log_file, "log file (default: stderr)");
  app.add_option("--log-level", log_level, "debug, info, warn, error");
  CLI11_PARSE(app, argc, argv);
  kite::InitLogging("kite-gridmanager", log_file, log_level);
  kite::RaiseOpenFileLimit();  // connections are bounded per peer, not by the default 1,024
  ::signal(SIGPIPE, SIG_IGN);
  kite::gridmanager::GridManager gm(o);
  if (auto st = gm.Start(); !st) {
    std::fprintf(stderr, "kite-gridmanager: %s\n", st.error().ToString().c_str());
    return 1;
  }
  return gm.Run();
}
