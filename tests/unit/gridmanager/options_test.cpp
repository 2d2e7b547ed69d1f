// The gridmanager's options cross from the agent to kite-gridmanager as flags: every field
// survives ToArgs and AddFlags unchanged, and every flag AddFlags declares is one ToArgs writes.
#include "gridmanager/options.h"

#include <gtest/gtest.h>

#include "tests/fixtures/flags.h"

namespace kite::gridmanager {
namespace {

GridManagerOptions Changed() {
  GridManagerOptions o;
  o.home = "/home/u/.kite";
  o.proxy = "/tmp/x509up_u1000";
  o.ca_dir = "/etc/grid-security/certificates";
  o.listen_host = "0.0.0.0";
  o.probe_interval = 0.1;
  o.max_resubmits = 0;
  o.max_jobs_per_resource = 12345;
  o.max_requests_per_resource = 2;
  o.threads = 3;
  o.linger = 1.0 / 3;
  o.log_file = "/home/u/.kite/gridmanager.log";
  o.log_level = "debug";
  return o;
}

TEST(GridManagerOptions, EveryFieldSurvivesTheFlags) {
  GridManagerOptions defaults;
  defaults.proxy = "/tmp/p";  // required
  for (const GridManagerOptions& o : {defaults, Changed()}) {
    kite::testing::ExpectRoundTrip(o);
  }
}

TEST(GridManagerOptions, EveryFlagIsWritten) {
  kite::testing::ExpectEveryFlagWritten(Changed());
}

}  // namespace
}  // namespace kite::gridmanager
