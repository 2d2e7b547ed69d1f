// The pool's matchmaking: both ways, Rank then the slot's Rank, MaxRuntime against TimeToLive,
// and the order jobs are considered in.
#include "agent/negotiator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

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

// Kinds of job (autoclusters): jobs alike in all that matchmaking could read share one; a
// difference in anything it could read, directly or through another attribute, parts them.
TEST(MatchKinds, JobsAlikeInWhatMatchingReadsShareAKind) {
  auto slot = Ad("[ Memory = 2048; OpSys = \"LINUX\"; Requirements = TARGET.Owner == \"me\" ]");
  MatchKinds kinds({&slot});
  auto a =
      Ad("[ ProcId = 0; Args = \"a\"; RequestMemory = 1024; Owner = \"me\"; "
         "Requirements = TARGET.Memory >= RequestMemory ]");
  auto b =
      Ad("[ ProcId = 1; Args = \"b\"; RequestMemory = 1024; Owner = \"me\"; "
         "Requirements = TARGET.Memory >= RequestMemory ]");
  auto more =
      Ad("[ ProcId = 2; RequestMemory = 4096; Owner = \"me\"; "
         "Requirements = TARGET.Memory >= RequestMemory ]");
  auto other =
      Ad("[ ProcId = 3; RequestMemory = 1024; Owner = \"you\"; "
         "Requirements = TARGET.Memory >= RequestMemory ]");
  ASSERT_TRUE(kinds.KindOf(a));
  EXPECT_EQ(kinds.KindOf(a), kinds.KindOf(b));      // they differ only in what nothing reads
  EXPECT_NE(kinds.KindOf(a), kinds.KindOf(more));   // read through Requirements
  EXPECT_NE(kinds.KindOf(a), kinds.KindOf(other));  // read by the slot's START
}

TEST(MatchKinds, WhatAnAttributeReadsIsReadToo) {
  auto slot = Ad("[ Memory = 2048; Requirements = true ]");
  MatchKinds kinds({&slot});
  auto a = Ad("[ Requirements = MY.Fits; Fits = TARGET.Memory >= Need; Need = 1000 ]");
  auto b = Ad("[ Requirements = MY.Fits; Fits = TARGET.Memory >= Need; Need = 3000 ]");
  EXPECT_NE(kinds.KindOf(a), kinds.KindOf(b));
  // A slot that reads the process id makes it part of the kind.
  auto picky = Ad("[ Requirements = TARGET.ProcId < 1 ]");
  MatchKinds by_proc({&picky});
  EXPECT_NE(by_proc.KindOf(Ad("[ ProcId = 0; Requirements = true ]")),
            by_proc.KindOf(Ad("[ ProcId = 1; Requirements = true ]")));
}

TEST(MatchKinds, NamesComputedByEvalLeaveTheJobWithoutAKind) {
  auto slot = Ad("[ Requirements = true ]");
  MatchKinds kinds({&slot});
  EXPECT_FALSE(kinds.KindOf(Ad("[ Requirements = eval(strcat(\"A\", \"B\")) ]")));
  auto evil = Ad("[ Requirements = eval(TARGET.Rule) ]");
  MatchKinds none({&evil});
  EXPECT_FALSE(none.KindOf(Ad("[ Requirements = true ]")));
  // A name in quotes is not read as words: such a job is tried on its own.
  EXPECT_FALSE(kinds.KindOf(Ad("[ Requirements = 'odd name' > 1; 'odd name' = 2 ]")));
}

// What skipping a kind must not change: the same jobs get the same slots as trying each job.
TEST(MatchKinds, SkippingKindsThatMatchedNothingPicksWhatTryingEveryJobPicks) {
  std::vector<classad::ClassAd> slots = {
      Ad("[ Name = \"s1\"; Memory = 1024; Requirements = true ]"),
      Ad("[ Name = \"s2\"; Memory = 4096; Requirements = TARGET.Owner == \"me\" ]"),
      Ad("[ Name = \"s3\"; Memory = 8192; Requirements = true ]")};
  std::vector<classad::ClassAd> jobs;
  for (int i = 0; i < 12; ++i) {
    jobs.push_back(
        Ad("[ ProcId = " + std::to_string(i) + "; Owner = \"" + (i % 3 ? "me" : "you") +
           "\"; RequestMemory = " + std::to_string(i % 4 == 0 ? 16384 : 2048 * (1 + i % 2)) +
           "; Requirements = TARGET.Memory >= RequestMemory ]"));
  }
  auto pick = [&](bool skip) {
    std::vector<const classad::ClassAd*> free;
    for (auto& s : slots) free.push_back(&s);
    MatchKinds kinds(free);
    std::set<std::string> unmatched;
    std::vector<std::string> got;
    for (auto& j : jobs) {
      auto kind = kinds.KindOf(j);
      if (skip && kind && unmatched.count(*kind)) {
        got.push_back("-");
        continue;
      }
      auto best = BestSlot(j, free);
      if (!best) {
        if (kind) unmatched.insert(*kind);
        got.push_back("-");
        continue;
      }
      got.push_back(*free[*best]->EvaluateString("Name"));
      free.erase(free.begin() + static_cast<std::ptrdiff_t>(*best));
    }
    return got;
  };
  EXPECT_EQ(pick(true), pick(false));
}

}  // namespace
}  // namespace kite::agent
