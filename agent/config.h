// The agent's settings: $KITE_HOME/config.toml, read once at start-up (docs/config.md).
#pragma once

#include <string>
#include <vector>

#include "agent/broker_settings.h"
#include "agent/mail_options.h"
#include "agent/pool_settings.h"
#include "common/error.h"
#include "glidein/options.h"
#include "gridmanager/options.h"

namespace kite::agent {

// [myproxy] in config.toml (docs/config.md).
struct MyProxySettings {
  std::string server;           // "HOST[:PORT]"; empty: no renewal
  std::string username;         // the MyProxy account; empty: the local user name
  std::string credential_name;  // one of several credentials under `username` (optional)
  std::string passphrase_file;  // holds the pass phrase; must not be readable by others
  std::string server_dn;        // the server's subject when it is not "host/HOST"
  double renew_before = 3600;   // renew when less than this many seconds are left
  double lifetime = 12 * 3600;  // of the retrieved proxy
  double retry_after = 60;      // after a failed attempt, wait this long before the next

  bool enabled() const { return !server.empty(); }
};

struct AgentOptions {
  // Where everything lives: queue.db, agent.sock, agent.log, spool/.
  std::string home;
  // [agent] log_level: "debug", "info", "warn", "error".
  std::string log_level = "info";
  // [agent] periodic_interval: seconds between evaluations of periodic_hold/release/remove
  // (HTCondor's PERIODIC_EXPR_INTERVAL, default 60).
  double periodic_interval = 60;
  // [agent] max_local_jobs: local-universe jobs running at once; 0 means no limit.
  int max_local_jobs = 200;
  // [agent] kill_grace: seconds between SIGTERM and SIGKILL when a running job is held or removed.
  double kill_grace = 10;
  // [agent] commit_delay_ms: how long queue changes may wait to share a transaction. Replies to
  // the CLI are sent only after the commit, whatever this is.
  int commit_delay_ms = 2;
  // [agent] history_max: finished jobs kept in history; the oldest are dropped beyond it (0 = all).
  int history_max = 0;
  // Start kite-gridmanager processes for grid jobs (off only in tests of the API alone).
  bool start_gridmanagers = true;
  // [grid]: the settings of each kite-gridmanager (gridmanager/options.h): probe_interval,
  // max_resubmits, max_jobs_per_resource, max_requests_per_resource, listen_host (the address
  // of the gridmanagers' GASS and callback servers, which job managers connect back to: a site
  // elsewhere needs an address it can reach). The supervisor fills in the proxy, home and log.
  gridmanager::GridManagerOptions grid;
  // [myproxy]: renewal of proxies from a MyProxy server.
  MyProxySettings myproxy;
  // [mail] and [credentials] (agent/mail_options.h, docs/config.md).
  MailOptions mail;
  CredentialOptions credentials;

  // [pool]: the personal pool.
  PoolSettings pool;
  // [[resource]] and [broker]: the user's grid sites and the broker (agent/broker.h).
  BrokerSettings broker;

  // [rest] listen: "HOST:PORT" of the read-only REST status endpoint; "" = none. `--rest` of
  // kite-agent (and of `kite agent start`) overrides it.
  std::string rest_listen;
  // [rest] allow_remote: rest_listen may be an address other hosts reach (plain HTTP, no TLS).
  bool rest_allow_remote = false;

  std::string rest_token_path() const { return home + "/rest.token"; }
  std::string rest_address_path() const { return home + "/rest.address"; }
  std::string queue_path() const { return home + "/queue.db"; }
  std::string socket_path() const { return home + "/agent.sock"; }
  std::string pool_socket_path() const { return home + "/pool.sock"; }
  std::string pool_address_path() const { return home + "/pool.address"; }
  // The port the pool listener last had: taken again after a restart when `listen` says port 0,
  // so glide-ins that dialled the agent before can dial it again.
  std::string pool_port_path() const { return home + "/pool.port"; }
  std::string log_path() const { return home + "/agent.log"; }
  std::string pid_path() const { return home + "/agent.pid"; }
  std::string spool_path() const { return home + "/spool"; }
  std::string outbox_path() const { return home + "/mail/outbox"; }
  std::string credential_state_path() const { return home + "/credentials.json"; }
};

// Reads `home`/config.toml when it exists (missing file: all defaults). A key that is unknown or of
// the wrong type or range fails with "config.toml:LINE: key: problem".
Result<AgentOptions> LoadAgentOptions(const std::string& home);
// The same, from text (for tests).
Result<AgentOptions> ParseAgentOptions(const std::string& home, std::string_view toml_text,
                                       const std::string& filename);

}  // namespace kite::agent
