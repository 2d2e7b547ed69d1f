// The broker's pure half: site ads read and refused, observed waits, the wait estimate, the room
// a site gets, and the choice of a site.
#include "agent/site_ads.h"

#include <gtest/gtest.h>

#include "classad/io.h"
#include "gram/site_info.h"
#include "grid/site_ad.h"

namespace kite::agent {
namespace {

const char* kGood =
    "[ BatchSystem = \"slurm\"; Queues = { \"debug\" }; TotalCpus = 8; FreeCpus = 3; "
    "Memory = 4096; MaxWallTime = 3600; RunningJobs = 5; PendingJobs = 2 ]";

classad::ClassAd Ad(const std::string& text) {
  auto ad = classad::ParseNewAd(text);
  EXPECT_TRUE(ad) << text;
  return ad ? *ad : classad::ClassAd();
}

TEST(SiteAd, WhatAGatekeeperWritesReadsBack) {
  gram::batch::SiteInfo info;
  info.batch_system = "sge";
  info.queues = {"all.q", "long \"q\""};
  info.total_cpus = 16;
  info.free_cpus = 4;
  info.memory_mb = 2048;
  info.running_jobs = 12;
  info.pending_jobs = 30;
  info.estimated_start_s = 95.4;
  auto ad = ParseSiteAd(gram::SiteAdText(info, "Requirements = TARGET.RequestCpus <= 4", 1e9));
  ASSERT_TRUE(ad) << ad.error().ToString();
  EXPECT_EQ(ad->EvaluateString("BatchSystem"), "sge");
  EXPECT_EQ(ad->EvaluateInt("FreeCpus"), 4);
  EXPECT_EQ(ad->EvaluateInt("MaxWallTime"), grid::kNoWallTimeLimit);  // no limit
  EXPECT_EQ(ad->EvaluateInt("BatchEstimatedStart"), 95);
  EXPECT_NE(ad->Lookup("Requirements"), nullptr);
  EXPECT_TRUE(ParseSiteAd(kGood));
}

// Counts a batch system's answer gave past what any site has (garbage read as a number) are cut
// to the bounds when the gatekeeper writes its ad, so its own ad still reads back.
TEST(SiteAd, AGatekeeperWritesNoCountPastTheBounds) {
  gram::batch::SiteInfo info;
  info.batch_system = "slurm";
  info.total_cpus = int64_t{1} << 50;
  info.free_cpus = int64_t{1} << 45;
  info.memory_mb = int64_t{1} << 60;
  info.pending_jobs = int64_t{1} << 62;
  info.estimated_start_s = 1e300;
  auto ad = ParseSiteAd(gram::SiteAdText(info, "", 1e9));
  ASSERT_TRUE(ad) << ad.error().ToString();
  EXPECT_EQ(ad->EvaluateInt("TotalCpus"), grid::kMaxSiteCount);
  EXPECT_EQ(ad->EvaluateInt("FreeCpus"), grid::kMaxSiteCount);
  EXPECT_EQ(ad->EvaluateInt("Memory"), grid::kMaxSiteMemoryMiB);
  EXPECT_EQ(ad->EvaluateInt("PendingJobs"), grid::kMaxSiteCount);
  EXPECT_EQ(ad->EvaluateInt("BatchEstimatedStart"), 1000000000);
}

TEST(SiteAd, MalformedOrLyingAdsAreRefusedWithTheReason) {
  struct Case {
    std::string text, why;
  } cases[] = {
      {"not a classad", "site ad:"},
      {"[ BatchSystem = \"x\"; TotalCpus = 1 ", "site ad:"},
      {"[ TotalCpus = 1; FreeCpus = 1; Memory = 1; MaxWallTime = 1; RunningJobs = 0; "
       "PendingJobs = 0 ]",
       "BatchSystem"},
      {"[ BatchSystem = \"x\"; TotalCpus = -1; FreeCpus = 0; Memory = 1; MaxWallTime = 1; "
       "RunningJobs = 0; PendingJobs = 0 ]",
       "TotalCpus"},
      {"[ BatchSystem = \"x\"; TotalCpus = 1; FreeCpus = 2; Memory = 1; MaxWallTime = 1; "
       "RunningJobs = 0; PendingJobs = 0 ]",
       "more than TotalCpus"},
      {"[ BatchSystem = \"x\"; TotalCpus = 1; FreeCpus = 1; Memory = 1.5; MaxWallTime = 1; "
       "RunningJobs = 0; PendingJobs = 0 ]",
       "Memory"},
      {"[ BatchSystem = \"x\"; TotalCpus = 1; FreeCpus = 1; Memory = 1; MaxWallTime = 1; "
       "RunningJobs = 0 ]",
       "PendingJobs"},
      {std::string(kGood).replace(std::string(kGood).size() - 1, 1, "; EstimatedWaitTime = 0 ]"),
       "only the agent sets"},
      {std::string(kGood).replace(std::string(kGood).size() - 1, 1, "; BatchEstimatedStart = -5 ]"),
       "BatchEstimatedStart"},
      {"[ BatchSystem = \"" + std::string(kMaxSiteAdBytes, 'x') + "\" ]", "longer than"},
      // Numbers no site has (2^63 - 1 CPUs, free): refused with the reason, not taken as room.
      {"[ BatchSystem = \"x\"; TotalCpus = 9223372036854775807; FreeCpus = 9223372036854775807; "
       "Memory = 1; MaxWallTime = 1; RunningJobs = 0; PendingJobs = 0 ]",
       "TotalCpus = 9223372036854775807 is more than"},
      {"[ BatchSystem = \"x\"; TotalCpus = 1; FreeCpus = 1; Memory = 1; "
       "MaxWallTime = 9223372036854775807; RunningJobs = 0; PendingJobs = 0 ]",
       "MaxWallTime"},
      {"[ BatchSystem = \"x\"; TotalCpus = 1; FreeCpus = 1; Memory = 1; MaxWallTime = 1; "
       "RunningJobs = 0; PendingJobs = 4611686018427387904 ]",
       "PendingJobs"},
      {std::string(kGood).replace(std::string(kGood).size() - 1, 1,
                                  "; BatchEstimatedStart = 1e300 ]"),
       "BatchEstimatedStart"},
  };
  for (const auto& c : cases) {
    auto ad = ParseSiteAd(c.text);
    ASSERT_FALSE(ad) << c.text.substr(0, 200);
    EXPECT_NE(ad.error().message().find(c.why), std::string::npos) << ad.error().message();
  }
  EXPECT_TRUE(IsAgentSiteAttribute("estimatedwaittime"));
  EXPECT_FALSE(IsAgentSiteAttribute("Cost"));
}

TEST(SiteRecord, PercentilesRateAndFailuresOverTheWindow) {
  SiteRecord r(100);
  EXPECT_FALSE(r.WaitPercentile(0.5, 0));
  EXPECT_FALSE(r.StartRate(0));
  for (int i = 1; i <= 10; ++i) r.Waited(i, i);  // waits of 1..10 s at t = 1..10
  EXPECT_EQ(r.WaitPercentile(0.5, 10), 5);
  EXPECT_EQ(r.WaitPercentile(0.9, 10), 9);
  EXPECT_EQ(r.Waits(10), 10u);
  // Ten starts over at least kMinRateSpan seconds.
  EXPECT_DOUBLE_EQ(*r.StartRate(10), 10.0 / SiteRecord::kMinRateSpan);
  EXPECT_DOUBLE_EQ(*r.StartRate(61), 10.0 / 60);
  // Older than the window: forgotten.
  EXPECT_EQ(r.Waits(105), 6u);  // those of t = 5..10
  EXPECT_FALSE(r.WaitPercentile(0.5, 200));
  // A job given up on counts as a long wait, not as a start.
  SiteRecord g(100);
  g.Waited(1, 2);
  g.GaveUp(2, 4);
  g.GaveUp(3, 4);
  EXPECT_EQ(g.WaitPercentile(0.5, 3), kUnknownWait);
  EXPECT_FALSE(g.StartRate(3));
  r.Ended(10, false);
  r.Ended(11, true);
  r.Ended(12, false);
  r.Ended(13, false);
  EXPECT_DOUBLE_EQ(r.FailureRate(13), 0.25);
  EXPECT_EQ(r.Attempts(13), 4u);
}

TEST(EstimateWait, ObservedThenBatchThenFreeCpus) {
  classad::ClassAd site = Ad(kGood);  // 3 free CPUs
  SiteState s;
  EXPECT_EQ(EstimateWait(site, s), 0);  // free CPUs and nothing of ours waits
  s.kite_pending = 3;
  EXPECT_EQ(EstimateWait(site, s), kUnknownWait);  // as many of ours as free CPUs
  site.Assign("BatchEstimatedStart", 42);
  EXPECT_EQ(EstimateWait(site, s), 42);  // the batch system's own estimate
  s.wait_p50 = 7;
  EXPECT_EQ(EstimateWait(site, s), 7);  // what Kite saw comes first
  s.start_rate = 0.5;                   // 3 of ours ahead, 0.5 starts a second
  EXPECT_EQ(EstimateWait(site, s), 7);
  s.kite_pending = 10;
  EXPECT_EQ(EstimateWait(site, s), 20);
  s.oldest_pending = 600;  // a job of ours has waited there this long already
  EXPECT_EQ(EstimateWait(site, s), 600);
}

TEST(SiteRoom, UnknownSitesAreTriedWithLittle) {
  classad::ClassAd site = Ad(kGood);  // 3 free CPUs
  SiteState s;
  EXPECT_EQ(SiteRoom(site, s, 16), 4);  // free + 1 until Kite has seen a start there
  s.kite_pending = 4;
  EXPECT_EQ(SiteRoom(site, s, 16), 0);
  s.wait_p50 = 1;
  EXPECT_EQ(SiteRoom(site, s, 16), 12);
  site.Assign("FreeCpus", 100);
  EXPECT_EQ(SiteRoom(site, s, 16), 96);
}

TEST(BestSite, RequirementsBothWaysThenRankThenWaitThenRoom) {
  classad::ClassAd job =
      Ad("[ Owner = \"jane\"; RequestMemory = 2048; "
         "Requirements = TARGET.Memory >= MY.RequestMemory; "
         "Rank = -TARGET.Cost ]");
  classad::ClassAd small = Ad(kGood), big = Ad(kGood), picky = Ad(kGood), cheap = Ad(kGood);
  small.Assign("Memory", 1024);
  big.Assign("Cost", 2.0);
  picky.InsertText("Requirements", "TARGET.Owner == \"bob\"");
  picky.Assign("Cost", 0.0);
  cheap.Assign("Cost", 1.0);
  std::vector<SiteChoice> sites = {
      {&small, 10, 0}, {&big, 10, 0}, {&picky, 10, 0}, {&cheap, 10, 50}};
  EXPECT_EQ(BestSite(job, sites), 3u);  // the best Rank that matches both ways, wait aside
  sites[3].room = 0;
  EXPECT_EQ(BestSite(job, sites), 1u);  // no room left there
  sites[1].room = 0;
  EXPECT_FALSE(BestSite(job, sites));
  // Equal Rank: the shorter wait, then the more room.
  classad::ClassAd plain = Ad("[ Requirements = true ]");
  std::vector<SiteChoice> even = {{&big, 3, 30}, {&cheap, 2, 10}, {&small, 5, 10}};
  EXPECT_EQ(BestSite(plain, even), 2u);
}

TEST(SiteMatcher, JobsOfOneKindShareOneEvaluation) {
  std::vector<classad::ClassAd> ads;
  for (int i = 0; i < 10; ++i) {
    ads.push_back(Ad(kGood));
    ads.back().Assign("Memory", 1000 * i);
  }
  std::vector<const classad::ClassAd*> ptrs;
  for (auto& a : ads) ptrs.push_back(&a);
  SiteMatcher m(ptrs);
  std::vector<SiteChoice> choices;
  for (auto* a : ptrs) choices.push_back({a, 5, 0});
  for (int j = 0; j < 100; ++j) {
    classad::ClassAd job = Ad("[ Requirements = TARGET.Memory >= 4500; Rank = TARGET.Memory ]");
    job.Assign("ProcId", j);  // not read by matchmaking: the same kind
    const auto& matching = m.For(job);
    EXPECT_EQ(matching.size(), 5u);
    EXPECT_EQ(PickSite(matching, choices), BestSite(job, choices));
    EXPECT_EQ(PickSite(matching, choices), 9u);
  }
  EXPECT_EQ(m.evaluations(), 1u);
  classad::ClassAd other = Ad("[ Requirements = TARGET.Memory >= 8500 ]");
  EXPECT_EQ(m.For(other).size(), 1u);
  EXPECT_EQ(m.evaluations(), 2u);
}

// Late binding: a job waits for room at the site it would start at soonest rather than go where
// it would start later; as that site's queue grows, the next site becomes the better one.
TEST(PreferredSite, WaitsForTheSoonestSiteEvenWithoutRoom) {
  classad::ClassAd fast = Ad(kGood), slow = Ad(kGood);
  fast.Assign("EstimatedWaitTime", 5);
  slow.Assign("EstimatedWaitTime", 60);
  classad::ClassAd job = Ad("[ Requirements = true; Rank = -TARGET.EstimatedWaitTime ]");
  std::vector<SiteChoice> sites = {{&slow, 10, 60}, {&fast, 0, 5}};
  std::vector<SiteMatch> both = {{0, 0}, {1, 0}};
  EXPECT_EQ(PreferredSite(job, both, sites), 1u);  // no room at fast, but it is still sooner
  EXPECT_EQ(BestSite(job, sites), 0u);             // BestSite: only where there is room
  fast.Assign("EstimatedWaitTime", 61);            // its queue grew past the other's wait
  EXPECT_EQ(PreferredSite(job, both, sites), 0u);
  EXPECT_FALSE(PreferredSite(job, {}, sites));
}

}  // namespace
}  // namespace kite::agent
