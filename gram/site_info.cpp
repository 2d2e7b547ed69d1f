// Writing the site's ClassAd for `info`.
#include "gram/site_info.h"

#include <algorithm>
#include <cstdint>

#include <sys/utsname.h>

#include <cctype>

#include "common/strings.h"

namespace kite::gram {
namespace {

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string Arch() {
  struct utsname u {};
  if (::uname(&u) != 0) return "";
  std::string m = u.machine;
  if (m == "x86_64") return "X86_64";
  if (m == "aarch64") return "aarch64";
  for (auto& c : m) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return m;
}

}  // namespace

std::string SiteAttributeLines(const std::string& file_text) {
  std::string out;
  for (const auto& raw : Split(file_text, '\n')) {
    std::string_view line = Trim(raw);
    if (line.empty() || line.starts_with('#')) continue;
    if (line.ends_with(';')) line.remove_suffix(1);
    out += (out.empty() ? "" : "; ") + std::string(line);
  }
  return out;
}

std::string SiteAdText(const batch::SiteInfo& info, const std::string& extra, double now) {
  std::string ad = "[ BatchSystem = " + Quote(info.batch_system) + "; Queues = {";
  for (size_t i = 0; i < info.queues.size(); ++i) {
    ad += (i ? ", " : " ") + Quote(info.queues[i]);
  }
  ad += info.queues.empty() ? "}" : " }";
  if (!info.default_queue.empty()) ad += "; DefaultQueue = " + Quote(info.default_queue);
  auto num = [&](const char* name, int64_t v, int64_t max = INT64_MAX) {
    ad += std::string("; ") + name + " = " + std::to_string(std::min(v, max));
  };
  num("TotalCpus", info.total_cpus, kMaxSiteCount);
  num("FreeCpus", info.free_cpus, kMaxSiteCount);
  num("Memory", info.memory_mb, kMaxSiteMemoryMiB);
  num("MaxWallTime", info.max_walltime_s > 0 ? info.max_walltime_s : kNoWallTimeLimit,
      kNoWallTimeLimit);
  num("RunningJobs", info.running_jobs, kMaxSiteCount);
  num("PendingJobs", info.pending_jobs, kMaxSiteCount);
  if (info.estimated_start_s) {
    num("BatchEstimatedStart",
        static_cast<int64_t>(std::min(*info.estimated_start_s, kMaxSiteEstimatedStart) + 0.5),
        static_cast<int64_t>(kMaxSiteEstimatedStart));
  }
  ad += "; OpSys = \"LINUX\"; Arch = " + Quote(Arch());
  num("KiteProtocol", 1);
  num("SiteTime", static_cast<int64_t>(now));
  if (!extra.empty()) ad += "; " + extra;
  return ad + " ]";
}

}  // namespace kite::gram
