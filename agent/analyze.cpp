#include "agent/analyze.h"

#include <cmath>

#include "agent/negotiator.h"
#include "classad/expr.h"
#include "classad/match.h"
#include "common/clock.h"
#include "common/htcondor_codes.h"
#include "grid/brokered.h"
#include "grid/resource.h"

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
  if (grid::IsBrokered(resource)) {
    // The broker chooses the site (docs/broker.md): once it has, that is the site looked at.
    auto chosen = grid::JobGridResource(job.ad);
    if (!chosen) {
      out +=
          "  The broker has not chosen a site for it yet: no site ad it knows matches the "
          "job's requirements with room for it (kite status -grid lists the sites).\n";
      resource.clear();
    } else {
      out += "  The broker chose: " + *chosen + "\n";
      resource = *chosen;
    }
  }
  if (f.proxy_problem && !proxy.empty()) {
    if (auto p = f.proxy_problem(proxy); !p.empty())
      out += "  Its proxy " + proxy + ": " + p + "\n";
  }
  if (f.gridmanager && !proxy.empty()) out += "  Its gridmanager: " + f.gridmanager(proxy) + "\n";
  // The site's report is by HOST:PORT.
  std::string host_port = resource.empty() ? std::string() : grid::SiteOf(resource);
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

// condor_q -better-analyze for the pool: the job's Requirements clause by clause, and the slots'
// START, each with how many slots it lets through.
std::string Vanilla(const Job& job, const AnalyzeFacts& f) {
  std::string glideins = f.glidein_problem.empty()
                             ? ""
                             : "  Glide-ins cannot join the pool: " + f.glidein_problem + "\n";
  if (f.slots.empty())
    return "  The pool has no slot: start the agent with [pool] local_slots above 0, or submit "
           "glide-ins (kite glidein submit).\n" +
           glideins;
  size_t free = 0, matching = 0, matching_free = 0, start_ok = 0;
  // An image a site wrote is the program's whole memory: it goes to glide-ins' slots only.
  bool site_image = !f.local_restore_site_checkpoints &&
                    job.ad.EvaluateBool("TransparentCheckpoint").value_or(false) &&
                    job.ad.EvaluateInt("NumCheckpoints").value_or(0) > 0 &&
                    job.ad.EvaluateBool("CheckpointFromSite").value_or(false);
  for (const auto& s : f.slots) {
    free += !s.busy;
    bool both = SlotMatches(job.ad, *s.ad) && !(site_image && s.local);
    matching += both;
    matching_free += both && !s.busy;
    start_ok += classad::RequirementsMet(*s.ad, job.ad);
  }
  std::string n = std::to_string(f.slots.size());
  std::string out = "  The pool has " + n + " slot(s), " + std::to_string(free) + " free.\n";
  if (const classad::Expr* req = job.ad.Lookup("Requirements"); !req) {
    out += "  The job has no Requirements, so it matches no slot.\n";
  } else {
    out += "  Its Requirements, clause by clause (slots for which the clause is true):\n";
    for (const classad::Expr* clause : classad::Conjuncts(*req)) {
      size_t yes = 0;
      for (const auto& s : f.slots) yes += classad::EvaluateExpr(*clause, &job.ad, s.ad).IsTrue();
      out += "    " + std::to_string(yes) + " of " + n + "  " + classad::Unparse(*clause) + "\n";
    }
  }
  out += "  Slots whose START accepts it: " + std::to_string(start_ok) + " of " + n + ".\n";
  if (site_image) {
    out += "  Its latest checkpoint is an image made at " +
           job.ad.EvaluateString("CheckpointStartd").value_or("a site") +
           "; it is not restored on this desktop's own slots ([pool] "
           "local_restore_site_checkpoints = false), so only glide-ins' slots count.\n";
  }
  out += "  Slots that match both ways: " + std::to_string(matching) + " (" +
         std::to_string(matching_free) + " free).\n";
  if (matching == 0)
    return out +
           "  No slot matches: change its requirements (kite qedit) or add slots that "
           "meet them.\n" +
           glideins;
  if (matching_free == 0)
    return out + "  Every matching slot is busy: it starts when one frees.\n" + glideins;
  return out + "  A free slot matches: it starts at the negotiator's next turn.\n";
}

// Where the job is, and what holds it back.
std::string AnalyzeStatus(const Job& job, const AnalyzeFacts& f, double now) {
  std::string out = "Job " + JobIdString(job.key) + ": ";
  switch (job.status) {
    case kHeld:
      out += "held.\n  " + job.ad.EvaluateString("HoldReason").value_or("(no reason given)") +
             " (HoldReasonCode " +
             std::to_string(job.ad.EvaluateInt("HoldReasonCode").value_or(0)) + ")\n";
      return out;
    case kSuspended:
    case kRunning:
      out += job.status == kSuspended ? "suspended by its slot's owner policy; running" : "running";
      if (auto start = job.ad.EvaluateInt("JobCurrentStartDate"))
        out += " since " + FormatUtc(static_cast<double>(*start));
      if (auto host = job.ad.EvaluateString("RemoteHost")) out += " on " + *host;
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
  if (job.universe == kUniverseVanilla) return out + Vanilla(job, f);
  return out + "  universe " + std::to_string(job.universe) + " jobs are not run by Kite.\n";
}

// The last transparent checkpoint that was asked for and not taken, and why.
std::string CheckpointRefusal(const Job& job) {
  auto why = job.ad.EvaluateString("LastCheckpointRefusal");
  if (!why) return "";
  auto at = job.ad.EvaluateInt("LastCheckpointRefusalTime");
  return "  Its last checkpoint was not taken" +
         (at ? " (" + FormatUtc(static_cast<double>(*at)) + ")" : std::string()) + ": " + *why +
         ".\n";
}

}  // namespace

std::string AnalyzeJob(const Job& job, const AnalyzeFacts& f, double now) {
  std::string out = AnalyzeStatus(job, f, now);
  return out + CheckpointRefusal(job);
}

}  // namespace kite::agent
