// What a startd reads about its host for the slot ads: names, architecture, memory, disk, load
// and how long the console has been idle. The parsers are pure, for tests; the readers use the
// real /proc, /dev and file systems.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kite::glidein {

// KeyboardIdle when no terminal or input device can be looked at: "idle for ever".
inline constexpr int64_t kNoInputDevice = 2147483647;

std::string HostName();  // uname's nodename
// HTCondor's Arch for uname's machine: "X86_64", "AARCH64", "PPC64LE", ... (upper case).
std::string ArchName();

// MemTotal of /proc/meminfo text, in MiB; nullopt when absent.
std::optional<int64_t> ParseMemTotalMiB(std::string_view meminfo);
int64_t MemTotalMiB();  // 0 when /proc/meminfo cannot be read
// The first field of /proc/loadavg text (the one-minute load).
std::optional<double> ParseLoadAvg(std::string_view loadavg);
double LoadAvg();  // 0 when /proc/loadavg cannot be read
// Free KiB for an unprivileged user in the file system holding `dir`; 0 on error.
int64_t FreeDiskKiB(const std::string& dir);

// Seconds since the newest access among `devices` (atimes, as HTCondor's startd reads them),
// at `now` (seconds since the epoch); kNoInputDevice when none can be looked at.
int64_t IdleSince(const std::vector<std::string>& devices, double now);
// The terminals and input devices of this host: /dev/tty[0-9]*, /dev/pts/*, /dev/input/*.
std::vector<std::string> InputDevices();
int64_t KeyboardIdle();  // IdleSince(InputDevices(), now)

}  // namespace kite::glidein
