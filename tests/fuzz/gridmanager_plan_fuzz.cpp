// Fuzzes the gridmanager's reading of a job ad from the agent: bytes as an old-syntax ad (and as
// a GridResource value), worked out into a site description. Anything may be refused; nothing may
// crash, and whatever is accepted must make names, ids and resource requests the site accepts.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "classad/io.h"
#include "gridmanager/grid_job.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  (void)kite::gridmanager::ParseGridResource(text);
  auto ad = kite::classad::ParseOldAd(text);
  if (!ad) return 0;
  auto plan = kite::gridmanager::PlanGridJob(*ad);
  if (plan) {
    for (const auto& f : plan->desc.stage_in) {
      if (!kite::gram::ValidRelativeName(f.gass)) std::abort();
    }
    if (plan->resource.port == 0) std::abort();
    // What reaches the batch system is what the site's protocol parser accepts.
    const auto& r = plan->desc.resources;
    if (r.cpus < 0 || r.cpus > kite::gram::kMaxRequestCpus || r.memory_mb < 0 ||
        r.memory_mb > kite::gram::kMaxRequestMemoryMb || r.walltime_s < 0 ||
        r.walltime_s > kite::gram::kMaxRequestWalltimeS) {
      std::abort();
    }
    if (!r.queue.empty() && !kite::gram::ValidBatchName(r.queue)) std::abort();
    if (!r.project.empty() && !kite::gram::ValidBatchName(r.project)) std::abort();
  }
  if (!kite::gram::ValidRequestId(kite::gridmanager::RequestIdBase(*ad, 1) + "/submit")) {
    std::abort();
  }
  return 0;
}
