// Host facts for the slot ads.
#include "glidein/machine.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "common/clock.h"
#include "common/files.h"
#include "common/strings.h"

namespace kite::glidein {

std::string HostName() {
  struct utsname u;
  if (::uname(&u) != 0) return "localhost";
  return u.nodename;
}

std::string ArchName() {
  struct utsname u;
  if (::uname(&u) != 0) return "UNKNOWN";
  std::string m = u.machine;
  if (m == "i686" || m == "i586" || m == "i386") return "INTEL";
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::toupper(c); });
  return m;
}

std::optional<int64_t> ParseMemTotalMiB(std::string_view meminfo) {
  for (const auto& line : Split(meminfo, '\n')) {
    if (!line.starts_with("MemTotal:")) continue;
    std::string_view v = Trim(std::string_view(line).substr(9));
    int64_t kib = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), kib);
    if (ec != std::errc() || kib < 0) return std::nullopt;
    return kib / 1024;
  }
  return std::nullopt;
}

int64_t MemTotalMiB() {
  auto text = ReadFile("/proc/meminfo");
  return text ? ParseMemTotalMiB(*text).value_or(0) : 0;
}

std::optional<double> ParseLoadAvg(std::string_view loadavg) {
  std::string_view v = Trim(loadavg);
  double load = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), load);
  if (ec != std::errc() || load < 0) return std::nullopt;
  return load;
}

double LoadAvg() {
  auto text = ReadFile("/proc/loadavg");
  return text ? ParseLoadAvg(*text).value_or(0) : 0;
}

int64_t FreeDiskKiB(const std::string& dir) {
  struct statvfs s;
  if (::statvfs(dir.c_str(), &s) != 0) return 0;
  return static_cast<int64_t>(s.f_bavail * s.f_frsize / 1024);
}

int64_t IdleSince(const std::vector<std::string>& devices, double now) {
  int64_t idle = kNoInputDevice;
  for (const auto& d : devices) {
    struct stat st;
    if (::stat(d.c_str(), &st) != 0) continue;
    auto since = static_cast<int64_t>(now - static_cast<double>(st.st_atim.tv_sec));
    idle = std::min(idle, std::max<int64_t>(since, 0));
  }
  return idle;
}

std::vector<std::string> InputDevices() {
  std::vector<std::string> out;
  auto add_dir = [&](const char* dir, auto keep) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (keep(e.path().filename().string())) out.push_back(e.path().string());
    }
  };
  add_dir("/dev", [](const std::string& n) {
    return n.size() > 3 && n.starts_with("tty") && std::isdigit(static_cast<unsigned char>(n[3]));
  });
  add_dir("/dev/pts", [](const std::string& n) { return n != "ptmx"; });
  add_dir("/dev/input", [](const std::string& n) { return n.starts_with("event") || n == "mice"; });
  return out;
}

int64_t KeyboardIdle() {
  return IdleSince(InputDevices(), WallNow());
}

}  // namespace kite::glidein
