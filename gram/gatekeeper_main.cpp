// kite-gatekeeper: the site's front door (docs/protocol.md).
#include <signal.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>

#include "common/accept_guard.h"
#include "common/log.h"
#include "common/paths.h"
#include "credentials/certificate.h"
#include "gram/gatekeeper.h"

int main(int argc, char** argv) {
  CLI::App app{
      "kite-gatekeeper: authenticates grid clients (mutual TLS, X.509 proxies), maps them through "
      "the grid-mapfile and hands their requests to per-account kite-jobmanager processes"};
  kite::gram::GatekeeperOptions o;
  std::string listen = "127.0.0.1:2119", cert, key, log_file, log_level = "info", port_file;
  int commit_timeout = 600;
  double batch_poll = 1.0;
  app.add_option("--listen", listen, "ADDR:PORT to listen on (port 0: any free port)");
  app.add_option("--state-dir", o.state_dir, "directory for per-account job manager state")
      ->required();
  app.add_option("--cert", cert, "host certificate (PEM)")->required();
  app.add_option("--key", key, "host key (PEM, mode 0600)")->required();
  app.add_option("--ca-dir", o.ca_dir, "trusted CA directory (<hash>.0 files, CRLs)")->required();
  app.add_option("--gridmap", o.gridmap_path, "grid-mapfile (re-read when it changes)")->required();
  app.add_option("--batch", o.batch, "batch adapter for job managers (fork, slurm, sge)");
  app.add_option(
      "--batch-poll-interval", batch_poll,
      "seconds between a job manager's questions to the batch system (slurm: squeue, sge: qstat)");
  app.add_option("--contact-host", o.contact_host, "host name to put in job contacts");
  app.add_option("--threads", o.threads, "I/O threads (default 2)");
  app.add_option("--commit-timeout", commit_timeout,
                 "seconds a submitted job waits for its commit before the site forgets it");
  app.add_option("--max-connections-per-peer", o.max_connections_per_peer,
                 "open connections one client address may hold (0: no limit; default 256)");
  app.add_option("--site-attributes", o.site_attributes,
                 "file of 'Name = expression' ClassAd lines added to the site's info ad (e.g. a "
                 "Requirements for the jobs the site takes)")
      ->check(CLI::ExistingFile);
  app.add_option("--fork-limits", o.fork_limits,
                 "test aid, fork only: file of 'slots N' (0: drained) and 'start_delay S', read "
                 "again when it changes (docs/batch.md)");
  app.add_option("--port-file", port_file, "write the port listened on to this file");
  app.add_option("--log", log_file, "log file (default: stderr)");
  app.add_option("--log-level", log_level, "debug, info, warn, error");
  CLI11_PARSE(app, argc, argv);
  kite::InitLogging("kite-gatekeeper", log_file, log_level);
  spdlog::info("open-file limit {}", kite::RaiseOpenFileLimit());
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) {
    std::fprintf(stderr, "kite-gatekeeper: --listen wants ADDR:PORT\n");
    return 2;
  }
  o.listen_host = listen.substr(0, colon);
  o.port = static_cast<uint16_t>(std::atoi(listen.c_str() + colon + 1));
  o.commit_timeout = std::chrono::seconds(commit_timeout);
  o.batch_poll_interval = std::chrono::milliseconds(static_cast<int64_t>(batch_poll * 1000));
  o.jobmanager_path = kite::ProgramPath("kite-jobmanager");
  // Job managers run in their own directories: they get absolute paths.
  for (std::string* path : {&o.site_attributes, &o.fork_limits}) {
    if (!path->empty()) *path = std::filesystem::absolute(*path).string();
  }
  o.jobmanager_log_level = log_level;
  auto cred = kite::credentials::LoadCertificateAndKey(cert, key);
  if (!cred) {
    std::fprintf(stderr, "kite-gatekeeper: %s\n", cred.error().ToString().c_str());
    return 1;
  }
  o.host_credential = *cred;
  ::signal(SIGPIPE, SIG_IGN);
  // Signals are taken by sigwait below; the I/O threads inherit the blocked mask.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  auto gk = kite::gram::Gatekeeper::Create(std::move(o));
  if (!gk) {
    std::fprintf(stderr, "kite-gatekeeper: %s\n", gk.error().ToString().c_str());
    return 1;
  }
  if (auto st = (*gk)->Start(); !st) {
    std::fprintf(stderr, "kite-gatekeeper: %s\n", st.error().ToString().c_str());
    return 1;
  }
  spdlog::info("listening on {}:{}", listen.substr(0, colon), (*gk)->port());
  if (!port_file.empty()) {
    std::string tmp = port_file + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fprintf(f, "%u\n", (*gk)->port());
      std::fclose(f);
      std::rename(tmp.c_str(), port_file.c_str());
    }
  }
  int sig = 0;
  sigwait(&stop, &sig);
  spdlog::info("signal {}: stopping", sig);
  (*gk)->Stop();
  return 0;
}
