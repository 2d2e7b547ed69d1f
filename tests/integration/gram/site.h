// A throwaway grid site for integration tests: a test CA, host and user credentials, a
// grid-mapfile, and a real kite-gatekeeper process (which starts real kite-jobmanagers) on a
// loopback port, all in a temporary directory.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "credentials/ca.h"
#include "credentials/certificate.h"
#include "credentials/verify.h"
#include "gram/client.h"

namespace kite::gram::testing {

struct SiteOptions {
  std::string account = "root";  // what the user's DN maps to
  int commit_timeout = 600;
  bool fault_dir = true;           // give the daemons a KITE_FAULT_DIR
  std::string batch = "fork";      // the gatekeeper's --batch
  double batch_poll_interval = 1;  // its --batch-poll-interval (seconds)
  // "NAME=value" set in the gatekeeper's environment, replacing the test's own (e.g. SLURM_CONF,
  // PATH); the gatekeeper passes PATH and SLURM_CONF on to its job managers.
  std::vector<std::string> env;
  // Open files the gatekeeper may hold, soft and hard (0: as the test's own): as on an account
  // with a small limit, which the gatekeeper cannot raise.
  int nofile = 0;
};

class Site {
 public:
  explicit Site(const std::string& tag, SiteOptions options = {});
  ~Site();  // stops the gatekeeper and every job manager it started

  const std::string& dir() const { return dir_; }
  uint16_t port() const { return port_; }
  credentials::TestCa& ca() { return ca_; }
  const credentials::Credential& proxy() const { return proxy_; }
  const std::shared_ptr<const credentials::Verifier>& verifier() const { return verifier_; }
  std::string user_dn() const { return user_dn_; }
  std::string state_dir() const { return dir_ + "/state"; }
  std::string account_dir() const { return state_dir() + "/users/" + options_.account; }

  void StartGatekeeper();
  pid_t gatekeeper_pid() const { return gatekeeper_; }
  // Rewrites the grid-mapfile (the gatekeeper re-reads it when it changes).
  void WriteGridMap(const std::string& text);
  void StopGatekeeper();
  // The running job manager's pid (0 when none is running).
  pid_t JobManagerPid() const;
  void KillJobManager();  // kill -9, then waits until its lock is free

  // Arms a fault point of the daemons (see gram/fault.h); true once it has fired.
  void Arm(const std::string& point) const;
  bool Fired(const std::string& point) const;

  std::unique_ptr<Client> MakeClient(const credentials::Credential& cred) const;
  std::unique_ptr<Client> MakeClient() const { return MakeClient(proxy_); }

  // A /bin/sh job running `script`.
  static JobDescription ShellJob(const std::string& script);
  // Polls Status until `state` (or a terminal state), up to `seconds`.
  static Result<JobStatus> WaitFor(Client& c, const std::string& id, JobState state,
                                   double seconds = 20);

 private:
  SiteOptions options_;
  std::string dir_;
  credentials::TestCa ca_;
  credentials::Credential proxy_;
  std::shared_ptr<const credentials::Verifier> verifier_;
  std::string user_dn_;
  pid_t gatekeeper_ = 0;
  uint16_t port_ = 0;
};

}  // namespace kite::gram::testing
