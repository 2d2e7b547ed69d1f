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
