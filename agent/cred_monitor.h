// The agent's credential monitor: watches the proxy file of every queued job.
//
// Every [credentials] check_interval it looks at each proxy file that a job not yet finished names
// in x509userproxy (a stat; the file is read again only when its inode, mtime, size or ctime
// changed) and then, per proxy:
//   - keeps the jobs' proxy attributes (x509UserProxyExpiration, x509userproxysubject, ...) equal
//     to the file's;
//   - less than min_lifetime left (or expired): asks the renewal hook (MyProxy) first; otherwise
//     holds every idle or running job of the proxy (HoldReasonCode 4, CorruptedCredential;
//     CredentialHoldFile names the file) and sends one e-mail per proxy and expiry listing them
//     with the command that fixes it;
//   - more than min_lifetime left: releases the jobs it held for this file (never another hold);
//   - a credential_alarm threshold (config or the jobs' CredentialAlarm) reached: one reminder per
//     threshold, proxy and expiry.
// What was mailed is kept in $KITE_HOME/credentials.json, so a restarted agent mails nothing twice.
//
// Runs on the agent's thread; reading a proxy file is a small local read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/job.h"
#include "agent/mail_options.h"
#include "common/error.h"

namespace kite::agent {

class JobQueue;
class Mailer;

// What the monitor knows about one proxy file.
struct ProxyStatus {
  std::string path;
  bool valid = false;           // read and parsed at least once (the values below are meaningful)
  std::string error;            // the last read's failure, empty when it succeeded
  std::string untrusted;        // why the CA directory in use does not trust it; empty: it does
  int64_t not_after = 0;        // the chain's earliest notAfter, seconds since the epoch
  int64_t not_before = 0;       // the leaf's notBefore
  std::string subject;          // the leaf's subject
  std::string identity;         // the end entity's subject (HTCondor's x509userproxysubject)
  std::vector<JobKey> jobs;     // queued jobs using it (as of the last check)
  std::vector<int64_t> alarms;  // thresholds in force for it, seconds
  std::vector<int64_t> alarms_sent;  // those already mailed for this expiry
  bool hold_mailed = false;          // the "jobs held" mail for this expiry went out
  // File identity at the last read.
  dev_t dev = 0;
  ino_t ino = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  off_t size = -1;
};

// The MyProxy hook: called on the agent's thread when a proxy has less than min_lifetime left (and
// is not expired yet), before its jobs are held. Answer kRenewing when a renewal was started: the
// monitor then holds nothing this round and looks again next check; the renewal's job is to write
// the new proxy to `path` (atomically), which the monitor then picks up like any refresh. Answer
// kHold to hold the jobs now. An expired proxy's jobs are held whatever the hook says.
struct RenewalRequest {
  std::string path;
  int64_t not_after = 0;
  int64_t time_left = 0;  // seconds
  std::string identity;
  std::vector<JobKey> jobs;
};
enum class RenewalAnswer { kHold, kRenewing };
using RenewalHook = std::function<RenewalAnswer(const RenewalRequest&)>;

class CredentialMonitor {
 public:
  // How the monitor acts on jobs (the agent's hold stops a running local job).
  struct Actions {
    std::function<void(Job&, const std::string& reason, int code, int subcode)> hold;
    std::function<void(Job&, const std::string& reason)> release;
    // Commits the queue's pending changes now; false when that failed (the monitor then mails
    // nothing about them this round).
    std::function<bool()> commit;
  };
  // `mailer` may be null: mail is then only logged.
  CredentialMonitor(JobQueue& queue, CredentialOptions options, std::string state_path,
                    Mailer* mailer, std::string uid_domain, Actions actions);

  // Reads what earlier agents mailed. A missing file is fine; a damaged one is logged and ignored.
  void LoadState();
  // One round over every proxy with queued jobs.
  void Check();
  // Seconds now (tests of the library give their own clock).
  void SetClock(std::function<double()> now) { now_ = std::move(now); }
  void SetRenewalHook(RenewalHook hook) { renew_ = std::move(hook); }

  const CredentialOptions& options() const { return options_; }
  // Every proxy seen, by path (for the REST endpoint's /api/v1/credentials).
  const std::map<std::string, ProxyStatus>& proxies() const { return proxies_; }
  // Whether the last look found the proxy unusable (no gridmanager is started for it then).
  bool Unusable(const std::string& path) const {
    auto it = proxies_.find(path);
    return it != proxies_.end() && (!it->second.error.empty() || !it->second.untrusted.empty());
  }

 private:
  bool Refresh(ProxyStatus& p);  // re-reads the file when it changed; true when it did
  void UpdateAttributes(const ProxyStatus& p, const std::vector<Job*>& jobs);
  void HoldUnusable(const ProxyStatus& p, const std::vector<Job*>& jobs);
  void ReleaseUsable(const ProxyStatus& p, const std::vector<Job*>& jobs);
  void MailAlarm(ProxyStatus& p, const std::vector<Job*>& jobs, int64_t left);
  void MailHeld(ProxyStatus& p, const std::vector<Job*>& jobs);
  void SaveState();
  std::vector<std::string> Recipients(const std::vector<Job*>& jobs) const;
  void Mail(const std::vector<Job*>& jobs, const std::string& subject, const std::string& body);

  JobQueue& queue_;
  CredentialOptions options_;
  std::string state_path_;
  Mailer* mailer_;
  std::string uid_domain_;
  Actions actions_;
  RenewalHook renew_;
  std::function<double()> now_;
  std::map<std::string, ProxyStatus> proxies_;
};

// The reason a job is held for: names the file and the expiry time.
std::string CredentialHoldReason(const std::string& path, int64_t not_after, int64_t now,
                                 double min_lifetime);
// The command that makes a new proxy in `path` ("kite proxy init --out PATH --valid HH:MM").
std::string ProxyInitCommand(const std::string& path, int64_t lifetime);
// The hold reason for the jobs of a proxy that cannot be used at all (`error` says why).
std::string UnusableProxyReason(const std::string& path, const std::string& error);

}  // namespace kite::agent
