// kite q -analyze: why a job is where it is, in words, from its ad and what the agent knows
// beyond it (local slots, the sites' reachability, the proxy, the gridmanager). Pure: the agent
// gathers the facts, this turns them into text.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/job.h"

namespace kite::agent {

struct AnalyzeFacts {
  int max_local_jobs = 0;        // 0: no limit
  int local_running = 0;         // local jobs running or starting
  size_t local_idle_before = 0;  // idle local jobs ahead of this one
  // A site ("HOST:PORT") as the gridmanager last reported it; nullopt: no report yet.
  struct Site {
    bool reachable = false;
    double last_contact = 0;
    std::string last_error;
  };
  std::function<std::optional<Site>(const std::string& host_port)> site;
  // Why a proxy file cannot be used; empty when it can.
  std::function<std::string(const std::string& proxy)> proxy_problem;
  // The gridmanager of a proxy file, in a few words ("running", "restarting in 12 s", ...).
  std::function<std::string(const std::string& proxy)> gridmanager;
  // The pool's slots (vanilla jobs): each slot's ad, and whether a job holds it.
  struct Slot {
    const classad::ClassAd* ad = nullptr;
    bool busy = false;
    bool local = false;  // the desktop's own startd's
  };
  std::vector<Slot> slots;
  // [pool] local_restore_site_checkpoints: a site's transparent image may go to a local slot.
  bool local_restore_site_checkpoints = false;
  // Why glide-ins cannot join the pool ("" when they can, or when no listener is configured).
  std::string glidein_problem;
};

// condor_q -analyze's answer for one job: a first line naming the job and its status, then
// indented lines with the reasons.
std::string AnalyzeJob(const Job& job, const AnalyzeFacts& facts, double now);

}  // namespace kite::agent
