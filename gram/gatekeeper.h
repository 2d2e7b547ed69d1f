// kite-gatekeeper's engine: the site's only TLS endpoint. Authenticates the client's proxy chain
// during the handshake, maps its identity through the grid-mapfile, and forwards each request to
// that account's kite-jobmanager over its Unix socket (starting the job manager, under the mapped
// account when run as root, when it is not running), adding the verified identity.
//
// Threading: one io_context run by `threads` threads; each connection lives on its own strand.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "credentials/certificate.h"

namespace kite::gram {

struct GatekeeperOptions {
  std::string listen_host = "127.0.0.1";
  uint16_t port = 0;      // 0: any free port (see Gatekeeper::port)
  std::string state_dir;  // users/<account>/ per mapped account lives here
  credentials::Credential host_credential;
  std::string ca_dir;        // trusted CAs (and CRLs)
  std::string gridmap_path;  // re-read when it changes
  std::string batch = "fork";
  std::string jobmanager_path;  // kite-jobmanager
  std::string contact_host;     // host name in job contacts (default: listen_host)
  int threads = 2;
  std::chrono::seconds commit_timeout{600};  // passed to job managers
  std::chrono::seconds idle_timeout{120};    // a kept-alive connection idle this long is closed
  // Open connections one client address may hold (0: no limit); more are closed at once. A
  // gridmanager uses at most its max_requests_per_resource.
  size_t max_connections_per_peer = 256;
  std::string jobmanager_log_level = "info";
  // Passed to job managers: how often they ask the batch system's daemons about jobs.
  std::chrono::milliseconds batch_poll_interval{1000};
  // Passed to job managers (absolute paths): the fork adapter's limits file (a test aid) and the
  // administrator's attributes for the site's info ad.
  std::string fork_limits;
  std::string site_attributes;
  // Variables of the gatekeeper's own environment that job managers get too (when set): where
  // the batch system's commands are and how they find their cluster. Everything else of a job
  // manager's environment is fixed (PATH=/usr/local/bin:/usr/bin:/bin, HOME, USER, LOGNAME).
  std::vector<std::string> pass_environment = {"PATH",       "SLURM_CONF",       "SGE_ROOT",
                                               "SGE_CELL",   "SGE_QMASTER_PORT", "SGE_EXECD_PORT",
                                               "KITE_SGE_PE"};
};

class Gatekeeper {
 public:
  static Result<std::unique_ptr<Gatekeeper>> Create(GatekeeperOptions options);
  ~Gatekeeper();

  // Binds, listens and starts the threads.
  Status Start();
  uint16_t port() const;
  // Stops accepting, closes connections and joins the threads.
  void Stop();
  // Blocks until Stop() (from a signal handler thread, say).
  void Wait();

  struct Impl;

 private:
  explicit Gatekeeper(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kite::gram
