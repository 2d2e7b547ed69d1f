// What a running job's processes use, read from /proc, for the attributes HTCondor keeps up to
// date while a job runs (RemoteUserCpu, RemoteSysCpu, ResidentSetSize, ImageSize, MemoryUsage),
// so that policies such as periodic_hold = MemoryUsage > 2048 can fire.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace kite::agent {

// One process's line in /proc/PID/stat, the fields Kite reads.
struct ProcStat {
  pid_t pid = 0;
  pid_t pgrp = 0;
  uint64_t utime = 0, stime = 0;    // clock ticks, this process
  uint64_t cutime = 0, cstime = 0;  // clock ticks, its reaped children
  uint64_t vsize = 0;               // bytes
  int64_t rss = 0;                  // pages
};

// Parses a /proc/PID/stat line; nullopt when it is not one. The command name (field 2) is in
// parentheses and may hold spaces and parentheses itself: fields are counted after its last ')'.
std::optional<ProcStat> ParseProcStat(std::string_view line);

// A process group's use, summed over its processes.
struct Usage {
  double user_cpu = 0, sys_cpu = 0;  // seconds, processes alive and their reaped children
  int64_t rss_kib = 0, image_kib = 0;
};

// Reads every process under `proc` (normally "/proc") once and sums, per process group in
// `groups`, what its processes other than the group's leader use (the leader is the job's
// kite-exec wrapper, not the job).
std::unordered_map<pid_t, Usage> UsageOfGroups(const std::unordered_set<pid_t>& groups,
                                               const std::string& proc = "/proc");

}  // namespace kite::agent
