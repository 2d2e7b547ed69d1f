// The gridmanager's flags, written by the agent and read by kite-gridmanager.
#include "gridmanager/options.h"

#include <CLI/CLI.hpp>

#include "common/strings.h"

namespace kite::gridmanager {

std::vector<std::string> GridManagerOptions::ToArgs() const {
  return {"--home",
          home,
          "--proxy",
          proxy,
          "--ca-dir",
          ca_dir,
          "--listen-host",
          listen_host,
          "--probe-interval",
          ExactNumber(probe_interval),
          "--max-resubmits",
          std::to_string(max_resubmits),
          "--max-jobs-per-resource",
          std::to_string(max_jobs_per_resource),
          "--max-requests-per-resource",
          std::to_string(max_requests_per_resource),
          "--threads",
          std::to_string(threads),
          "--linger",
          ExactNumber(linger),
          "--log",
          log_file,
          "--log-level",
          log_level};
}

void GridManagerOptions::AddFlags(CLI::App& app) {
  app.add_option("--home", home, "KITE_HOME of the agent whose jobs to run");
  app.add_option("--proxy", proxy, "the proxy file (x509userproxy) of the jobs to run")->required();
  app.add_option("--ca-dir", ca_dir, "trusted CA directory (default: as the Globus tools)");
  app.add_option("--listen-host", listen_host, "address for the GASS and callback servers");
  app.add_option("--probe-interval", probe_interval,
                 "seconds without news of a job before its site is asked");
  app.add_option("--max-resubmits", max_resubmits,
                 "resubmissions after site failures before a job is held");
  app.add_option("--max-jobs-per-resource", max_jobs_per_resource,
                 "jobs submitted and not finished at one site");
  app.add_option("--max-requests-per-resource", max_requests_per_resource,
                 "requests in flight to one site");
  app.add_option("--threads", threads, "threads for blocking calls to sites and the agent");
  app.add_option("--linger", linger, "seconds without jobs before exiting");
  app.add_option("--log", log_file, "log file (default: stderr)");
  app.add_option("--log-level", log_level, "debug, info, warn, error");
}

}  // namespace kite::gridmanager
