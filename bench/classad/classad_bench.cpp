// Benchmarks of the ClassAd library: parse, evaluate, unparse, JSON out, lookup, and the memory
// of small proc ads chained to a cluster ad.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <memory>
#include <string>
#include <vector>

#include "classad/classad.h"
#include "classad/expr.h"
#include "classad/io.h"
#include "classad/match.h"

namespace kite::classad {
namespace {

constexpr std::string_view kRequirements =
    "TARGET.Arch == \"X86_64\" && TARGET.OpSys == \"LINUX\" && TARGET.Memory >= 2048 && "
    "TARGET.Disk >= 100000 && (TARGET.HasFileTransfer =?= true || "
    "TARGET.FileSystemDomain == MY.FileSystemDomain)";

ClassAd MustParse(std::string_view old_syntax) {
  auto ad = ParseOldAd(old_syntax);
  if (!ad) std::abort();
  return std::move(*ad);
}

// A machine ad of the size a real slot advertises (trimmed to the usual suspects).
ClassAd MachineAd() {
  return MustParse(
      "MyType = \"Machine\"\nName = \"slot1@node17.example.org\"\nMachine = \"node17\"\n"
      "Arch = \"X86_64\"\nOpSys = \"LINUX\"\nOpSysAndVer = \"Debian12\"\nMemory = 8192\n"
      "Disk = 5000000\nCpus = 4\nKFlops = 1500000\nMips = 20000\nLoadAvg = 0.05\n"
      "State = \"Unclaimed\"\nActivity = \"Idle\"\nFileSystemDomain = \"example.org\"\n"
      "UidDomain = \"example.org\"\nHasFileTransfer = true\nHasJava = false\n"
      "StartdIpAddr = \"<10.0.0.17:9618>\"\nTotalSlots = 4\nSlotID = 1\n"
      "Start = true\nRank = 0\nCurrentRank = 0.0\nRequirements = START\n"
      "IsOwner = false\nKeyboardIdle = 1234\nConsoleIdle = 1234\nTotalMemory = 32768\n"
      "TotalDisk = 20000000\nTotalCpus = 16\nCondorVersion = \"$CondorVersion: 25.0.0 $\"\n");
}

// A typical 40-attribute job ad, as condor_q -l shows one.
ClassAd JobAd() {
  std::string text =
      "ClusterId = 1234\nProcId = 0\nOwner = \"alice\"\nUser = \"alice@example.org\"\n"
      "Cmd = \"/home/alice/bin/simulate\"\nArguments = \"--steps 1000 --seed 42\"\n"
      "Iwd = \"/home/alice/run\"\nJobStatus = 1\nJobUniverse = 5\nQDate = 1700000000\n"
      "EnteredCurrentStatus = 1700000000\nJobPrio = 0\nNiceUser = false\n"
      "RequestMemory = 2048\nRequestDisk = 100000\nRequestCpus = 1\n"
      "FileSystemDomain = \"example.org\"\nIn = \"/dev/null\"\nOut = \"out.0\"\n"
      "Err = \"err.0\"\nUserLog = \"/home/alice/run/log\"\nShouldTransferFiles = \"YES\"\n"
      "WhenToTransferOutput = \"ON_EXIT\"\nTransferInput = \"input.dat,params.txt\"\n"
      "NumJobStarts = 0\nNumRestarts = 0\nNumShadowStarts = 0\nExitStatus = 0\n"
      "ImageSize = 1000\nDiskUsage = 1\nRemoteWallClockTime = 0.0\nCumulativeSlotTime = 0\n"
      "LeaveJobInQueue = false\nOnExitRemove = true\nPeriodicHold = false\n"
      "PeriodicRelease = false\nPeriodicRemove = false\nMaxHosts = 1\nMinHosts = 1\n"
      "Requirements = ";
  text += kRequirements;
  text += "\n";
  return MustParse(text);
}

void BM_ParseRequirements(benchmark::State& state) {
  for (auto _ : state) {
    auto e = ParseExpr(kRequirements);
    benchmark::DoNotOptimize(e);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParseRequirements);

void BM_EvaluateRequirements(benchmark::State& state) {
  ClassAd job = JobAd();
  ClassAd machine = MachineAd();
  const Expr* req = job.Lookup("Requirements");
  bool all = true;
  for (auto _ : state) {
    Value v = EvaluateExpr(*req, &job, &machine);
    all = all && v.IsTrue();
    benchmark::DoNotOptimize(v);
  }
  if (!all) state.SkipWithError("Requirements did not evaluate to true");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EvaluateRequirements);

// One expression of each common kind, evaluated job against machine: the evaluator's hot paths.
void EvaluateExpression(benchmark::State& state, std::string_view text) {
  ClassAd job = JobAd();
  ClassAd machine = MachineAd();
  auto e = ParseExpr(text);
  if (!e) {
    state.SkipWithError("does not parse");
    return;
  }
  bool all = true;
  for (auto _ : state) {
    Value v = EvaluateExpr(**e, &job, &machine);
    all = all && !v.IsExceptional();
    benchmark::DoNotOptimize(v);
  }
  if (!all) state.SkipWithError("evaluated to UNDEFINED or ERROR");
  state.SetItemsProcessed(state.iterations());
}
void BM_EvalAttributeLookups(benchmark::State& state) {
  EvaluateExpression(state, "TARGET.Memory");
}
BENCHMARK(BM_EvalAttributeLookups);
void BM_EvalArithmetic(benchmark::State& state) {
  EvaluateExpression(state, "(TARGET.Memory * 1024 + TARGET.Disk / 2 - RequestMemory) * 3");
}
BENCHMARK(BM_EvalArithmetic);
void BM_EvalComparisons(benchmark::State& state) {
  EvaluateExpression(state,
                     "TARGET.Memory >= RequestMemory && TARGET.Arch == \"X86_64\" && "
                     "TARGET.LoadAvg < 0.5 && TARGET.Cpus != 0");
}
BENCHMARK(BM_EvalComparisons);
void BM_EvalRegexpCachedPattern(benchmark::State& state) {
  EvaluateExpression(state, "regexp(\"^slot[0-9]+@node[0-9]+\\\\.example\\\\.org$\", TARGET.Name)");
}
BENCHMARK(BM_EvalRegexpCachedPattern);
// The worst case of one regexp(): a backtracking pattern that exhausts the per-match budget and
// gives ERROR (issue 12; glibc's regex.h took ~70 s on this kind of input).
void BM_RegexpBudgetExhausted(benchmark::State& state) {
  std::string text = "regexp(\"(a|aa)+c\", \"" + std::string(60, 'a') + "bc\")";
  auto e = ParseExpr(text);
  bool all = true;
  for (auto _ : state) {
    Value v = EvaluateExpr(**e, nullptr, nullptr);
    all = all && v.IsError();
    benchmark::DoNotOptimize(v);
  }
  if (!all) state.SkipWithError("did not end in ERROR");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RegexpBudgetExhausted)->Unit(benchmark::kMillisecond);

void BM_EvalStringFunctions(benchmark::State& state) {
  EvaluateExpression(state,
                     "stringListIMember(\"alice\", \"bob, carol, alice\") && "
                     "strcat(Owner, \"@\", FileSystemDomain) == User");
}
BENCHMARK(BM_EvalStringFunctions);

void BM_SymmetricMatch(benchmark::State& state) {
  ClassAd job = JobAd();
  ClassAd machine = MachineAd();
  for (auto _ : state) benchmark::DoNotOptimize(Match(job, machine));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SymmetricMatch);

void BM_UnparseRequirements(benchmark::State& state) {
  auto e = ParseExpr(kRequirements);
  std::string out;
  for (auto _ : state) {
    out.clear();
    AppendUnparse(out, **e);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_UnparseRequirements);

void BM_JsonOut40AttributeJobAd(benchmark::State& state) {
  ClassAd job = JobAd();
  std::string out;
  for (auto _ : state) {
    out.clear();
    AppendJson(out, job);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(out.size()));
  state.counters["attrs"] = static_cast<double>(job.size());
}
BENCHMARK(BM_JsonOut40AttributeJobAd);

void BM_ParseOldAd40Attributes(benchmark::State& state) {
  std::string text = ToOldText(JobAd());
  for (auto _ : state) benchmark::DoNotOptimize(ParseOldAd(text));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParseOldAd40Attributes);

void BM_LookupByName(benchmark::State& state) {
  ClassAd job = JobAd();
  for (auto _ : state) benchmark::DoNotOptimize(job.Lookup("requestmemory"));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LookupByName);

// Heap bytes per small proc ad (5 literal attributes, chained to one cluster ad), measured with
// mallinfo2 around building 100,000 of them; the ClassAd objects live in one vector.
void BM_ProcAdMemory(benchmark::State& state) {
  ClassAd cluster = JobAd();
  double per_ad = 0;
  for (auto _ : state) {
    constexpr int kAds = 100000;
    size_t before = mallinfo2().uordblks;
    auto ads = std::make_unique<std::vector<ClassAd>>(kAds);
    for (int i = 0; i < kAds; ++i) {
      ClassAd& ad = (*ads)[i];
      ad.Assign("ProcId", i);
      ad.Assign("JobStatus", 1 + i % 5);
      ad.Assign("EnteredCurrentStatus", int64_t{1700000000} + i);
      ad.Assign("Args", "--index " + std::to_string(i));
      ad.Assign("GridJobId", "kite node17:9000/" + std::to_string(100000 + i));
      ad.SetParent(&cluster);
    }
    size_t after = mallinfo2().uordblks;
    per_ad = static_cast<double>(after - before) / kAds;
    benchmark::DoNotOptimize(ads);
  }
  state.counters["bytes_per_proc_ad"] = per_ad;
  state.counters["MB_per_100k_ads"] = per_ad * 100000 / 1e6;
}
BENCHMARK(BM_ProcAdMemory)->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kite::classad

BENCHMARK_MAIN();
