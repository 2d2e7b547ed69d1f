// The job manager's flags, written by the gatekeeper and read by kite-jobmanager. Durations
// travel in seconds (fractions allowed).
#include "gram/job_manager_options.h"

#include <CLI/CLI.hpp>

#include <cmath>

#include "common/strings.h"

namespace kite::gram {
namespace {

std::string Seconds(std::chrono::milliseconds d) {
  return ExactNumber(static_cast<double>(d.count()) / 1000);
}

// A flag in seconds that sets `*into`.
void AddSeconds(CLI::App& app, const std::string& name, std::chrono::milliseconds* into,
                const std::string& help) {
  app.add_option_function<double>(
      name, [into](double s) { *into = std::chrono::milliseconds(std::llround(s * 1000)); }, help);
}

}  // namespace

std::vector<std::string> JobManagerOptions::ToArgs() const {
  return {"--state-dir",
          state_dir,
          "--ca-dir",
          ca_dir,
          "--batch",
          batch,
          "--account",
          account,
          "--commit-timeout",
          std::to_string(commit_timeout.count()),
          "--poll-interval",
          Seconds(poll_interval),
          "--stream-interval",
          Seconds(stream_interval),
          "--batch-poll-interval",
          Seconds(batch_poll_interval),
          "--fork-limits",
          fork_limits,
          "--site-attributes",
          site_attributes,
          "--log",
          log_file,
          "--log-level",
          log_level};
}

void JobManagerOptions::AddFlags(CLI::App& app) {
  app.add_option("--state-dir", state_dir, "this account's directory: jobs.db, jobs/, jm.sock")
      ->required();
  app.add_option("--ca-dir", ca_dir, "trusted CA directory")->required();
  app.add_option("--batch", batch, "batch adapter (fork, slurm, sge)");
  app.add_option("--account", account, "the mapped account (reported by ping)");
  app.add_option_function<int64_t>(
      "--commit-timeout", [this](int64_t s) { commit_timeout = std::chrono::seconds(s); },
      "seconds before an uncommitted job is forgotten");
  AddSeconds(app, "--poll-interval", &poll_interval,
             "seconds between looks at the batch adapter's jobs");
  AddSeconds(app, "--stream-interval", &stream_interval,
             "seconds between sends of running jobs' output");
  AddSeconds(app, "--batch-poll-interval", &batch_poll_interval,
             "seconds between questions to the batch system's daemons (slurm: squeue, sge: qstat)");
  app.add_option("--fork-limits", fork_limits,
                 "fork only, a test aid: file of 'slots N' and 'start_delay S' (docs/batch.md)");
  app.add_option("--site-attributes", site_attributes,
                 "file of 'Name = expression' lines added to the site's info ad");
  app.add_option("--log", log_file, "log file (default: stderr)");
  app.add_option("--log-level", log_level, "debug, info, warn, error");
}

}  // namespace kite::gram
