// Parsing large clusters: `queue 10000` with everything common, with per-proc values, with
// queue items, and with macro functions in per-proc values.
#include <benchmark/benchmark.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "common/files.h"
#include "submit/submit_file.h"

namespace {

// A scratch directory holding an executable, shared by every benchmark of the run.
const std::string& ScratchDir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/kite-submit-bench-XXXXXX";
    std::string d = ::mkdtemp(tmpl);
    (void)kite::WriteFileAtomic(d + "/prog", "#!/bin/sh\n", 0755);
    return d;
  }();
  return dir;
}

void Run(benchmark::State& state, const std::string& text) {
  kite::submit::SubmitOptions options;
  options.cwd = ScratchDir();
  options.owner = "bench";
  size_t procs = 0;
  for (auto _ : state) {
    auto c = kite::submit::ParseSubmitText(text, "bench.sub", options);
    if (!c) {
      state.SkipWithError(c.error().message().c_str());
      return;
    }
    procs = c->procs.size();
    benchmark::DoNotOptimize(c);
  }
  state.counters["procs"] = static_cast<double>(procs);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(procs));
}

const char* kHeader =
    "universe = vanilla\n"
    "executable = prog\n"
    "requirements = Memory > 1024 && OpSys == \"LINUX\"\n"
    "periodic_remove = (time() - QDate) > 86400\n"
    "request_memory = 2GB\n"
    "+Project = \"bench\"\n";

void BM_Queue10000Common(benchmark::State& state) {
  Run(state, std::string(kHeader) + "arguments = -v --fast\noutput = out.txt\nqueue 10000\n");
}
BENCHMARK(BM_Queue10000Common)->Unit(benchmark::kMillisecond);

void BM_Queue10000PerProc(benchmark::State& state) {
  Run(state, std::string(kHeader) +
                 "arguments = \"--index $(Process) 'name $(Cluster).$(Process)'\"\n"
                 "output = out.$(Process)\nerror = err.$(Process)\nqueue 10000\n");
}
BENCHMARK(BM_Queue10000PerProc)->Unit(benchmark::kMillisecond);

void BM_Queue10000Items(benchmark::State& state) {
  std::string items;
  for (int i = 0; i < 10000; ++i) items += "item" + std::to_string(i) + (i % 10 == 9 ? "\n" : ", ");
  Run(state, std::string(kHeader) + "arguments = $(X)\nqueue X in (\n" + items + ")\n");
}
BENCHMARK(BM_Queue10000Items)->Unit(benchmark::kMillisecond);

// Macro functions in per-proc values ($F family, $INT of an expression of $(Process)).
void BM_Queue10000MacroFunctions(benchmark::State& state) {
  Run(state, std::string(kHeader) +
                 "input_file = /data/run/input.tar.gz\n"
                 "arguments = $Fn(input_file) $INT($(Process) * 2,%05d)\n"
                 "output = $Fnx(input_file).$(Process)\nqueue 10000\n");
}
BENCHMARK(BM_Queue10000MacroFunctions)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
