// Slot ads, the START policy and the host facts' parsers.
#include <gtest/gtest.h>

#include "classad/io.h"
#include "common/clock.h"
#include "glidein/machine.h"
#include "glidein/slot_ad.h"

namespace kite::glidein {
namespace {

SlotFacts Facts() {
  return SlotFacts{.id = 2,
                   .startd = "glidein_7@node3",
                   .machine = "node3.example.org",
                   .cpus = 1,
                   .memory_mib = 2048,
                   .disk_kib = 1000000,
                   .arch = "X86_64",
                   .load_avg = 0.5,
                   .keyboard_idle = 600,
                   .time_to_live = 3600,
                   .start = "TARGET.Owner == \"alice\"",
                   .resource = "kite host:2119/slurm"};
}

TEST(SlotAd, HasHTCondorsAttributes) {
  auto ad = BuildSlotAd(Facts());
  ASSERT_TRUE(ad) << ad.error().ToString();
  EXPECT_EQ(ad->EvaluateString("MyType"), "Machine");
  EXPECT_EQ(ad->EvaluateString("Name"), "slot2@glidein_7@node3");
  EXPECT_EQ(ad->EvaluateString("Machine"), "node3.example.org");
  EXPECT_EQ(ad->EvaluateString("StartdName"), "glidein_7@node3");
  EXPECT_EQ(ad->EvaluateString("FileSystemDomain"), "node3");
  EXPECT_EQ(ad->EvaluateString("State"), "Unclaimed");
  EXPECT_EQ(ad->EvaluateString("Activity"), "Idle");
  EXPECT_EQ(ad->EvaluateInt("Cpus"), 1);
  EXPECT_EQ(ad->EvaluateInt("Memory"), 2048);
  EXPECT_EQ(ad->EvaluateInt("Disk"), 1000000);
  EXPECT_EQ(ad->EvaluateString("OpSys"), "LINUX");
  EXPECT_EQ(ad->EvaluateString("Arch"), "X86_64");
  EXPECT_EQ(ad->EvaluateReal("LoadAvg"), 0.5);
  EXPECT_EQ(ad->EvaluateInt("KeyboardIdle"), 600);
  EXPECT_EQ(ad->EvaluateInt("TimeToLive"), 3600);
  EXPECT_EQ(ad->EvaluateBool("HasFileTransfer"), true);
  // condor_submit's clause for jobs with transfer_checkpoint_files holds for it.
  classad::ClassAd probe = *ad;
  ASSERT_TRUE(probe.InsertText("VersionOk", "versioncmp(split(CondorVersion)[1], \"8.9.7\") >= 0"));
  EXPECT_EQ(probe.EvaluateBool("VersionOk"), true);
  EXPECT_EQ(ad->EvaluateInt("Rank"), 0);
  EXPECT_EQ(ad->EvaluateString("GlideinResource"), "kite host:2119/slurm");
  EXPECT_EQ(ad->Lookup("JobId"), nullptr);
  // The text form (what goes on the wire) reads back.
  auto back = classad::ParseNewAd(classad::ToNewText(*ad));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->EvaluateString("Name"), "slot2@glidein_7@node3");
}

TEST(SlotAd, ClaimedSlotNamesItsJobAndLocalSlotsHaveNoResource) {
  SlotFacts f = Facts();
  f.state = SlotState::kClaimed;
  f.activity = SlotActivity::kBusy;
  f.job = "12.0";
  f.resource.clear();
  auto ad = BuildSlotAd(f);
  ASSERT_TRUE(ad);
  EXPECT_EQ(ad->EvaluateString("State"), "Claimed");
  EXPECT_EQ(ad->EvaluateString("Activity"), "Busy");
  EXPECT_EQ(ad->EvaluateString("JobId"), "12.0");
  EXPECT_EQ(ad->Lookup("GlideinResource"), nullptr);
}

TEST(SlotAd, StartThatDoesNotParseIsAnError) {
  SlotFacts f = Facts();
  f.start = "Owner ==";
  auto ad = BuildSlotAd(f);
  ASSERT_FALSE(ad);
  EXPECT_NE(ad.error().message().find("START"), std::string::npos);
}

TEST(SlotAd, StartDecidesWithTheJobAsTarget) {
  auto slot = BuildSlotAd(Facts());
  ASSERT_TRUE(slot);
  auto alice = classad::ParseNewAd("[ Owner = \"alice\"; RequestMemory = 100 ]");
  auto bob = classad::ParseNewAd("[ Owner = \"bob\" ]");
  auto nobody = classad::ParseNewAd("[ RequestMemory = 100 ]");
  ASSERT_TRUE(alice && bob && nobody);
  EXPECT_TRUE(StartAllows(*slot, *alice));
  auto no = StartAllows(*slot, *bob);
  ASSERT_FALSE(no);
  EXPECT_NE(no.error().message().find("START"), std::string::npos);
  EXPECT_FALSE(StartAllows(*slot, *nobody));  // UNDEFINED is not true
}

TEST(SlotAd, StartMayLookAtTheSlotItself) {
  SlotFacts f = Facts();
  f.start = "TARGET.RequestMemory <= MY.Memory && KeyboardIdle > 300";
  auto slot = BuildSlotAd(f);
  ASSERT_TRUE(slot);
  auto small = classad::ParseNewAd("[ RequestMemory = 100 ]");
  auto big = classad::ParseNewAd("[ RequestMemory = 4096 ]");
  EXPECT_TRUE(StartAllows(*slot, *small));
  EXPECT_FALSE(StartAllows(*slot, *big));
}

TEST(SlotAd, CarriesTheOwnersPolicyAndWhenItsActivityBegan) {
  SlotFacts f = Facts();
  f.entered_state = 1764000000;
  f.entered_activity = 1764000100;
  auto ad = BuildSlotAd(f);
  ASSERT_TRUE(ad);
  EXPECT_EQ(ad->EvaluateInt("EnteredCurrentState"), 1764000000);
  EXPECT_EQ(ad->EvaluateInt("EnteredCurrentActivity"), 1764000100);
  auto job = classad::ParseNewAd("[ Owner = \"alice\" ]");
  ASSERT_TRUE(job);
  // HTCondor's defaults: never suspend, preempt or kill; a suspended job goes on; no retirement.
  EXPECT_FALSE(PolicySays(*ad, *job, "Suspend"));
  EXPECT_TRUE(PolicySays(*ad, *job, "Continue"));
  EXPECT_FALSE(PolicySays(*ad, *job, "Preempt"));
  EXPECT_FALSE(PolicySays(*ad, *job, "Kill"));
  EXPECT_EQ(RetirementTime(*ad, *job), 0);
}

TEST(SlotAd, PolicyExpressionsSeeTheSlotAndTheJob) {
  SlotFacts f = Facts();
  f.activity = SlotActivity::kBusy;
  f.entered_activity = static_cast<int64_t>(WallNow()) - 100;
  f.policy = {.suspend = "Activity == \"Busy\" && time() - EnteredCurrentActivity > 60",
              .cont = "KeyboardIdle > 300",
              .preempt = "TARGET.Owner == \"bob\"",
              .kill = "TARGET.ImageSize > 1000",
              .retirement = "TARGET.RequestCpus * 100"};
  auto ad = BuildSlotAd(f);
  ASSERT_TRUE(ad) << ad.error().ToString();
  auto alice = classad::ParseNewAd("[ Owner = \"alice\"; RequestCpus = 2; ImageSize = 10 ]");
  auto bob = classad::ParseNewAd("[ Owner = \"bob\"; ImageSize = 5000 ]");
  ASSERT_TRUE(alice && bob);
  EXPECT_TRUE(PolicySays(*ad, *alice, "Suspend"));
  EXPECT_TRUE(PolicySays(*ad, *alice, "Continue"));  // KeyboardIdle is 600
  EXPECT_FALSE(PolicySays(*ad, *alice, "Preempt"));
  EXPECT_TRUE(PolicySays(*ad, *bob, "Preempt"));
  EXPECT_TRUE(PolicySays(*ad, *bob, "Kill"));
  EXPECT_FALSE(PolicySays(*ad, *alice, "NoSuchPolicy"));
  EXPECT_EQ(PolicyText(*ad, "Preempt"), "PREEMPT = TARGET.Owner == \"bob\"");
  // The slot's retirement time, shortened by the job's own, never lengthened by it.
  EXPECT_EQ(RetirementTime(*ad, *alice), 200);
  auto shorter = classad::ParseNewAd("[ RequestCpus = 2; MaxJobRetirementTime = 30 ]");
  auto longer = classad::ParseNewAd("[ RequestCpus = 2; MaxJobRetirementTime = 3000 ]");
  ASSERT_TRUE(shorter && longer);
  EXPECT_EQ(RetirementTime(*ad, *shorter), 30);
  EXPECT_EQ(RetirementTime(*ad, *longer), 200);
  EXPECT_EQ(RetirementTime(*ad, *bob), 0);  // the slot's is UNDEFINED for bob: none
}

TEST(SlotAd, APolicyExpressionThatDoesNotParseIsAnErrorNamingIt) {
  for (auto [field, knob] : {std::pair{&OwnerPolicy::suspend, "SUSPEND"},
                             {&OwnerPolicy::cont, "CONTINUE"},
                             {&OwnerPolicy::preempt, "PREEMPT"},
                             {&OwnerPolicy::kill, "KILL"},
                             {&OwnerPolicy::retirement, "MAXJOBRETIREMENTTIME"}}) {
    SlotFacts f = Facts();
    f.policy.*field = "Activity ==";
    auto ad = BuildSlotAd(f);
    ASSERT_FALSE(ad) << knob;
    EXPECT_NE(ad.error().message().find(knob), std::string::npos) << ad.error().message();
  }
}

TEST(Machine, ParsesProcFiles) {
  EXPECT_EQ(ParseMemTotalMiB("MemTotal:       16314736 kB\nMemFree: 1 kB\n"), 15932);
  EXPECT_EQ(ParseMemTotalMiB("MemFree: 1 kB\n"), std::nullopt);
  EXPECT_EQ(ParseLoadAvg("0.52 0.58 0.59 1/467 12345\n"), 0.52);
  EXPECT_EQ(ParseLoadAvg("x"), std::nullopt);
  EXPECT_GT(MemTotalMiB(), 0);
  EXPECT_EQ(HostPart("node3"), "node3");
}

TEST(Machine, KeyboardIdleIsTheNewestDeviceAccess) {
  EXPECT_EQ(IdleSince({}, 1000), kNoInputDevice);
  EXPECT_EQ(IdleSince({"/nonexistent/tty0"}, 1000), kNoInputDevice);
  int64_t idle = IdleSince({"/proc/self/stat"}, WallNow() + 100);
  EXPECT_GT(idle, 0);
  EXPECT_LT(idle, kNoInputDevice);
  EXPECT_GE(KeyboardIdle(), 0);
}

}  // namespace
}  // namespace kite::glidein
