// The job manager's options cross from the gatekeeper to kite-jobmanager as flags: every field
// that is a flag survives ToArgs and AddFlags unchanged, and every flag is one ToArgs writes.
#include "gram/job_manager_options.h"

#include <gtest/gtest.h>
#include <CLI/CLI.hpp>

namespace kite::gram {
namespace {

using std::chrono::milliseconds;

// What kite-jobmanager's main makes of `args`.
JobManagerOptions Parse(const std::vector<std::string>& args) {
  CLI::App app;
  JobManagerOptions o;
  o.AddFlags(app);
  std::vector<const char*> argv = {"kite-jobmanager"};
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return o;
}

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
    EXPECT_EQ(Parse(o.ToArgs()), o);
  }
}

TEST(JobManagerOptions, EveryFlagIsWritten) {
  CLI::App app;
  JobManagerOptions o = Changed();
  o.AddFlags(app);
  auto args = o.ToArgs();
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_name() == "--help") continue;
    EXPECT_NE(std::find(args.begin(), args.end(), opt->get_name()), args.end())
        << opt->get_name() << " is a flag ToArgs never writes";
  }
}

}  // namespace
}  // namespace kite::gram
