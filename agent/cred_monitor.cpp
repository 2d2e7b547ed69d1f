// The credential monitor.
#include "agent/cred_monitor.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstring>
#include <ctime>

#include "agent/mailer.h"
#include "agent/notifier.h"
#include "agent/queue.h"
#include "classad/expr.h"
#include "common/clock.h"
#include "common/files.h"
#include "credentials/certificate.h"
#include "credentials/proxy.h"
#include "credentials/verify.h"

namespace kite::agent {
namespace {

namespace cred = kite::credentials;

int64_t Epoch(cred::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

bool Queued(const Job& j) {
  return j.status == kIdle || RunUnderWay(j.status) || j.status == kHeld;
}

bool HeldByMonitor(const Job& j, const std::string& path) {
  return j.status == kHeld &&
         j.ad.EvaluateInt("HoldReasonCode").value_or(0) == kHoldCorruptedCredential &&
         j.ad.EvaluateString(kCredentialHoldAttr).value_or("") == path;
}

// The job's own credential_alarm: one duration (seconds) or a list of them.
void JobAlarms(const Job& j, std::vector<int64_t>* out) {
  classad::Value v = j.ad.Evaluate("CredentialAlarm");
  if (v.IsNumber()) {
    out->push_back(static_cast<int64_t>(v.AsNumber()));
  } else if (v.IsList()) {
    for (auto& e : v.AsList()) {
      if (e.IsNumber()) out->push_back(static_cast<int64_t>(e.AsNumber()));
    }
  }
}

}  // namespace

std::string CredentialHoldReason(const std::string& path, int64_t not_after, int64_t now,
                                 double min_lifetime) {
  if (not_after <= now) {
    return "The proxy " + path + " expired at " + FormatUtc(not_after) +
           "; run `kite proxy init` to renew it and the job is released by itself";
  }
  return "The proxy " + path + " expires at " + FormatUtc(not_after) + ", in " +
         FormatSeconds(not_after - now) + ": too soon for the job, which needs at least " +
         FormatSeconds(static_cast<int64_t>(min_lifetime)) +
         " ([credentials] min_lifetime); run `kite proxy init` to renew it and the job is "
         "released by itself";
}

std::string UnusableProxyReason(const std::string& path, const std::string& error) {
  bool trust = error.rfind("not trusted by the CA directory", 0) == 0;
  std::string fix =
      trust ? "set X509_CERT_DIR (for the agent: `X509_CERT_DIR=DIR kite agent start`) to a "
              "directory holding the certificate of the CA that issued it, or make the proxy "
              "with a certificate that CA issued"
            : "run `kite proxy init --out " + path + "` (or fix the file)";
  return "The proxy " + path + " cannot be used: " + error + "; " + fix +
         ", and the job is released by itself";
}

std::string ProxyInitCommand(const std::string& path, int64_t lifetime) {
  // As long as the proxy it replaces, and at least the usual 12 hours.
  int64_t hours = std::max<int64_t>(12, (lifetime + 3599) / 3600);
  char valid[32];
  std::snprintf(valid, sizeof valid, "%lld:00", static_cast<long long>(hours));
  return "kite proxy init --out " + path + " --valid " + valid;
}

CredentialMonitor::CredentialMonitor(JobQueue& queue, CredentialOptions options,
                                     std::string state_path, Mailer* mailer, std::string uid_domain,
                                     Actions actions)
    : queue_(queue),
      options_(std::move(options)),
      state_path_(std::move(state_path)),
      mailer_(mailer),
      uid_domain_(std::move(uid_domain)),
      actions_(std::move(actions)),
      now_(WallNow) {}

void CredentialMonitor::LoadState() {
  auto text = ReadFile(state_path_);
  if (!text) return;
  boost::system::error_code ec;
  auto v = boost::json::parse(*text, ec);
  const boost::json::object* proxies = nullptr;
  if (!ec && v.is_object()) {
    if (auto* p = v.as_object().if_contains("proxies"); p && p->is_object())
      proxies = &p->as_object();
  }
  if (!proxies) {
    spdlog::warn("credentials: {} is damaged; starting afresh", state_path_);
    return;
  }
  for (auto& kv : *proxies) {
    if (!kv.value().is_object()) continue;
    auto& o = kv.value().as_object();
    ProxyStatus& p = proxies_[std::string(kv.key())];
    p.path = std::string(kv.key());
    if (auto* n = o.if_contains("not_after"); n && n->is_int64()) p.not_after = n->as_int64();
    if (auto* h = o.if_contains("hold_mailed"); h && h->is_bool()) p.hold_mailed = h->as_bool();
    if (auto* a = o.if_contains("alarms_sent"); a && a->is_array()) {
      for (auto& x : a->as_array()) {
        if (x.is_int64()) p.alarms_sent.push_back(x.as_int64());
      }
    }
  }
}

void CredentialMonitor::SaveState() {
  boost::json::object proxies;
  for (auto& [path, p] : proxies_) {
    if (p.not_after == 0) continue;
    boost::json::array sent;
    for (auto s : p.alarms_sent) sent.push_back(s);
    proxies[path] = boost::json::object{
        {"not_after", p.not_after}, {"hold_mailed", p.hold_mailed}, {"alarms_sent", sent}};
  }
  boost::json::object root{{"proxies", proxies}};
  if (auto st = WriteFileAtomic(state_path_, boost::json::serialize(root) + "\n", 0600); !st)
    spdlog::error("credentials: cannot save {}: {}", state_path_, st.error().ToString());
}

bool CredentialMonitor::Refresh(ProxyStatus& p) {
  struct stat st {};
  if (::stat(p.path.c_str(), &st) != 0) {
    std::string err = "cannot read " + p.path + ": " + std::strerror(errno);
    if (p.error != err) spdlog::warn("credentials: {}", err);
    p.error = err;
    p.size = -1;
    return false;
  }
  int64_t mtime = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  int64_t ctime = int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec;
  if (p.valid && p.error.empty() && p.untrusted.empty() && st.st_dev == p.dev &&
      st.st_ino == p.ino && mtime == p.mtime_ns && ctime == p.ctime_ns && st.st_size == p.size)
    return false;
  auto c = cred::LoadProxyFile(p.path);
  p.dev = st.st_dev;
  p.ino = st.st_ino;
  p.mtime_ns = mtime;
  p.ctime_ns = ctime;
  p.size = st.st_size;
  if (!c) {
    std::string err = c.error().message();
    if (p.error != err) spdlog::warn("credentials: {}: {}", p.path, err);
    p.error = err;
    return false;
  }
  auto info = cred::DescribeCredential(c->chain);
  int64_t not_after = Epoch(info.not_after);
  // Trusted by the CA directory the gridmanager will use? Judged inside the proxy's validity, so
  // that an expired proxy is reported as expired (below), not as untrusted.
  // With no CA directory at all there is nothing to judge trust by (a gridmanager says so).
  std::string ca_dir = cred::DefaultCaDir();
  std::string why;
  if (!ca_dir.empty()) {
    auto at = std::min(cred::Clock::now(), info.not_after - std::chrono::seconds(1));
    auto verifier = cred::Verifier::Create({.ca_dir = ca_dir});
    if (!verifier) {
      why = verifier.error().message();
    } else if (auto id = (*verifier)->Verify(c->chain, at); !id) {
      why = id.error().message();
    }
  }
  std::string untrusted;
  if (!why.empty()) {
    untrusted = "not trusted by the CA directory " + ca_dir + ": " + why;
    if (p.untrusted != untrusted) spdlog::warn("credentials: {}: {}", p.path, untrusted);
  }
  p.untrusted = untrusted;
  p.error.clear();
  if (not_after != p.not_after) {
    // A new expiry: its alarms and its hold mail are still to come.
    p.alarms_sent.clear();
    p.hold_mailed = false;
    if (p.not_after != 0 && p.valid)
      spdlog::info("credentials: {} now valid until {}", p.path, FormatUtc(not_after));
  }
  p.valid = true;
  p.not_after = not_after;
  p.not_before = Epoch(c->leaf().NotBefore());
  p.subject = info.subject;
  p.identity = info.identity;
  return true;
}

// A proxy no gridmanager can use (missing, unreadable, not private, not a proxy, not trusted):
// its grid jobs waiting for one are held with the reason and the fix, instead of waiting while
// gridmanagers fail to start. Running ones are left to the gridmanager that runs them.
void CredentialMonitor::HoldUnusable(const ProxyStatus& p, const std::vector<Job*>& jobs) {
  std::vector<Job*> to_hold;
  for (Job* j : jobs) {
    if (j->universe == kUniverseGrid && j->status == kIdle) to_hold.push_back(j);
  }
  if (to_hold.empty()) return;
  const std::string& why = p.error.empty() ? p.untrusted : p.error;
  std::string reason = UnusableProxyReason(p.path, why);
  for (Job* j : to_hold) {
    actions_.hold(*j, reason, kHoldCorruptedCredential, 0);
    queue_.SetAttr(*j, kUnusableProxyHoldAttr, classad::MakeString(p.path));
  }
  spdlog::warn("credentials: {} cannot be used ({}); held {} grid job(s)", p.path, why,
               to_hold.size());
  actions_.commit();
}

void CredentialMonitor::ReleaseUsable(const ProxyStatus& p, const std::vector<Job*>& jobs) {
  std::vector<Job*> held;
  for (Job* j : jobs) {
    if (j->status == kHeld && j->ad.EvaluateString(kUnusableProxyHoldAttr).value_or("") == p.path)
      held.push_back(j);
  }
  if (held.empty()) return;
  for (Job* j : held) {
    actions_.release(*j, "The proxy " + p.path + " can be used again");
    if (j->status != kHeld) j->ad.Remove(kUnusableProxyHoldAttr);
  }
  spdlog::info("credentials: {} can be used again; released {} job(s)", p.path, held.size());
  actions_.commit();
}

void CredentialMonitor::UpdateAttributes(const ProxyStatus& p, const std::vector<Job*>& jobs) {
  bool any = false;
  for (Job* j : jobs) {
    if (j->ad.EvaluateInt("x509UserProxyExpiration").value_or(-1) != p.not_after) {
      queue_.SetAttr(*j, "x509UserProxyExpiration", classad::MakeInteger(p.not_after));
      any = true;
    }
    if (j->ad.EvaluateString("x509userproxysubject").value_or("") != p.identity) {
      queue_.SetAttr(*j, "x509userproxysubject", classad::MakeString(p.identity));
      any = true;
    }
  }
  if (any) actions_.commit();
}

std::vector<std::string> CredentialMonitor::Recipients(const std::vector<Job*>& jobs) const {
  std::vector<std::string> to;
  for (Job* j : jobs) {
    for (auto& a : JobRecipients(j->ad, uid_domain_)) {
      if (std::find(to.begin(), to.end(), a) == to.end()) to.push_back(a);
    }
  }
  return to;
}

void CredentialMonitor::Mail(const std::vector<Job*>& jobs, const std::string& subject,
                             const std::string& body) {
  MailMessage m;
  m.to = Recipients(jobs);
  m.subject = subject;
  m.body = body;
  if (m.to.empty()) {
    spdlog::warn("credentials: nobody to mail '{}'", subject);
    return;
  }
  if (!mailer_) {
    spdlog::info("credentials: not mailed (no [mail] smtp_url): {}", subject);
    return;
  }
  if (auto st = mailer_->Send(m); !st)
    spdlog::error("credentials: cannot queue '{}': {}", subject, st.error().ToString());
}

void CredentialMonitor::MailAlarm(ProxyStatus& p, const std::vector<Job*>& jobs, int64_t left) {
  std::string ids;
  for (Job* j : jobs) ids += (ids.empty() ? "" : " ") + JobIdString(j->key);
  std::string body =
      "Your proxy " + p.path + " (" + p.identity + ") expires at " + FormatUtc(p.not_after) +
      ", in " + FormatSeconds(left) + ".\n\n" + std::to_string(jobs.size()) +
      " job(s) use it: " + ids + "\n\n" + "Renew it before then so they keep running:\n\n    " +
      ProxyInitCommand(p.path, p.not_after - p.not_before) + "\n\n" + "If it has less than " +
      FormatSeconds(static_cast<int64_t>(options_.min_lifetime)) +
      " left, the jobs are held until it is renewed.\n";
  Mail(jobs, "Kite: your proxy " + p.path + " expires in " + FormatSeconds(left), body);
}

void CredentialMonitor::MailHeld(ProxyStatus& p, const std::vector<Job*>& jobs) {
  int64_t now = static_cast<int64_t>(now_());
  std::string list;
  for (Job* j : jobs) {
    list += "    " + JobIdString(j->key) + "  " + j->ad.EvaluateString("Cmd").value_or("") + "\n";
  }
  std::string body =
      "Your proxy " + p.path + " (" + p.identity + ") " +
      (p.not_after <= now
           ? "expired at " + FormatUtc(p.not_after)
           : "expires at " + FormatUtc(p.not_after) + ", in " + FormatSeconds(p.not_after - now)) +
      ".\n\nThese jobs are held until it is renewed:\n\n" + list + "\nTo renew it, run:\n\n    " +
      ProxyInitCommand(p.path, p.not_after - p.not_before) +
      "\n\nNothing else is needed: the agent sees the new proxy within " +
      FormatSeconds(static_cast<int64_t>(std::max(1.0, options_.check_interval))) +
      " and releases these jobs by itself.\n\nHold reason: " +
      CredentialHoldReason(p.path, p.not_after, now, options_.min_lifetime) + "\n";
  Mail(jobs,
       "Kite: " + std::to_string(jobs.size()) + " job(s) held: proxy " + p.path +
           (p.not_after <= now ? " expired" : " expiring"),
       body);
}

void CredentialMonitor::Check() {
  // Jobs by proxy file.
  std::map<std::string, std::vector<Job*>> by_proxy;
  for (auto& [key, j] : queue_.jobs()) {
    if (!Queued(j)) continue;
    auto path = j.ad.EvaluateString("x509userproxy");
    if (!path || path->empty()) continue;
    by_proxy[*path].push_back(&j);
  }
  bool state_changed = false;
  int64_t now = static_cast<int64_t>(now_());
  for (auto& [path, jobs] : by_proxy) {
    ProxyStatus& p = proxies_[path];
    p.path = path;
    Refresh(p);
    p.jobs.clear();
    for (Job* j : jobs) p.jobs.push_back(j->key);
    if (!p.error.empty() || !p.untrusted.empty()) {
      HoldUnusable(p, jobs);
    } else {
      ReleaseUsable(p, jobs);
    }
    if (!p.valid) continue;  // never read: nothing more to judge by (the error is logged)
    UpdateAttributes(p, jobs);
    std::vector<int64_t> alarms = options_.alarms;
    for (Job* j : jobs) JobAlarms(*j, &alarms);
    std::sort(alarms.rbegin(), alarms.rend());
    alarms.erase(std::unique(alarms.begin(), alarms.end()), alarms.end());
    p.alarms = alarms;
    int64_t left = p.not_after - now;

    if (left > 0 && left >= options_.min_lifetime) {
      std::vector<Job*> held;
      for (Job* j : jobs) {
        if (HeldByMonitor(*j, path)) held.push_back(j);
      }
      for (Job* j : held) {
        actions_.release(
            *j, "The proxy " + path + " was renewed (valid until " + FormatUtc(p.not_after) + ")");
        if (j->status != kHeld) j->ad.Remove(kCredentialHoldAttr);  // else: still stopping
      }
      if (!held.empty()) {
        spdlog::info("credentials: {} renewed; released {} job(s)", path, held.size());
        actions_.commit();
      }
      // Reminders: every threshold reached and not yet mailed, in one message.
      bool due = false;
      for (int64_t a : alarms) {
        if (left <= a &&
            std::find(p.alarms_sent.begin(), p.alarms_sent.end(), a) == p.alarms_sent.end()) {
          p.alarms_sent.push_back(a);
          due = true;
        }
      }
      if (due) {
        std::vector<Job*> live;
        for (Job* j : jobs) {
          if (j->status != kHeld || HeldByMonitor(*j, path)) live.push_back(j);
        }
        spdlog::info("credentials: {} expires in {}: reminding", path, FormatSeconds(left));
        MailAlarm(p, live.empty() ? jobs : live, left);
        state_changed = true;
      }
      continue;
    }

    // Too little left: renewal first, then hold.
    std::vector<Job*> to_hold;
    for (Job* j : jobs) {
      if (j->status == kIdle || RunUnderWay(j->status)) to_hold.push_back(j);
    }
    if (to_hold.empty() && p.hold_mailed) continue;
    if (renew_ && left > 0 && !to_hold.empty()) {
      RenewalRequest req{path, p.not_after, left, p.identity, {}};
      for (Job* j : to_hold) req.jobs.push_back(j->key);
      if (renew_(req) == RenewalAnswer::kRenewing) continue;
    }
    std::string reason = CredentialHoldReason(path, p.not_after, now, options_.min_lifetime);
    for (Job* j : to_hold) {
      actions_.hold(*j, reason, kHoldCorruptedCredential, 0);
      queue_.SetAttr(*j, kCredentialHoldAttr, classad::MakeString(path));
    }
    if (!to_hold.empty()) {
      spdlog::warn("credentials: {} {}; held {} job(s)", path,
                   left <= 0 ? "expired" : "expires in " + FormatSeconds(left), to_hold.size());
    }
    // The holds are committed before anyone is told of them.
    if (!to_hold.empty() && !actions_.commit()) continue;
    if (!p.hold_mailed) {
      std::vector<Job*> held;
      for (Job* j : jobs) {
        if (HeldByMonitor(*j, path)) held.push_back(j);
      }
      if (!held.empty()) {
        MailHeld(p, held);
        p.hold_mailed = true;
        state_changed = true;
      }
    }
  }
  // Forget proxies no job uses any more once they have expired.
  for (auto it = proxies_.begin(); it != proxies_.end();) {
    if (!by_proxy.count(it->first) && it->second.not_after < now) {
      it = proxies_.erase(it);
      state_changed = true;
    } else {
      ++it;
    }
  }
  if (state_changed) SaveState();
}

}  // namespace kite::agent
