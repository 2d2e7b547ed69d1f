// The broker's settings from config.toml ([broker] and each [[resource]]; docs/broker.md): plain
// data, apart from the broker itself, so that the configuration does not depend on it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kite::agent {

// One [[resource]] of config.toml.
struct ResourceSetting {
  std::string grid_resource;  // "TYPE CONTACT", a grid type's (grid/grid_type.h)
  // The user's own attributes for the site ad ("cost = 2.0"): name and ClassAd literal text.
  std::vector<std::pair<std::string, std::string>> attributes;
};

// [broker] of config.toml, and the resources.
struct BrokerSettings {
  std::vector<ResourceSetting> resources;
  double refresh_interval = 60;  // seconds between `info` requests to a site
  int max_pending_per_site =
      16;  // Kite's jobs waiting at a site at once (more when it has more free CPUs)
  double max_queue_wait = 1800;  // seconds a job may wait at a site before it is moved (0: never)
  double info_timeout = 20;      // seconds an `info` request may take
  std::string ca_dir;            // trusted CAs ("" = as the Globus tools)
};

}  // namespace kite::agent
