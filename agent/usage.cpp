#include "agent/usage.h"

#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <vector>

#include "common/files.h"

namespace kite::agent {

namespace {

template <typename T>
bool ToNumber(std::string_view s, T& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

std::vector<std::string_view> Fields(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n')) ++i;
    size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\n') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

}  // namespace

std::optional<ProcStat> ParseProcStat(std::string_view line) {
  auto open = line.find(" (");
  auto close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  ProcStat st;
  if (!ToNumber(line.substr(0, open), st.pid) || st.pid <= 0) return std::nullopt;
  // After the name: field 3 (state) is rest[0], so field N is rest[N - 3].
  auto rest = Fields(line.substr(close + 1));
  if (rest.size() < 22) return std::nullopt;
  bool ok = ToNumber(rest[2], st.pgrp) && ToNumber(rest[11], st.utime) &&
            ToNumber(rest[12], st.stime) && ToNumber(rest[13], st.cutime) &&
            ToNumber(rest[14], st.cstime) && ToNumber(rest[20], st.vsize) &&
            ToNumber(rest[21], st.rss);
  if (!ok) return std::nullopt;
  return st;
}

std::unordered_map<pid_t, Usage> UsageOfGroups(const std::unordered_set<pid_t>& groups,
                                               const std::string& proc) {
  std::unordered_map<pid_t, Usage> out;
  if (groups.empty()) return out;
  static const double kTick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  static const int64_t kPageKib = ::sysconf(_SC_PAGESIZE) / 1024;
  DIR* dir = ::opendir(proc.c_str());
  if (!dir) return out;
  while (dirent* e = ::readdir(dir)) {
    pid_t pid = 0;
    std::string_view name = e->d_name;
    if (!ToNumber(name, pid)) continue;
    auto text = ReadFile(proc + "/" + std::string(name) + "/stat", {.max_bytes = 4096});
    if (!text) continue;  // it ended meanwhile
    auto st = ParseProcStat(*text);
    if (!st || st->pid == st->pgrp || !groups.count(st->pgrp)) continue;
    Usage& u = out[st->pgrp];
    u.user_cpu += static_cast<double>(st->utime + st->cutime) / kTick;
    u.sys_cpu += static_cast<double>(st->stime + st->cstime) / kTick;
    u.rss_kib += st->rss * kPageKib;
    u.image_kib += static_cast<int64_t>(st->vsize / 1024);
  }
  ::closedir(dir);
  return out;
}

}  // namespace kite::agent
