// The gridmanager's settings, and how they cross from the agent, which starts each
// kite-gridmanager, to the gridmanager's flags: ToArgs writes every field as a flag, AddFlags
// reads them back, so a new setting is a field here and a line in each of the two (options.cpp).
// The agent fills the [grid] fields from config.toml (agent/config.cpp).
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kite::gridmanager {

struct GridManagerOptions {
  std::string home;                       // KITE_HOME: the agent's socket and the lock live there
  std::string proxy;                      // the proxy file whose jobs this gridmanager drives
  std::string ca_dir;                     // trusted CAs ("" = credentials::DefaultCaDir())
  std::string listen_host = "127.0.0.1";  // address of the GASS and callback servers
  double probe_interval = 60;             // status probe of a job not heard from for this long
  int max_resubmits = 3;                  // site failures retried this many times, then held
  int max_jobs_per_resource = 1000;       // jobs submitted and not yet finished at one site
  int max_requests_per_resource = 8;      // requests in flight to one site
  int threads = 16;                       // for blocking calls
  double linger = 3;                      // seconds without jobs before exiting
  std::string log_file;                   // "" = standard error
  std::string log_level = "info";         // debug, info, warn, error

  // The flags that give a kite-gridmanager exactly these options (without the program name).
  std::vector<std::string> ToArgs() const;
  // Declares the flags ToArgs writes on `app`, each filling its field of *this (which must
  // outlive the parse). --proxy is required.
  void AddFlags(CLI::App& app);

  bool operator==(const GridManagerOptions&) const = default;
};

}  // namespace kite::gridmanager
