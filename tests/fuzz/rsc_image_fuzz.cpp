// libFuzzer target: arbitrary bytes as a transparent checkpoint's image (rsc/ckpt_image.h), read
// as a restore reads it: the header, then the tables its counts announce, then CheckTables. Must
// never crash or read past the bytes; an image it accepts must be exactly as long as its tables
// say, with regions in order inside user space.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rsc/ckpt_image.h"

using namespace kite::rsc::ckpt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < sizeof(Header)) return 0;
  Header h;
  std::memcpy(&h, data, sizeof h);
  if (h.regions > kMaxRegions || h.fds > kMaxFds || h.maps > kMaxMaps) {
    if (CheckTables(h, nullptr, nullptr, nullptr, size) == nullptr) std::abort();
    return 0;
  }
  size_t at = sizeof h;
  size_t need =
      at + h.regions * sizeof(Region) + h.fds * sizeof(FdEntry) + h.maps * sizeof(MapEntry);
  if (need > size) return 0;  // a restore stops at "the image is too short"
  std::vector<Region> regions(h.regions);
  std::vector<FdEntry> fds(h.fds);
  std::vector<MapEntry> maps(h.maps);
  std::memcpy(regions.data(), data + at, regions.size() * sizeof(Region));
  at += regions.size() * sizeof(Region);
  std::memcpy(fds.data(), data + at, fds.size() * sizeof(FdEntry));
  at += fds.size() * sizeof(FdEntry);
  std::memcpy(maps.data(), data + at, maps.size() * sizeof(MapEntry));
  const char* bad = CheckTables(h, regions.data(), fds.data(), maps.data(), size);
  if (bad == nullptr) {
    uint64_t total = need, end = 0;
    for (const Region& r : regions) {
      if (r.start < end || r.end <= r.start || r.end > (uint64_t{1} << 47)) std::abort();
      end = r.end;
      total += r.end - r.start;
    }
    if (total != size) std::abort();
  }
  return 0;
}
