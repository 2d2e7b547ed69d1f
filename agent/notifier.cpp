// Job notifications.
#include "agent/notifier.h"

#include <spdlog/spdlog.h>

#include <ctime>

#include "agent/queue.h"
#include "common/clock.h"
#include "common/files.h"

namespace kite::agent {
namespace {

bool UserHold(int code) {
  return code == kHoldUserRequest || code == kHoldSubmittedOnHold;
}

// A value shown on one line of the body.
std::string OneLine(std::string s) {
  for (auto& c : s) {
    if (c == '\r' || c == '\n' || c == '\t') c = ' ';
  }
  return s;
}

std::string PathIn(const classad::ClassAd& ad, const char* attr) {
  auto v = ad.EvaluateString(attr);
  if (!v || v->empty() || *v == "/dev/null") return "";
  return JoinPath(ad.EvaluateString("Iwd").value_or(""), *v);
}

}  // namespace

std::string NotificationReason(const classad::ClassAd& ad, int status) {
  int64_t n = ad.EvaluateInt("JobNotification").value_or(kNotifyNever);
  if (n == kNotifyNever) return "";
  bool complete = n == kNotifyComplete || n == kNotifyAlways;
  bool error = n == kNotifyError || n == kNotifyAlways;
  if (status == kCompleted) {
    bool signaled = ad.EvaluateBool("ExitBySignal").value_or(false);
    bool failed = signaled || ad.EvaluateInt("ExitCode").value_or(0) != 0;
    if (complete || (error && failed)) return "completed";
    return "";
  }
  if (status == kHeld && error) {
    int code = static_cast<int>(ad.EvaluateInt("HoldReasonCode").value_or(0));
    if (UserHold(code)) return "";
    if (code == kHoldCorruptedCredential && ad.EvaluateString(kCredentialHoldAttr)) return "";
    return "held";
  }
  return "";
}

std::vector<std::string> JobRecipients(const classad::ClassAd& ad, const std::string& uid_domain) {
  if (auto user = ad.EvaluateString("NotifyUser"); user && !user->empty()) {
    auto list = ParseAddressList(*user);
    if (list) return *list;
    spdlog::warn("mail: notify_user '{}' is not usable ({}); mailing the job's owner instead",
                 *user, list.error().message());
  }
  std::string owner = ad.EvaluateString("Owner").value_or("");
  auto addr = ParseMailAddress(owner + "@" + uid_domain);
  if (!addr) return {};
  return {*addr};
}

MailMessage JobMessage(const classad::ClassAd& ad, JobKey key, const std::string& reason,
                       const std::string& uid_domain) {
  MailMessage m;
  m.to = JobRecipients(ad, uid_domain);
  std::string id = JobIdString(key);
  std::string cmd = OneLine(ad.EvaluateString("Cmd").value_or(""));
  std::string args =
      OneLine(ad.EvaluateString("Arguments").value_or(ad.EvaluateString("Args").value_or("")));
  std::string what;
  std::string body;
  if (reason == "completed") {
    if (ad.EvaluateBool("ExitBySignal").value_or(false)) {
      int64_t sig = ad.EvaluateInt("ExitSignal").value_or(0);
      what = "was killed by signal " + std::to_string(sig);
      body += "  Status:       Completed (killed by signal " + std::to_string(sig) + ")\n";
    } else {
      int64_t code = ad.EvaluateInt("ExitCode").value_or(0);
      what = "exited with code " + std::to_string(code);
      body += "  Status:       Completed\n";
      body += "  Exit code:    " + std::to_string(code) + "\n";
    }
    if (auto t = ad.EvaluateInt("CompletionDate"); t && *t > 0)
      body += "  Completed at: " + FormatUtc(*t) + "\n";
    if (auto w = ad.EvaluateReal("RemoteWallClockTime"))
      body += "  Run time:     " + FormatSeconds(static_cast<int64_t>(*w)) + "\n";
    if (auto file = ad.EvaluateString("DAGFile")) {
      // A DAG's job: how its nodes ended, and where the runner's log and rescue DAG are.
      auto n = [&](const char* name) { return std::to_string(ad.EvaluateInt(name).value_or(0)); };
      body += "  DAG nodes:    " + n("DAG_NodesDone") + " done, " + n("DAG_NodesFailed") +
              " failed, of " + n("DAG_NodesTotal") + "\n";
      body += "  DAG log:      " + *file + ".dagman.out\n";
    }
  } else {
    std::string why = OneLine(ad.EvaluateString("HoldReason").value_or("(no reason given)"));
    what = "is held: " + why;
    body += "  Status:       Held\n";
    body += "  Hold reason:  " + why + "\n";
    body += "  Hold code:    " + std::to_string(ad.EvaluateInt("HoldReasonCode").value_or(0)) +
            " (subcode " + std::to_string(ad.EvaluateInt("HoldReasonSubCode").value_or(0)) + ")\n";
  }
  if (what.size() > 100) what = what.substr(0, 97) + "...";
  m.subject = "Kite job " + id + " " + what;
  std::string out = PathIn(ad, "Out"), err = PathIn(ad, "Err"), log = PathIn(ad, "UserLog");
  std::string text = "Job " + id + " " + (reason == "completed" ? "has completed" : "is held") +
                     ".\n\n  Job:          " + id + "\n  Command:      " + cmd +
                     (args.empty() ? "" : " " + args) + "\n" + body;
  text += "  Directory:    " + ad.EvaluateString("Iwd").value_or("") + "\n";
  if (!out.empty()) text += "  Output:       " + out + "\n";
  if (!err.empty()) text += "  Error:        " + err + "\n";
  if (!log.empty()) text += "  Event log:    " + log + "\n";
  if (reason == "held") {
    text += "\nOnce the cause is fixed, `kite release " + id + "` lets the job run again.\n";
  }
  text +=
      "\n(You get this mail because the job was submitted with notification = " +
      std::string(ad.EvaluateInt("JobNotification").value_or(0) == kNotifyAlways  ? "Always"
                  : ad.EvaluateInt("JobNotification").value_or(0) == kNotifyError ? "Error"
                                                                                  : "Complete") +
      ".)\n";
  m.body = std::move(text);
  return m;
}

Notifier::Notifier(JobQueue& queue, Mailer* mailer, std::string uid_domain)
    : queue_(queue), mailer_(mailer), uid_domain_(std::move(uid_domain)) {}

void Notifier::OnStatusChange(const Job& job, bool leaving) {
  if (!enabled_) return;
  if (!leaving) {
    if (job.status == kCompleted || job.status == kHeld) {
      pending_[job.key] = Pending{job.status, std::nullopt};
    } else {
      pending_.erase(job.key);
    }
    return;
  }
  auto it = pending_.find(job.key);
  if (it == pending_.end()) return;
  // The job is about to leave the queue: its ad is complete now, and gone after the flush.
  std::string reason = NotificationReason(job.ad, it->second.status);
  if (reason.empty()) {
    pending_.erase(it);
    return;
  }
  it->second.message = JobMessage(job.ad, job.key, reason, uid_domain_);
}

void Notifier::OnFlushed() {
  if (pending_.empty()) return;
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [key, p] : pending) {
    std::optional<MailMessage> m = std::move(p.message);
    if (!m) {
      const Job* j = queue_.Find(key);
      if (!j || j->status != p.status) continue;
      std::string reason = NotificationReason(j->ad, j->status);
      if (reason.empty()) continue;
      m = JobMessage(j->ad, key, reason, uid_domain_);
    }
    if (m->to.empty()) {
      spdlog::warn("mail: no address to notify about job {}", JobIdString(key));
      continue;
    }
    if (!mailer_) {
      spdlog::info("mail: not sent (no [mail] smtp_url): {}", m->subject);
      continue;
    }
    if (auto st = mailer_->Send(*m); !st)
      spdlog::error("mail: cannot queue '{}': {}", m->subject, st.error().ToString());
  }
}

}  // namespace kite::agent
