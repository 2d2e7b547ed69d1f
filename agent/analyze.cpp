#include "agent/analyze.h"

#include <cmath>

#include "common/clock.h"
#include "common/htcondor_codes.h"

namespace kite::agent {
namespace {

std::string Seconds(double s) {
  return std::to_string(static_cast<long long>(std::ceil(s))) + " s";
}

std::string Local(const Job& job, const AnalyzeFacts& f, double now) {
  std::string out;
  if (job.not_before > now) {
    out += "  Its exit policy runs it again after a short run; it waits " +
           Seconds(job.not_before - now) + " more before it starts (restarts back off).\n";
  }
  if (f.max_local_jobs > 0 && f.local_running >= f.max_local_jobs) {
    out += "  All local slots are busy: " + std::to_string(f.local_running) +
           " of max_local_jobs = " + std::to_string(f.max_local_jobs) + " run.\n";
  }
  if (f.local_idle_before > 0) {
    out += "  " + std::to_string(f.local_idle_before) +
           " idle local job(s) submitted before it start first.\n";
  }
  if (out.empty()) out = "  Nothing holds it back: it starts at the agent's next turn.\n";
  return out;
}

std::string Grid(const Job& job, const AnalyzeFacts& f) {
  std::string out;
  std::string resource = job.ad.EvaluateString("GridResource").value_or("");
  std::string proxy = job.ad.EvaluateString("x509userproxy").value_or("");
  out += "  Grid resource: " + (resource.empty() ? std::string("(none)") : resource) + "\n";
  if (f.proxy_problem && !proxy.empty()) {
    if (auto p = f.proxy_problem(proxy); !p.empty())
      out += "  Its proxy " + proxy + ": " + p + "\n";
  }
  if (f.gridmanager && !proxy.empty()) out += "  Its gridmanager: " + f.gridmanager(proxy) + "\n";
  // "kite HOST:PORT[/BATCH]": the site's report is by HOST:PORT.
  std::string host_port = resource.starts_with("kite ") ? resource.substr(5) : resource;
  host_port = host_port.substr(0, host_port.find('/'));
  if (f.site && !host_port.empty()) {
    auto s = f.site(host_port);
    if (!s) {
      out += "  The site has not been contacted yet.\n";
    } else if (!s->reachable) {
      out += "  The site does not answer" +
             (s->last_error.empty() ? std::string() : ": " + s->last_error) +
             (s->last_contact > 0 ? " (last answer " + FormatUtc(s->last_contact) + ")" : "") +
             "; it is retried with back-off.\n";
    } else {
      out += "  The site answers.\n";
    }
  }
  if (auto state = job.ad.EvaluateString("GridJobStatus")) {
    out += "  At the site: " + *state + "\n";
  }
  return out;
}

}  // namespace

std::string AnalyzeJob(const Job& job, const AnalyzeFacts& f, double now) {
  std::string out = "Job " + JobIdString(job.key) + ": ";
  switch (job.status) {
    case kHeld:
      out += "held.\n  " + job.ad.EvaluateString("HoldReason").value_or("(no reason given)") +
             " (HoldReasonCode " +
             std::to_string(job.ad.EvaluateInt("HoldReasonCode").value_or(0)) + ")\n";
      return out;
    case kRunning:
      out += "running";
      if (auto start = job.ad.EvaluateInt("JobCurrentStartDate"))
        out += " since " + FormatUtc(static_cast<double>(*start));
      out += ".\n";
      return job.universe == kUniverseGrid ? out + Grid(job, f) : out;
    case kRemoved:
      out += "removed; it leaves the queue once its site has confirmed the cancel.\n";
      return job.universe == kUniverseGrid ? out + Grid(job, f) : out;
    case kCompleted:
      out += "completed.\n";
      return out;
    default:
      break;
  }
  out += "idle.\n";
  if (job.universe == kUniverseLocal) return out + Local(job, f, now);
  if (job.universe == kUniverseGrid) return out + Grid(job, f);
  return out + "  universe " + std::to_string(job.universe) +
         " jobs run on a personal pool, which this agent does not have yet.\n";
}

}  // namespace kite::agent
