// The gridmanager's options cross from the agent to kite-gridmanager as flags: every field
// survives ToArgs and AddFlags unchanged, and every flag AddFlags declares is one ToArgs writes.
#include "gridmanager/options.h"

#include <gtest/gtest.h>
#include <CLI/CLI.hpp>

namespace kite::gridmanager {
namespace {

// What kite-gridmanager's main makes of `args`.
GridManagerOptions Parse(const std::vector<std::string>& args) {
  CLI::App app;
  GridManagerOptions o;
  o.AddFlags(app);
  std::vector<const char*> argv = {"kite-gridmanager"};
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return o;
}

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
    EXPECT_EQ(Parse(o.ToArgs()), o);
  }
}

TEST(GridManagerOptions, EveryFlagIsWritten) {
  CLI::App app;
  GridManagerOptions o = Changed();
  o.AddFlags(app);
  auto args = o.ToArgs();
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_name() == "--help") continue;
    EXPECT_NE(std::find(args.begin(), args.end(), opt->get_name()), args.end())
        << opt->get_name() << " is a flag ToArgs never writes";
  }
}

}  // namespace
}  // namespace kite::gridmanager
