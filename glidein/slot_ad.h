// A slot's ClassAd (docs/pool.md, "Slot ads") and the owner's START policy against a job.
// Pure: the caller gathers the facts (glidein/machine.h) and the slot's state.
#pragma once

#include <cstdint>
#include <string>

#include "classad/classad.h"
#include "common/error.h"
#include "glidein/options.h"

namespace kite::glidein {

enum class SlotState { kUnclaimed, kClaimed };
enum class SlotActivity { kIdle, kBusy, kSuspended, kRetiring };
std::string_view SlotStateName(SlotState s);        // "Unclaimed", "Claimed"
std::string_view SlotActivityName(SlotActivity a);  // "Idle", "Busy", ...

// Everything a slot ad says.
struct SlotFacts {
  int id = 1;           // N of slotN@startd
  std::string startd;   // the startd's name
  std::string machine;  // the host's name
  SlotState state = SlotState::kUnclaimed;
  SlotActivity activity = SlotActivity::kIdle;
  std::string job;  // the job on the slot ("C.P"), if any
  int cpus = 1;
  int64_t memory_mib = 0;
  int64_t disk_kib = 0;
  std::string arch = "X86_64";
  double load_avg = 0;           // the machine's (1-minute load average)
  int total_cpus = 1;            // the machine's cores
  double condor_load = 0;        // the load this slot's job is taken to cause: its Cpus while busy
  double total_condor_load = 0;  // the same over all of the startd's slots
  int64_t keyboard_idle = 0;
  int64_t time_to_live = 0;    // seconds left of the startd's lifetime
  std::string start = "true";  // the owner's START expression (ClassAd text)
  OwnerPolicy policy;
  std::string resource;          // GlideinResource; "" leaves it out
  int64_t entered_state = 0;     // EnteredCurrentState: when State last changed (Unix seconds)
  int64_t entered_activity = 0;  // EnteredCurrentActivity: when Activity last changed
  int64_t last_periodic_checkpoint = 0;  // LastPeriodicCheckpoint while Busy (0: left out)
  double update_interval = 10;           // UpdateInterval: seconds between this ad's updates
};

// CondorVersion in every slot ad: HTCondor's form; the release whose slot features Kite's offer.
inline constexpr const char* kSlotCondorVersion =
    "$CondorVersion: 25.0.0 2025-06-01 BuildID: Kite $";

std::string SlotName(int id, const std::string& startd);  // "slot1@name"
// The host part of a startd name ("glidein_7@node3" -> "node3"; "node3" -> "node3").
std::string HostPart(const std::string& startd);

// Fails (kInvalidInput, naming the expression) when `f.start` or a policy expression does not
// parse.
Result<classad::ClassAd> BuildSlotAd(const SlotFacts& f);

// Whether the slot's policy expression `attr` ("Suspend", "Continue", "Preempt", "Kill") is true
// for `job` as TARGET; UNDEFINED and ERROR count as false.
bool PolicySays(const classad::ClassAd& slot, const classad::ClassAd& job, std::string_view attr);
// The seconds a preempted `job` may still run: the slot's MaxJobRetirementTime, or the job's own
// when that is shorter (HTCondor's rule); 0 when neither is a number.
double RetirementTime(const classad::ClassAd& slot, const classad::ClassAd& job);
// "PREEMPT = <its expression>", for a reason.
std::string PolicyText(const classad::ClassAd& slot, std::string_view attr);

// Whether the slot (its START, as its Requirements) accepts `job` as TARGET: an error saying why
// not when it does not.
Status StartAllows(const classad::ClassAd& slot, const classad::ClassAd& job);

}  // namespace kite::glidein
