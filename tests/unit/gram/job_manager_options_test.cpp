// The job manager's options cross from the gatekeeper to kite-jobmanager as flags: every field
// that is a flag survives ToArgs and AddFlags unchanged, and every flag is one ToArgs writes.
#include "gram/job_manager_options.h"

#include <gtest/gtest.h>

#include "tests/fixtures/flags.h"

namespace kite::gram {
namespace {

using std::chrono::milliseconds;

JobManagerOptions Changed() {
  JobManagerOptions o;
  o.state_dir = "/var/lib/kite/users/alice";
  o.ca_dir = "/etc/grid-security/certificates";
  o.batch = "slurm";
  o.account = "alice";
  o.commit_timeout = std::chrono::seconds(1);
  o.poll_interval = milliseconds(7);
  o.stream_interval = milliseconds(1234);
  o.batch_poll_interval = milliseconds(1);
  o.log_file = "/var/lib/kite/users/alice/jobmanager.log";
  o.log_level = "debug";
  return o;
}

TEST(JobManagerOptions, EveryFlagFieldSurvivesTheFlags) {
  JobManagerOptions defaults;
  defaults.state_dir = "/s";  // required
  defaults.ca_dir = "/ca";    // required
  for (const JobManagerOptions& o : {defaults, Changed()}) {
    kite::testing::ExpectRoundTrip(o);
  }
}

TEST(JobManagerOptions, EveryFlagIsWritten) {
  kite::testing::ExpectEveryFlagWritten(Changed());
}

}  // namespace
}  // namespace kite::gram
