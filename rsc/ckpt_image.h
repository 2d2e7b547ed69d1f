// The image a transparent checkpoint writes (docs/checkpoints.md), and the checks a restore makes
// of its tables before it trusts them. Header-only and free of the C++ library, so that the
// preloaded library's restore (which runs before the program's own initialisation, and later in a
// signal handler) and the fuzz target share it.
//
// Layout: Header, then `regions` Region entries, `fds` FdEntry, `maps` MapEntry, then each
// region's bytes in order, then the bytes that were waiting in each pipe the process reads (its
// kPipe entries with a read end, in order); the file ends there.
//
// A job whose executable is a script is checkpointed as a tree of such images, one per process
// (the shell and its children): TreeHeader, `count` TreeEntry, then each process's image at its
// entry's offset.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace kite::rsc::ckpt {

constexpr char kMagic[8] = {'K', 'I', 'T', 'E', 'C', 'K', 'P', '2'};
constexpr char kTreeMagic[8] = {'K', 'I', 'T', 'E', 'T', 'R', 'E', '1'};
// At most this many processes in a tree: a shell and its children.
constexpr size_t kMaxTree = 16;
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
enum FdKind : uint32_t { kFile = 0, kDir = 1, kStandIn = 2, kPipe = 3 };
// What a pipe may hold at a checkpoint, in all (a pipe holds 64 KiB unless it was made larger).
constexpr int64_t kMaxPipeBytes = int64_t{1} << 20;

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
  int64_t offset;  // kPipe: how many bytes waited in it (a read end), saved after the regions
  int64_t size;    // a regular file's, at the checkpoint; kPipe: the pipe's inode (which pipe)
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
  // The process as its program knew it (the first run's ids: a restored process keeps them), and
  // the executable a restore starts for it.
  int64_t pid, ppid;
  char exe[kPath];
};

struct TreeHeader {
  char magic[8];
  uint64_t count;
};

struct TreeEntry {
  int64_t pid, ppid;  // as the programs know them (Header::pid, Header::ppid)
  uint64_t offset, length;
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
  if (!Terminated(h.cwd, sizeof h.cwd) || !Terminated(h.sandbox, sizeof h.sandbox) ||
      !Terminated(h.exe, sizeof h.exe))
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
  int64_t pipe_bytes = 0;
  for (uint64_t i = 0; i < h.fds; ++i) {
    const FdEntry& e = fds[i];
    if (e.fd < 0 || e.fd >= 65536 || e.kind > kPipe)
      return "the image is damaged (a descriptor's number or kind)";
    if (e.kind == kPipe) {
      if (e.offset < 0 || e.offset > kMaxPipeBytes - pipe_bytes)
        return "the image is damaged (what waited in a pipe)";
      pipe_bytes += e.offset;
      bytes += static_cast<uint64_t>(e.offset);
    }
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

// Whether entry `i`'s parent is one of the tree's `count` entries (else it is the first process).
inline bool ParentInTree(const TreeEntry* e, uint64_t count, uint64_t i) {
  for (uint64_t j = 0; j < count; ++j)
    if (e[j].pid == e[i].ppid) return true;
  return false;
}

// The first thing wrong with a tree's table (nullptr: nothing), given the file's size: entries
// inside the file and apart, distinct process ids, and one root (the only process whose parent
// is not in the tree) with every other process its child.
inline const char* CheckTree(const TreeHeader& t, const TreeEntry* e, uint64_t file_bytes) {
  for (size_t i = 0; i < 8; ++i)
    if (t.magic[i] != kTreeMagic[i]) return "not a Kite checkpoint of a process tree";
  if (t.count == 0 || t.count > kMaxTree)
    return "the checkpoint is damaged (its number of processes)";
  uint64_t end = sizeof(TreeHeader) + t.count * sizeof(TreeEntry);
  int roots = 0;
  int64_t root = 0;
  for (uint64_t i = 0; i < t.count; ++i) {
    if (e[i].pid <= 0 || e[i].ppid < 0) return "the checkpoint is damaged (a process id)";
    for (uint64_t j = 0; j < i; ++j)
      if (e[j].pid == e[i].pid) return "the checkpoint is damaged (a process twice)";
    if (e[i].offset != end || e[i].length < sizeof(Header) || e[i].length > file_bytes ||
        e[i].offset > file_bytes - e[i].length)
      return "the checkpoint is damaged (a process's image is not where its table says)";
    end = e[i].offset + e[i].length;
    if (!ParentInTree(e, t.count, i)) {
      ++roots;
      root = e[i].pid;
    }
  }
  if (end != file_bytes) return "the checkpoint is damaged (it is not as long as its table says)";
  if (roots != 1) return "the checkpoint is damaged (not one process tree)";
  for (uint64_t i = 0; i < t.count; ++i)
    if (e[i].pid != root && e[i].ppid != root)
      return "the checkpoint is damaged (a process is not the first one's child)";
  return nullptr;
}

}  // namespace kite::rsc::ckpt
