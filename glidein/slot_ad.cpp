// Slot ads and the START policy.
#include "glidein/slot_ad.h"

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
  ad.Assign("HasFileTransfer", true);
  if (auto st = ad.InsertText("Start", f.start); !st) {
    return Fail(ErrorCode::kInvalidInput,
                "the START expression '" + f.start + "' does not parse: " + st.error().message());
  }
  (void)ad.InsertText("Requirements", "Start");
  ad.Assign("Rank", 0);
  if (!f.resource.empty()) ad.Assign("GlideinResource", f.resource);
  return ad;
}

Status StartAllows(const classad::ClassAd& slot, const classad::ClassAd& job) {
  if (classad::RequirementsMet(slot, job)) return {};
  std::string why = "the slot's START is not true for this job";
  if (const auto* e = slot.Lookup("Start")) why += " (START = " + classad::Unparse(*e) + ")";
  return Fail(ErrorCode::kConflict, why);
}

}  // namespace kite::glidein
