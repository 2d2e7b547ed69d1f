// The pool's matchmaking: both ways, Rank then the slot's Rank, MaxRuntime against TimeToLive,
// and the order jobs are considered in.
#include "agent/negotiator.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "agent/config.h"
#include "classad/io.h"

namespace kite::agent {
namespace {

classad::ClassAd Ad(const std::string& text) {
  auto ad = classad::ParseNewAd(text);
  EXPECT_TRUE(ad) << text << ": " << (ad ? "" : ad.error().message());
  return ad ? *ad : classad::ClassAd{};
}

const std::string kJob =
    "[ RequestMemory = 1024; Requirements = TARGET.Memory >= RequestMemory && "
    "TARGET.OpSys == \"LINUX\"; Owner = \"me\" ]";

TEST(Negotiator, BothSidesRequirementsMustHold) {
  auto job = Ad(kJob);
  EXPECT_TRUE(SlotMatches(job, Ad("[ Memory = 2048; OpSys = \"LINUX\"; Requirements = true ]")));
  EXPECT_FALSE(SlotMatches(job, Ad("[ Memory = 512; OpSys = \"LINUX\"; Requirements = true ]")));
  // The slot's START refuses this owner.
  EXPECT_FALSE(SlotMatches(
      job, Ad("[ Memory = 2048; OpSys = \"LINUX\"; Requirements = TARGET.Owner != \"me\" ]")));
  // A slot with no Requirements matches nothing, as in HTCondor.
  EXPECT_FALSE(SlotMatches(job, Ad("[ Memory = 2048; OpSys = \"LINUX\" ]")));
}

TEST(Negotiator, AJobThatWouldOutliveTheSlotDoesNotMatchIt) {
  auto job = Ad("[ MaxRuntime = 3600; Requirements = true ]");
  EXPECT_FALSE(SlotMatches(job, Ad("[ TimeToLive = 600; Requirements = true ]")));
  EXPECT_TRUE(SlotMatches(job, Ad("[ TimeToLive = 7200; Requirements = true ]")));
  EXPECT_TRUE(SlotMatches(job, Ad("[ Requirements = true ]")));  // no end in sight
}

TEST(Negotiator, TheJobsRankChoosesThenTheSlotsRank) {
  auto job = Ad("[ Requirements = true; Rank = TARGET.Memory ]");
  auto small = Ad("[ Name = \"a\"; Memory = 1024; Requirements = true ]");
  auto big = Ad("[ Name = \"b\"; Memory = 4096; Requirements = true ]");
  auto bad = Ad("[ Name = \"c\"; Memory = 8192; Requirements = false ]");
  EXPECT_EQ(BestSlot(job, {&small, &bad, &big}), 2u);
  // Equal for the job: the slot that ranks the job higher wins.
  auto flat = Ad("[ Requirements = true ]");
  auto likes = Ad("[ Requirements = true; Rank = 10 ]");
  auto neutral = Ad("[ Requirements = true ]");
  EXPECT_EQ(BestSlot(flat, {&neutral, &likes}), 1u);
  EXPECT_EQ(BestSlot(flat, {&bad}), std::nullopt);
  EXPECT_EQ(BestSlot(flat, {}), std::nullopt);
}

TEST(Negotiator, HigherPriorityJobsGoFirstThenOlderOnes) {
  std::vector<JobOrder> jobs = {{0, 3, 0}, {5, 9, 1}, {0, 2, 7}, {5, 9, 0}, {-1, 1, 0}};
  std::sort(jobs.begin(), jobs.end());
  std::vector<std::pair<int, int>> ids;
  for (const auto& j : jobs) ids.emplace_back(j.cluster, j.proc);
  EXPECT_EQ(ids, (std::vector<std::pair<int, int>>{{9, 0}, {9, 1}, {2, 7}, {3, 0}, {1, 0}}));
}

TEST(Negotiator, TheDefaultLocalStartWaitsWhileTheOwnerWorksOnABusyMachine) {
  auto job = Ad("[ Requirements = true ]");
  auto slot = [](int keyboard_idle, double load, double kite_load) {
    return Ad("[ TotalCpus = 2; KeyboardIdle = " + std::to_string(keyboard_idle) + "; LoadAvg = " +
              std::to_string(load) + "; TotalCondorLoadAvg = " + std::to_string(kite_load) +
              "; Requirements = " + std::string(kDefaultLocalStart) + " ]");
  };
  EXPECT_TRUE(SlotMatches(job, slot(3600, 5.0, 0)));  // away: whatever the load
  EXPECT_TRUE(SlotMatches(job, slot(10, 0.5, 0)));    // at the keyboard, machine quiet
  EXPECT_FALSE(SlotMatches(job, slot(10, 3.0, 0)));   // at the keyboard, cores busy with own work
  EXPECT_TRUE(SlotMatches(job, slot(10, 3.0, 2)));    // the load is mostly Kite's own jobs
}

}  // namespace
}  // namespace kite::agent
