// The startd's options cross from whoever starts it (the agent, a glide-in's bootstrap) as flags:
// every field survives ToArgs and AddFlags unchanged, and every flag AddFlags declares is one
// ToArgs writes.
#include "glidein/options.h"

#include <gtest/gtest.h>

#include "tests/fixtures/flags.h"

namespace kite::glidein {
namespace {

StartdOptions Changed() {
  StartdOptions o;
  o.agent = "tls:agent.example.org:9618";
  o.name = "glidein-7@node12";
  o.slots = 4;
  o.cpus_per_slot = 2;
  o.memory_mib = 8192;
  o.disk_kib = 1 << 20;
  o.work = "/scratch/kite work";
  o.lifetime = 7200;
  o.idle_timeout = 1.0 / 3;
  o.agent_gone_timeout = 60;
  o.start = "TARGET.RequestCpus <= 2 && LoadAvg < 0.5";
  o.resource = "kite 127.0.0.1:2119/slurm";
  o.kill_grace = 0;
  o.update_interval = 0.25;
  o.proxy = "/tmp/glidein proxy.pem";
  o.ca_dir = "/etc/grid-security/certificates";
  o.agent_identity = "/O=Grid/OU=Kite/CN=Jane Doe";
  o.credential = "/scratch/glidein-7.credential";
  o.log_file = "/scratch/startd.log";
  o.log_level = "debug";
  return o;
}

TEST(StartdOptions, EveryFieldSurvivesTheFlags) {
  StartdOptions defaults;
  defaults.agent = "unix:/home/u/.kite/pool.sock";  // required
  defaults.work = "/home/u/.kite/startd";           // required
  for (const StartdOptions& o : {defaults, Changed()}) {
    kite::testing::ExpectRoundTrip(o);
  }
}

TEST(StartdOptions, EveryFlagIsWritten) {
  kite::testing::ExpectEveryFlagWritten(Changed());
}

}  // namespace
}  // namespace kite::glidein
