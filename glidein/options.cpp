// The startd's flags, written by whoever starts it and read by kite-startd.
#include "glidein/options.h"

#include <CLI/CLI.hpp>

#include "common/strings.h"

namespace kite::glidein {

std::vector<std::string> StartdOptions::ToArgs() const {
  return {"--agent",
          agent,
          "--name",
          name,
          "--slots",
          std::to_string(slots),
          "--cpus-per-slot",
          std::to_string(cpus_per_slot),
          "--memory",
          std::to_string(memory_mib),
          "--disk",
          std::to_string(disk_kib),
          "--work",
          work,
          "--lifetime",
          ExactNumber(lifetime),
          "--idle-timeout",
          ExactNumber(idle_timeout),
          "--agent-gone-timeout",
          ExactNumber(agent_gone_timeout),
          "--start",
          start,
          "--suspend",
          policy.suspend,
          "--continue",
          policy.cont,
          "--preempt",
          policy.preempt,
          "--kill",
          policy.kill,
          "--max-job-retirement-time",
          policy.retirement,
          "--periodic-checkpoint",
          policy.periodic_checkpoint,
          "--resource",
          resource,
          "--kill-grace",
          ExactNumber(kill_grace),
          "--update-interval",
          ExactNumber(update_interval),
          "--proxy",
          proxy,
          "--ca-dir",
          ca_dir,
          "--agent-identity",
          agent_identity,
          "--credential",
          credential,
          "--log",
          log_file,
          "--log-level",
          log_level};
}

void StartdOptions::AddFlags(CLI::App& app) {
  app.add_option("--agent", agent, "the agent to dial: unix:/path/to/pool.sock or tls:HOST:PORT")
      ->required();
  app.add_option("--name", name, "the startd's name (default: the host name); slots: slotN@NAME");
  app.add_option("--slots", slots, "slots to advertise")->check(CLI::Range(1, 1024));
  app.add_option("--cpus-per-slot", cpus_per_slot, "Cpus of each slot")->check(CLI::Range(1, 4096));
  app.add_option("--memory", memory_mib, "MiB for all slots, split evenly (default: MemTotal)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--disk", disk_kib, "KiB for all slots, split evenly (default: free in --work)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--work", work, "directory for the runs' sandboxes")->required();
  app.add_option("--lifetime", lifetime, "seconds until the startd leaves (0: no end)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--idle-timeout", idle_timeout, "seconds without a run before leaving (0: never)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--agent-gone-timeout", agent_gone_timeout,
                 "seconds without the agent before leaving (0: never); running jobs are vacated")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--start", start, "the owner's START expression (ClassAd; TARGET is the job)");
  app.add_option("--suspend", policy.suspend, "SUSPEND: while true, a running job is stopped");
  app.add_option("--continue", policy.cont, "CONTINUE: when true, a suspended job goes on");
  app.add_option("--preempt", policy.preempt,
                 "PREEMPT: when true, the job is vacated (after its retirement time)");
  app.add_option("--kill", policy.kill, "KILL: when true while vacating, SIGKILL at once");
  app.add_option("--max-job-retirement-time", policy.retirement,
                 "MAXJOBRETIREMENTTIME: seconds a preempted job may still run (expression)");
  app.add_option("--periodic-checkpoint", policy.periodic_checkpoint,
                 "PERIODIC_CHECKPOINT: when true, a job with transparent checkpoints takes one");
  app.add_option("--resource", resource, "the grid resource of this glide-in (GlideinResource)");
  app.add_option("--kill-grace", kill_grace, "seconds from SIGTERM to SIGKILL when vacating")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--update-interval", update_interval, "seconds between slot ad updates")
      ->check(CLI::PositiveNumber);
  app.add_option("--proxy", proxy,
                 "tls: the proxy to present, re-read on each dial (default: $X509_USER_PROXY)");
  app.add_option("--ca-dir", ca_dir, "tls: trusted CAs (default: $X509_CERT_DIR)");
  app.add_option("--agent-identity", agent_identity,
                 "tls: the DN the agent must speak for (required with tls:)");
  app.add_option("--credential", credential,
                 "the pool credential file the agent issued (read again on every dial)");
  app.add_option("--log", log_file, "log file (default: stderr)");
  app.add_option("--log-level", log_level, "debug, info, warn, error");
}

}  // namespace kite::glidein
