// The job manager's settings, and how they cross from the gatekeeper, which starts one
// kite-jobmanager per account, to the job manager's flags: ToArgs writes every flag-borne field,
// AddFlags reads them back, so a new setting is a field here and a line in each of the two
// (job_manager_options.cpp).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kite::gram {

struct JobManagerOptions {
  std::string state_dir;  // holds jobs.db, jobs/<id>/, creds/<id>.pem
  std::string ca_dir;     // trusted CAs: delegated chains, callback and GASS servers
  std::string batch = "fork";
  std::string account;                             // reported by /ping
  std::chrono::seconds commit_timeout{600};        // an uncommitted job is forgotten after this
  std::chrono::milliseconds poll_interval{50};     // how often the batch system is polled
  std::chrono::milliseconds stream_interval{200};  // how often running jobs' output is sent
  // How often the batch system's own daemons are asked about jobs (slurm: one squeue for all).
  std::chrono::milliseconds batch_poll_interval{1000};
  // Test aid for the fork adapter (AdapterOptions::fork_limits_file); "" = none.
  std::string fork_limits;
  // The site administrator's own attributes for the `info` ad (site_info.h); "" = none.
  std::string site_attributes;
  std::string log_file;            // "" = standard error
  std::string log_level = "info";  // debug, info, warn, error

  // Not flags: what kite-jobmanager finds for itself at start-up.
  std::string exec_path;  // kite-exec, beside the job manager's own program
  // The job manager's environment ("NAME=value"), read once at start-up: the batch adapter finds
  // its tools and its cluster through it (AdapterOptions::environment).
  std::vector<std::string> environment;

  // The flags that give a kite-jobmanager exactly these options (without the program name).
  std::vector<std::string> ToArgs() const;
  // Declares the flags ToArgs writes on `app`, each filling its field of *this (which must
  // outlive the parse). --state-dir and --ca-dir are required.
  void AddFlags(CLI::App& app);

  bool operator==(const JobManagerOptions&) const = default;
};

}  // namespace kite::gram
