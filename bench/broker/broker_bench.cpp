// The broker's matchmaking (docs/broker.md): 10,000 idle grid jobs against 100 site ads, as one
// pass of Broker::Match chooses — SiteMatcher (the Requirements of jobs of one kind evaluated
// once) and PreferredSite per job (its Rank against each matching site as it stands), each choice
// lengthening that site's queue (its EstimatedWaitTime) for the next. Beside it, the same pass
// evaluating every job's Requirements against every site too (no kinds).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "agent/site_ads.h"
#include "classad/io.h"

namespace kite::agent {
namespace {

constexpr int kSites = 100;
constexpr int kJobs = 10000;

std::vector<classad::ClassAd> SiteAds() {
  std::vector<classad::ClassAd> ads;
  for (int i = 0; i < kSites; ++i) {
    auto ad = classad::ParseNewAd(
        "[ BatchSystem = \"slurm\"; Queues = { \"batch\", \"short\" }; TotalCpus = 4096; "
        "FreeCpus = 100; Memory = 196608; MaxWallTime = 172800; RunningJobs = 3900; "
        "PendingJobs = 120; OpSys = \"LINUX\"; Arch = \"X86_64\"; KiteProtocol = 1 ]");
    ad->Assign("GridResource", "kite ce" + std::to_string(i) + ".example.org:9618/slurm");
    ad->Assign("Cost", 1.0 + i % 7);
    ad->Assign("EstimatedWaitTime", 30 * (i % 13));
    if (i % 10 == 0) ad->InsertText("Requirements", "TARGET.RequestMemory <= 8192");
    ads.push_back(std::move(*ad));
  }
  return ads;
}

// `kinds` clusters of jobs, alike within a cluster (their ProcId differs).
std::vector<classad::ClassAd> Jobs(int kinds) {
  std::vector<classad::ClassAd> jobs;
  for (int i = 0; i < kJobs; ++i) {
    auto ad = classad::ParseNewAd(
        "[ Owner = \"jane\"; JobUniverse = 9; GridResource = \"$$(GridResource)\"; "
        "RequestMemory = 4096; Requirements = TARGET.MaxWallTime >= 7200 && TARGET.Memory >= "
        "MY.RequestMemory && TARGET.Arch == \"X86_64\"; Rank = -TARGET.EstimatedWaitTime - "
        "10 * TARGET.Cost ]");
    ad->Assign("ClusterId", 1 + i % kinds);
    ad->Assign("ProcId", i / kinds);
    ad->Assign("RequestMemory", 4096 + (i % kinds));  // what makes the kinds differ
    jobs.push_back(std::move(*ad));
  }
  return jobs;
}

template <bool kCached>
void Pass(benchmark::State& state) {
  auto ads = SiteAds();
  auto jobs = Jobs(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    state.PauseTiming();
    auto work = ads;  // each pass composes its ads afresh
    std::vector<const classad::ClassAd*> sites;
    for (auto& a : work) sites.push_back(&a);
    state.ResumeTiming();
    std::vector<SiteChoice> choices;
    std::vector<SiteState> states(kSites);
    for (auto* a : sites) choices.push_back({a, 1000, 0});
    SiteMatcher matcher(sites);
    size_t placed = 0;
    for (const auto& job : jobs) {
      auto matching = kCached ? matcher.For(job) : MatchingSites(job, sites);
      auto best = PreferredSite(job, matching, choices);
      if (!best) continue;
      ++placed;
      --choices[*best].room;
      ++states[*best].kite_pending;
      choices[*best].estimated_wait = EstimateWait(work[*best], states[*best]);
      work[*best].Assign("EstimatedWaitTime",
                         static_cast<int64_t>(choices[*best].estimated_wait + 0.5));
    }
    benchmark::DoNotOptimize(placed);
  }
  state.SetItemsProcessed(state.iterations() * kJobs);
  state.counters["jobs"] = kJobs;
  state.counters["sites"] = kSites;
}

BENCHMARK(Pass<true>)->Name("MatchPass/kinds")->Arg(1)->Arg(100)->Unit(benchmark::kMillisecond);
BENCHMARK(Pass<false>)
    ->Name("MatchPass/every_job_evaluated")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kite::agent

BENCHMARK_MAIN();
