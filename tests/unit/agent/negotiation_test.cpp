// The negotiation pass on fake slot sources and a clock of the test's: jobs in their order take
// the best free slot of the first source that has one, kinds that matched nothing are skipped
// until a slot frees, a pass cut in slices resumes where it stopped and tries each job once, and
// a job whose checkpoint is a site's image is offered only sites' slots.
#include "agent/negotiation.h"

#include <gtest/gtest.h>

#include <map>

#include "classad/io.h"

namespace kite::agent {
namespace {

classad::ClassAd Ad(const std::string& text) {
  auto ad = classad::ParseNewAd(text);
  EXPECT_TRUE(ad) << text << ": " << (ad ? "" : ad.error().message());
  return ad ? *ad : classad::ClassAd{};
}

// Slots by name, each free or taken; the test takes a slot as the pool would after a match.
class FakeSource : public SlotSource {
 public:
  void Add(const std::string& name, const std::string& ad, bool site = false) {
    slots_[name] = Slot{Ad(ad), site, false};
    ++generation_;
  }
  void Take(const std::string& name) { slots_.at(name).taken = true; }
  void Free(const std::string& name) { slots_.at(name).taken = false; }
  uint64_t generation() const override { return generation_; }
  std::vector<const classad::ClassAd*> AllAds() const override {
    ++all_ads_calls;
    std::vector<const classad::ClassAd*> all;
    for (const auto& [name, s] : slots_) all.push_back(&s.ad);
    return all;
  }
  std::vector<SlotOffer> FreeSlots() override {
    std::vector<SlotOffer> free;
    for (const auto& [name, s] : slots_)
      if (!s.taken) free.push_back(SlotOffer{.name = name, .ad = &s.ad, .site = s.site});
    return free;
  }
  mutable int all_ads_calls = 0;

 private:
  struct Slot {
    classad::ClassAd ad;
    bool site = false, taken = false;
  };
  std::map<std::string, Slot> slots_;
  uint64_t generation_ = 1;
};

// Every reading of the steady clock moves it on by `step` seconds.
class StepClock : public Clock {
 public:
  explicit StepClock(double step) : step_(step) {}
  double Wall() const override { return 1.8e9 + now_; }
  double Steady() const override { return now_ += step_; }

 private:
  double step_;
  mutable double now_ = 100;
};

struct Jobs {
  std::map<JobKey, classad::ClassAd> ads;  // the idle ones
  NegotiationPass::IdleJobs idle;
  void Add(int cluster, int proc, const std::string& ad, long long prio = 0) {
    JobKey key{cluster, proc};
    ads[key] = Ad(ad);
    idle.insert({JobOrder{prio, cluster, proc}, key});
  }
  NegotiationPass::Hooks Hooks(std::function<bool(const classad::ClassAd&)> here = nullptr) {
    return {.idle_ad = [this](const JobKey& k) -> const classad::ClassAd* {
              auto it = ads.find(k);
              return it == ads.end() ? nullptr : &it->second;
            },
            .may_run_here = here ? here : [](const classad::ClassAd&) { return true; }};
  }
};

const char* kSmall = "[ Memory = 1024; Requirements = true; Name = \"small\" ]";
const char* kBig = "[ Memory = 8192; Requirements = true; Name = \"big\" ]";
const char* kWantsMemory =
    "[ RequestMemory = 2048; Requirements = TARGET.Memory >= RequestMemory; Rank = "
    "TARGET.Memory ]";
const char* kAny = "[ Requirements = true ]";

// Runs slices until the pass is over; every match takes its slot.
std::vector<NegotiationPass::Slice> RunPass(NegotiationPass& pass, Jobs& jobs,
                                            std::vector<FakeSource*> sources) {
  std::vector<NegotiationPass::Slice> slices;
  do {
    slices.push_back(pass.Run(jobs.idle));
    for (const auto& m : slices.back().matches) {
      sources.at(m.source)->Take(m.slot);
      jobs.ads.erase(m.job);  // no longer idle
    }
  } while (!slices.back().over && slices.size() < 10000);
  return slices;
}

std::vector<JobKey> Matched(const std::vector<NegotiationPass::Slice>& slices) {
  std::vector<JobKey> matched;
  for (const auto& s : slices)
    for (const auto& m : s.matches) matched.push_back(m.job);
  return matched;
}

TEST(NegotiationPass, JobsInTheirOrderTakeTheBestFreeSlotOnce) {
  FakeSource src;
  src.Add("slot1@a", kSmall);
  src.Add("slot2@a", kBig);
  src.Add("slot3@a", kAny);
  Jobs jobs;
  jobs.Add(2, 0, kWantsMemory);
  jobs.Add(1, 0, kAny);
  jobs.Add(3, 0, kWantsMemory, /*prio=*/5);  // first, for its priority
  StepClock clock(0);
  NegotiationPass pass({&src}, jobs.Hooks(), clock, 0.01);
  auto slices = RunPass(pass, jobs, {&src});
  ASSERT_EQ(slices.size(), 1u);
  const auto& m = slices[0].matches;
  ASSERT_EQ(m.size(), 2u);
  // 3.0 has priority and takes the big slot its Rank prefers; 2.0 then finds no slot of
  // 2048 MB (slot3 has no Memory), and 1.0 takes one of the others.
  EXPECT_EQ(m[0].job, (JobKey{3, 0}));
  EXPECT_EQ(m[0].slot, "slot2@a");
  EXPECT_EQ(m[1].job, (JobKey{1, 0}));
  ASSERT_TRUE(slices[0].summary);
  EXPECT_EQ(slices[0].summary->matched, 2u);
  EXPECT_EQ(slices[0].summary->considered, 3u);
  EXPECT_EQ(slices[0].summary->slices, 1u);
  EXPECT_FALSE(pass.active());
}

TEST(NegotiationPass, SourcesAreAskedInTheirOrder) {
  FakeSource own, other;
  own.Add("slot1@own", kSmall);
  other.Add("slot1@other", kBig);
  Jobs jobs;
  jobs.Add(1, 0, kAny);          // both match; the own pool's slot is taken though Rank is flat
  jobs.Add(2, 0, kWantsMemory);  // only the other source has a slot big enough
  jobs.Add(3, 0, kAny);          // nothing left
  StepClock clock(0);
  NegotiationPass pass({&own, &other}, jobs.Hooks(), clock, 0.01);
  auto slices = RunPass(pass, jobs, {&own, &other});
  ASSERT_EQ(slices.back().matches.size(), 2u);
  EXPECT_EQ(slices.back().matches[0].source, 0u);
  EXPECT_EQ(slices.back().matches[0].slot, "slot1@own");
  EXPECT_EQ(slices.back().matches[1].source, 1u);
  EXPECT_EQ(slices.back().matches[1].slot, "slot1@other");
  EXPECT_EQ(jobs.ads.count(JobKey{3, 0}), 1u);  // still idle
}

TEST(NegotiationPass, AKindThatMatchedNoneIsSkippedUntilASlotFrees) {
  FakeSource src;
  src.Add("slot1@a", kSmall);
  Jobs jobs;
  for (int p = 0; p < 50; ++p) jobs.Add(1, p, kWantsMemory);  // one kind, no slot fits
  jobs.Add(2, 0, kAny);
  StepClock clock(0);
  NegotiationPass pass({&src}, jobs.Hooks(), clock, 0.01);
  auto slices = RunPass(pass, jobs, {&src});
  ASSERT_TRUE(slices.back().summary);
  EXPECT_EQ(slices.back().summary->considered, 2u);  // the first of the kind, and 2.0
  EXPECT_EQ(slices.back().summary->skipped, 49u);
  ASSERT_EQ(slices.back().matches.size(), 1u);
  EXPECT_EQ(slices.back().matches[0].job, (JobKey{2, 0}));
  // A new slot (a new ad: the kinds are told again) that fits: the kind is tried and matches.
  src.Add("slot2@a", kBig);
  auto again = RunPass(pass, jobs, {&src});
  ASSERT_EQ(again.back().matches.size(), 1u);
  EXPECT_EQ(again.back().matches[0].job, (JobKey{1, 0}));
}

TEST(NegotiationPass, KindsAreToldAgainOnlyWhenTheSourcesAdsChange) {
  FakeSource src;
  src.Add("slot1@a", kSmall);
  Jobs jobs;
  jobs.Add(1, 0, kWantsMemory);
  StepClock clock(0);
  NegotiationPass pass({&src}, jobs.Hooks(), clock, 0.01);
  RunPass(pass, jobs, {&src});
  RunPass(pass, jobs, {&src});
  EXPECT_EQ(src.all_ads_calls, 1);
  src.Add("slot2@a", kSmall);
  RunPass(pass, jobs, {&src});
  EXPECT_EQ(src.all_ads_calls, 2);
}

TEST(NegotiationPass, ASlicedPassResumesAfterItsPlaceAndTriesEachJobOnce) {
  FakeSource src;
  for (int s = 0; s < 30; ++s) src.Add("slot" + std::to_string(s) + "@a", kAny);
  Jobs jobs;
  // Each job its own kind (a distinct attribute its Requirements reads), so none is skipped.
  for (int p = 0; p < 100; ++p)
    jobs.Add(1, p, "[ Tag = " + std::to_string(p) + "; Requirements = MY.Tag >= 0 ]");
  // Each reading of the clock moves it 1 ms: a 10 ms slice tries a handful of jobs.
  StepClock clock(0.001);
  NegotiationPass pass({&src}, jobs.Hooks(), clock, 0.01);
  auto slices = RunPass(pass, jobs, {&src});
  ASSERT_GT(slices.size(), 3u);
  auto matched = Matched(slices);
  ASSERT_EQ(matched.size(), 30u);  // one per slot, in the jobs' order
  for (int p = 0; p < 30; ++p) EXPECT_EQ(matched[p], (JobKey{1, p}));
  ASSERT_TRUE(slices.back().summary);
  EXPECT_EQ(slices.back().summary->slices, slices.size());
  EXPECT_EQ(slices.back().summary->considered, 30u);  // the pass stops once no slot is free
  for (size_t i = 0; i + 1 < slices.size(); ++i) EXPECT_FALSE(slices[i].over);
}

TEST(NegotiationPass, AChangeDuringAPassAsksForAnotherOne) {
  FakeSource src;
  src.Add("slot1@a", kAny);
  src.Add("slot2@a", kAny);
  Jobs jobs;
  for (int p = 0; p < 20; ++p)
    jobs.Add(1, p, "[ Tag = " + std::to_string(p) + "; Requirements = MY.Tag < 0 ]");
  StepClock clock(0.004);
  NegotiationPass pass({&src}, jobs.Hooks(), clock, 0.01);
  EXPECT_FALSE(pass.Again());  // no pass going: the caller starts one
  auto first = pass.Run(jobs.idle);
  ASSERT_FALSE(first.over);
  EXPECT_TRUE(pass.Again());
  // A job before the pass's place becomes idle: this pass does not go back for it ...
  jobs.Add(0, 0, kAny);
  std::vector<NegotiationPass::Slice> rest = RunPass(pass, jobs, {&src});
  for (const auto& s : rest) EXPECT_TRUE(s.matches.empty());
  ASSERT_TRUE(rest.back().over);
  EXPECT_TRUE(rest.back().again);  // ... the next one does
  auto next = RunPass(pass, jobs, {&src});
  auto matched = Matched(next);
  ASSERT_EQ(matched.size(), 1u);
  EXPECT_EQ(matched[0], (JobKey{0, 0}));
  EXPECT_FALSE(next.back().again);
}

TEST(NegotiationPass, AJobThatMayNotRunHereIsOfferedOnlySitesSlots) {
  FakeSource src;
  src.Add("slot1@desktop", kBig);
  Jobs jobs;
  jobs.Add(1, 0, "[ SiteImage = true; Requirements = true ]");
  jobs.Add(1, 1, "[ SiteImage = true; Requirements = true ]");
  jobs.Add(2, 0, kAny);
  StepClock clock(0);
  auto here = [](const classad::ClassAd& ad) {
    return !ad.EvaluateBool("SiteImage").value_or(false);
  };
  NegotiationPass pass({&src}, jobs.Hooks(here), clock, 0.01);
  auto slices = RunPass(pass, jobs, {&src});
  // The site images wait; the job that may run here takes the desktop's slot.
  ASSERT_EQ(slices.back().matches.size(), 1u);
  EXPECT_EQ(slices.back().matches[0].job, (JobKey{2, 0}));
  src.Free("slot1@desktop");
  src.Add("glidein-1@site", kSmall, /*site=*/true);
  auto next = RunPass(pass, jobs, {&src});
  // The first site image takes the site's slot; the second finds no site slot left and is not
  // given the desktop's, which stays free.
  ASSERT_EQ(next.back().matches.size(), 1u);
  EXPECT_EQ(next.back().matches[0].job, (JobKey{1, 0}));
  EXPECT_EQ(next.back().matches[0].slot, "glidein-1@site");
  EXPECT_EQ(jobs.ads.count(JobKey{1, 1}), 1u);
  EXPECT_EQ(src.FreeSlots().size(), 1u);
}

TEST(NegotiationPass, AJobNoLongerIdleIsPassedOver) {
  FakeSource src;
  src.Add("slot1@a", kAny);
  Jobs jobs;
  jobs.Add(1, 0, kAny);
  jobs.Add(2, 0, kAny);
  jobs.ads.erase(JobKey{1, 0});  // held since it was listed
  StepClock clock(0);
  NegotiationPass pass({&src}, jobs.Hooks(), clock, 0.01);
  auto slices = RunPass(pass, jobs, {&src});
  ASSERT_EQ(slices.back().matches.size(), 1u);
  EXPECT_EQ(slices.back().matches[0].job, (JobKey{2, 0}));
  EXPECT_EQ(slices.back().summary->considered, 1u);
}

}  // namespace
}  // namespace kite::agent
