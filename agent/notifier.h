// Job notifications (HTCondor's `notification` / `notify_user`): e-mail when a job completes, fails
// or is held, sent only once the change that calls for it is committed.
//
// The queue's status hook records which jobs changed; after the next successful flush each one is
// judged against its JobNotification and, when it calls for mail, a message goes to the mailer's
// outbox. Only changes made by this agent are mailed: loading the queue at start-up mails nothing,
// so a restarted agent never mails a change twice (what is in the outbox is still sent).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/job.h"
#include "agent/mailer.h"

namespace kite::agent {

class JobQueue;

// HTCondor's JobNotification values.
enum Notification : int {
  kNotifyNever = 0,
  kNotifyAlways = 1,
  kNotifyComplete = 2,
  kNotifyError = 3
};

// The attribute the credential monitor puts on the jobs it holds: the proxy file it held them for.
inline constexpr const char* kCredentialHoldAttr = "CredentialHoldFile";
// The proxy file a grid job was held for because it could not be used at all (see
// CredentialMonitor); released when the file can be used again.
inline constexpr const char* kUnusableProxyHoldAttr = "UnusableProxyHoldFile";

// What a job's state calls for under its JobNotification (`status` is its JobStatus): "" for no
// mail. Complete: every completion. Error: completion by a signal or with a non-zero exit code, or
// a hold that is neither the user's nor the credential monitor's (that one mails per proxy).
// Always: both.
std::string NotificationReason(const classad::ClassAd& ad, int status);

// Where mail about a job goes: NotifyUser (one or more addresses, comma-separated), or, when it is
// unset or not a valid address, Owner@uid_domain as HTCondor does.
std::vector<std::string> JobRecipients(const classad::ClassAd& ad, const std::string& uid_domain);

// The message for a job in its current state (`reason` from NotificationReason).
MailMessage JobMessage(const classad::ClassAd& ad, JobKey key, const std::string& reason,
                       const std::string& uid_domain);

class Notifier {
 public:
  // `mailer` may be null (no [mail] smtp_url): what would be mailed is only logged.
  Notifier(JobQueue& queue, Mailer* mailer, std::string uid_domain);

  // Turned on once the queue is loaded.
  void Enable() { enabled_ = true; }
  void OnStatusChange(const Job& job, bool leaving);
  void OnFlushed();

 private:
  struct Pending {
    int status = 0;
    std::optional<MailMessage> message;  // built when the job left the queue before the flush
  };
  JobQueue& queue_;
  Mailer* mailer_;
  std::string uid_domain_;
  bool enabled_ = false;
  std::map<JobKey, Pending> pending_;
};

}  // namespace kite::agent
