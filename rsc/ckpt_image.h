// The image a transparent checkpoint writes (docs/checkpoints.md), and the checks a restore makes
// of its tables before it trusts them. Header-only and free of the C++ library, so that the
// preloaded library's restore (which runs before the program's own initialisation, and later in a
// signal handler) and the fuzz target share it.
//
// Layout: Header, then `regions` Region entries, `fds` FdEntry, `maps` MapEntry, then each
// region's bytes in order; the file ends there.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace kite::rsc::ckpt {

constexpr char kMagic[8] = {'K', 'I', 'T', 'E', 'C', 'K', 'P', '1'};
// The image's file name at the top of the sandbox, and in a stored checkpoint.
constexpr char kImageName[] = "kite_ckpt.img";
// In the run's control folder (KITE_RSC_STATE): the process id of the job's program, the one
// process of the run that takes checkpoints and the only one the checkpoint signal is sent to.
constexpr char kProgramPidName[] = "kite_ckpt.pid";
constexpr size_t kPath = 4096;
constexpr size_t kMaxRegions = 4096;
constexpr size_t kMaxFds = 256;
constexpr size_t kMaxMaps = 1024;
constexpr size_t kStandInBytes = 4200;  // what a stand-in holds: "FLAGS PATH"
// Where in a stand-in it holds it: far past anything a program writes, so that bytes a program
// writes to it with calls the library cannot see are found apart from it (a sparse file; a file
// system that cannot hold it there has it at 0, and such writes then go unnoticed).
constexpr int64_t kStandInIdAt = int64_t{1} << 40;
constexpr size_t kPage = 4096;

enum RegionKind : uint32_t { kPlain = 0, kHeap = 1, kStack = 2 };
enum FdKind : uint32_t { kFile = 0, kDir = 1, kStandIn = 2 };

struct KSigaction {  // the kernel's own struct for rt_sigaction
  uint64_t handler, flags, restorer, mask;
};

struct Region {
  uint64_t start, end;
  uint32_t prot, kind;
};

struct FdEntry {
  int32_t fd;
  uint32_t kind;
  int32_t flags, fd_flags;
  int64_t offset;
  int64_t size;  // a regular file's, at the checkpoint
  char path[kPath];
  char stand_in[kStandInBytes];
  uint32_t stand_in_len, pad;
};

struct MapEntry {  // a file-backed map
  uint64_t start, end, offset;
  uint32_t prot, pad;
  uint64_t size, hash;  // of the whole file
  char path[512];
};

struct Header {
  char magic[8];
  uint64_t regions, fds, maps;
  uint64_t fs_base, vdso, stack_top;
  KSigaction actions[65];
  char cwd[kPath];
  char sandbox[kPath];
};

// Whether `s` ends within its `cap` bytes.
inline bool Terminated(const char* s, size_t cap) {
  for (size_t i = 0; i < cap; ++i)
    if (s[i] == '\0') return true;
  return false;
}

// The first thing wrong with an image's tables (nullptr: nothing), given its whole size in bytes.
inline const char* CheckTables(const Header& h, const Region* regions, const FdEntry* fds,
                               const MapEntry* maps, uint64_t image_bytes) {
  for (size_t i = 0; i < 8; ++i)
    if (h.magic[i] != kMagic[i]) return "not a Kite checkpoint image";
  if (h.regions > kMaxRegions || h.fds > kMaxFds || h.maps > kMaxMaps)
    return "the image is damaged (its tables are too long)";
  if (!Terminated(h.cwd, sizeof h.cwd) || !Terminated(h.sandbox, sizeof h.sandbox))
    return "the image is damaged (a path does not end)";
  constexpr uint64_t kUserTop = uint64_t{1} << 47;
  uint64_t bytes = sizeof(Header) + h.regions * sizeof(Region) + h.fds * sizeof(FdEntry) +
                   h.maps * sizeof(MapEntry);
  uint64_t previous_end = 0;
  int heaps = 0, stacks = 0;
  for (uint64_t i = 0; i < h.regions; ++i) {
    const Region& r = regions[i];
    if (r.start >= r.end || r.end > kUserTop || r.start % kPage || r.end % kPage)
      return "the image is damaged (a memory region is not one)";
    if (r.start < previous_end) return "the image is damaged (memory regions overlap)";
    // Readable; the heap and the stack writable too (a file's pages the loader wrote and then
    // made read-only are kept as they are).
    if (r.kind > kStack || (r.prot & ~7u) || !(r.prot & 1u) || (r.kind != kPlain && r.prot != 3u))
      return "the image is damaged (a memory region's kind or protection)";
    heaps += r.kind == kHeap;
    stacks += r.kind == kStack;
    if (r.kind == kStack && r.end != h.stack_top)
      return "the image is damaged (the stack does not end at its top)";
    previous_end = r.end;
    bytes += r.end - r.start;
  }
  if (heaps > 1 || stacks > 1) return "the image is damaged (more than one heap or stack)";
  for (uint64_t i = 0; i < h.fds; ++i) {
    const FdEntry& e = fds[i];
    if (e.fd < 3 || e.fd >= 65536 || e.kind > kStandIn)
      return "the image is damaged (a descriptor's number or kind)";
    if (!Terminated(e.path, sizeof e.path)) return "the image is damaged (a path does not end)";
    if (e.stand_in_len > sizeof e.stand_in || (e.kind == kStandIn && e.stand_in_len == 0))
      return "the image is damaged (a remote file's stand-in)";
  }
  for (uint64_t i = 0; i < h.maps; ++i) {
    if (maps[i].start >= maps[i].end || !Terminated(maps[i].path, sizeof maps[i].path))
      return "the image is damaged (a mapped file's entry)";
  }
  if (bytes != image_bytes) return "the image is damaged (it is not as long as its tables say)";
  return nullptr;
}

}  // namespace kite::rsc::ckpt
