// Slot ads and the START policy.
#include "glidein/slot_ad.h"

#include <algorithm>
#include <cctype>

#include "classad/match.h"

namespace kite::glidein {

std::string_view SlotStateName(SlotState s) {
  return s == SlotState::kClaimed ? "Claimed" : "Unclaimed";
}

std::string_view SlotActivityName(SlotActivity a) {
  switch (a) {
    case SlotActivity::kIdle:
      return "Idle";
    case SlotActivity::kBusy:
      return "Busy";
    case SlotActivity::kSuspended:
      return "Suspended";
    case SlotActivity::kRetiring:
      return "Retiring";
  }
  return "Idle";
}

std::string SlotName(int id, const std::string& startd) {
  return "slot" + std::to_string(id) + "@" + startd;
}

std::string HostPart(const std::string& startd) {
  auto at = startd.rfind('@');
  return at == std::string::npos ? startd : startd.substr(at + 1);
}

Result<classad::ClassAd> BuildSlotAd(const SlotFacts& f) {
  classad::ClassAd ad;
  ad.Assign("MyType", "Machine");
  ad.Assign("Name", SlotName(f.id, f.startd));
  ad.Assign("SlotID", f.id);
  ad.Assign("StartdName", f.startd);
  ad.Assign("Machine", f.machine);
  ad.Assign("FileSystemDomain", HostPart(f.startd));
  ad.Assign("State", SlotStateName(f.state));
  ad.Assign("Activity", SlotActivityName(f.activity));
  if (!f.job.empty()) ad.Assign("JobId", f.job);
  ad.Assign("Cpus", f.cpus);
  ad.Assign("Memory", f.memory_mib);
  ad.Assign("Disk", f.disk_kib);
  ad.Assign("OpSys", "LINUX");
  ad.Assign("Arch", f.arch);
  ad.Assign("LoadAvg", f.load_avg);
  ad.Assign("TotalCpus", f.total_cpus);
  ad.Assign("CondorLoadAvg", f.condor_load);
  ad.Assign("TotalCondorLoadAvg", f.total_condor_load);
  ad.Assign("KeyboardIdle", f.keyboard_idle);
  ad.Assign("TimeToLive", f.time_to_live);
  ad.Assign("UpdateInterval", f.update_interval);
  ad.Assign("HasFileTransfer", true);
  ad.Assign("HasSelfCheckpointTransfers", true);  // checkpoint_exit_code (docs/pool.md)
  // The HTCondor release whose slot features these slots offer: condor_submit's Requirements
  // test it (`versioncmp(split(TARGET.CondorVersion)[1], "8.9.7") >= 0` for a job with
  // transfer_checkpoint_files), and without it such a job matched no slot of another file system.
  ad.Assign("CondorVersion", std::string(kSlotCondorVersion));
  struct Named {
    const char* attr;
    const char* knob;
    const std::string& text;
  };
  for (const Named& e :
       {Named{"Start", "START", f.start}, Named{"Suspend", "SUSPEND", f.policy.suspend},
        Named{"Continue", "CONTINUE", f.policy.cont}, Named{"Preempt", "PREEMPT", f.policy.preempt},
        Named{"Kill", "KILL", f.policy.kill},
        Named{"MaxJobRetirementTime", "MAXJOBRETIREMENTTIME", f.policy.retirement},
        Named{"PeriodicCheckpoint", "PERIODIC_CHECKPOINT", f.policy.periodic_checkpoint}}) {
    if (auto st = ad.InsertText(e.attr, e.text); !st) {
      return Fail(ErrorCode::kInvalidInput, std::string("the ") + e.knob + " expression '" +
                                                e.text +
                                                "' does not parse: " + st.error().message());
    }
  }
  if (f.entered_state > 0) ad.Assign("EnteredCurrentState", f.entered_state);
  if (f.entered_activity > 0) ad.Assign("EnteredCurrentActivity", f.entered_activity);
  if (f.last_periodic_checkpoint > 0)
    ad.Assign("LastPeriodicCheckpoint", f.last_periodic_checkpoint);
  (void)ad.InsertText("Requirements", "Start");
  ad.Assign("Rank", 0);
  if (!f.resource.empty()) ad.Assign("GlideinResource", f.resource);
  return ad;
}

bool PolicySays(const classad::ClassAd& slot, const classad::ClassAd& job, std::string_view attr) {
  const classad::Expr* e = slot.Lookup(attr);
  return e != nullptr && classad::EvaluateExpr(*e, &slot, &job).IsTrue();
}

double RetirementTime(const classad::ClassAd& slot, const classad::ClassAd& job) {
  auto seconds = [](const classad::ClassAd& my, const classad::ClassAd* target) {
    const classad::Expr* e = my.Lookup("MaxJobRetirementTime");
    if (e == nullptr) return -1.0;
    classad::Value v = classad::EvaluateExpr(*e, &my, target);
    return v.IsNumber() ? std::max(0.0, v.AsNumber()) : -1.0;
  };
  double mine = std::max(0.0, seconds(slot, &job));
  double theirs = seconds(job, &slot);
  return theirs >= 0 ? std::min(mine, theirs) : mine;
}

std::string PolicyText(const classad::ClassAd& slot, std::string_view attr) {
  std::string knob(attr);
  for (auto& c : knob) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const classad::Expr* e = slot.Lookup(attr);
  return knob + " = " + (e ? classad::Unparse(*e) : "undefined");
}

Status StartAllows(const classad::ClassAd& slot, const classad::ClassAd& job) {
  if (classad::RequirementsMet(slot, job)) return {};
  std::string why = "the slot's START is not true for this job";
  if (const auto* e = slot.Lookup("Start")) why += " (START = " + classad::Unparse(*e) + ")";
  return Fail(ErrorCode::kConflict, why);
}

}  // namespace kite::glidein
