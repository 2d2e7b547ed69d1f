// libFuzzer target: arbitrary bytes as a transparent checkpoint's image (rsc/ckpt_image.h), read
// as a restore reads it: the header, then the tables its counts announce, then CheckTables. Must
// never crash or read past the bytes; an image it accepts must be exactly as long as its tables
// say, with regions in order inside user space. Bytes that start as a process tree's are read as
// a restore of a tree reads them: its table, CheckTree, then each process's image as above; a
// tree it accepts has its images one after another to the end, and one first process.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rsc/ckpt_image.h"

using namespace kite::rsc::ckpt;

namespace {

void OneImage(const uint8_t* data, size_t size) {
  if (size < sizeof(Header)) return;
  Header h;
  std::memcpy(&h, data, sizeof h);
  if (h.regions > kMaxRegions || h.fds > kMaxFds || h.maps > kMaxMaps) {
    if (CheckTables(h, nullptr, nullptr, nullptr, size) == nullptr) std::abort();
    return;
  }
  size_t at = sizeof h;
  size_t need =
      at + h.regions * sizeof(Region) + h.fds * sizeof(FdEntry) + h.maps * sizeof(MapEntry);
  if (need > size) return;  // a restore stops at "the image is too short"
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
}

void Tree(const uint8_t* data, size_t size) {
  TreeHeader t;
  if (size < sizeof t) return;
  std::memcpy(&t, data, sizeof t);
  if (t.count > kMaxTree) return;  // a restore stops there
  if (size < sizeof t + t.count * sizeof(TreeEntry)) return;
  std::vector<TreeEntry> e(t.count);
  std::memcpy(e.data(), data + sizeof t, e.size() * sizeof(TreeEntry));
  if (CheckTree(t, e.data(), size) != nullptr) return;
  uint64_t at = sizeof t + t.count * sizeof(TreeEntry);
  int roots = 0;
  for (const TreeEntry& x : e) {
    if (x.offset != at || x.offset + x.length > size) std::abort();
    at += x.length;
    bool parent_here = false;
    for (const TreeEntry& y : e) parent_here = parent_here || y.pid == x.ppid;
    roots += !parent_here;
    OneImage(data + x.offset, x.length);
  }
  if (at != size || roots != 1) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 8 && std::memcmp(data, kTreeMagic, 8) == 0)
    Tree(data, size);
  else
    OneImage(data, size);
  return 0;
}
