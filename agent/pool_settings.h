// The pool's settings from config.toml ([pool]; docs/pool.md): plain data, so that the pool's
// parts take only these and the configuration does not depend on them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "glidein/options.h"

namespace kite::agent {

inline constexpr std::string_view kDefaultLocalStart =
    "KeyboardIdle > 15 * 60 || (LoadAvg - TotalCondorLoadAvg) < TotalCpus";

// [pool] in config.toml (docs/pool.md).
struct PoolSettings {
  // Slots of this desktop's own startd: -1 (the default) one per core; 0 runs none.
  int local_slots = -1;
  // The local startd's START expression (the owner's policy). By default jobs start while the
  // owner is away from the keyboard (15 minutes), or while the load not caused by Kite's own
  // jobs leaves the machine's cores unsaturated.
  std::string local_start = std::string(kDefaultLocalStart);
  // The rest of its owner's policy (SUSPEND, CONTINUE, PREEMPT, KILL, MAXJOBRETIREMENTTIME):
  // HTCondor's defaults, never suspend or preempt.
  glidein::OwnerPolicy local_policy;
  // Where glide-ins' startds dial in over mutual TLS (agent/pool_tls.h): "HOST:PORT", port 0 =
  // any free port (the bound address goes to $KITE_HOME/pool.address); "" = no TLS listener.
  std::string listen = "127.0.0.1:0";
  // `listen` may be an address other hosts reach (as [rest] allow_remote).
  bool allow_remote = false;
  // The credential the listener presents, and whose identity startds must have: "" = the user's
  // proxy ($X509_USER_PROXY, else /tmp/x509up_u<uid>).
  std::string proxy;
  // Identities (Globus-form DNs) accepted besides the proxy's own, normalised when read.
  std::vector<std::string> allow_identities;
  // Whether a transparent checkpoint's image made at a glide-in (a site) may be restored on this
  // desktop's own slots. An image is the program's whole memory: whoever runs the site could
  // have written it. Off: such a job runs on glide-ins only while that checkpoint is its latest.
  bool local_restore_site_checkpoints = false;
};

}  // namespace kite::agent
