// libFuzzer target: what the broker reads from a site (docs/broker.md) — the gatekeeper's `info`
// reply, the site ad in it, and the Slurm and Grid Engine answers a job manager makes a site ad
// from. Any bytes give an ad or a refusal, never a crash; an accepted ad holds what the broker
// relies on, and the site-info readers give counts of 0 or more.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "agent/site_ads.h"
#include "gram/batch/sge_format.h"
#include "gram/batch/slurm_format.h"
#include "gram/protocol.h"
#include "gram/site_info.h"

namespace {

void CheckAd(std::string_view text) {
  auto ad = kite::agent::ParseSiteAd(text);
  if (!ad) return;
  auto total = ad->EvaluateInt("TotalCpus"), free = ad->EvaluateInt("FreeCpus");
  if (!total || !free || *free > *total || *free < 0) std::abort();
  if (!ad->EvaluateString("BatchSystem")) std::abort();
  kite::agent::SiteState s;
  if (!(kite::agent::EstimateWait(*ad, s) >= 0)) std::abort();
  if (kite::agent::SiteRoom(*ad, s, 16) < 0) std::abort();
}

void CheckInfo(const kite::Result<kite::gram::batch::SiteInfo>& info) {
  if (!info) return;
  if (info->total_cpus < 0 || info->free_cpus < 0 || info->running_jobs < 0 ||
      info->pending_jobs < 0 || info->max_walltime_s < 0 || info->memory_mb < 0) {
    std::abort();
  }
  // What a gatekeeper writes of it, the broker reads (unless the free CPUs exceed the total,
  // which a batch system may report and the broker refuses).
  auto ad = kite::agent::ParseSiteAd(kite::gram::SiteAdText(*info, "", 0));
  if (!ad && info->free_cpus <= info->total_cpus) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckAd(text);
  if (auto ad = kite::gram::ParseInfoReply(text)) CheckAd(*ad);
  // The same bytes cut in three, as the answers of three commands.
  size_t a = size / 3, b = 2 * size / 3;
  std::string_view x = text.substr(0, a), y = text.substr(a, b - a), z = text.substr(b);
  CheckInfo(kite::gram::batch::slurm::ParseSiteInfo(x, y, z, 1.8e9));
  CheckInfo(kite::gram::batch::sge::ParseSiteInfo(x, y, z, {std::string(text)}));
  return 0;
}
