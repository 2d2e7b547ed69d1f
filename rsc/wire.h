// Remote system calls (docs/remote-io.md): the requests a job's preloaded library (rsc/preload.cpp)
// sends, through its starter and startd, to the shadow in the agent, and the replies. Header-only
// and free of Kite's other libraries, so the preloaded library can include it.
//
// Encoding: little-endian fixed fields, then the variable parts. On the job's socket to its
// starter each message is preceded by its length (u32); between the starter and the agent it is
// the body of a pool frame (`rsc` / `rsc_reply`, pool/protocol.h).
//
//   request: u64 seq, u32 op, i32 flags, u32 mode, i64 handle, i64 offset, u64 size,
//            u32 path_len, u32 path2_len, u32 data_len, path, path2, data
//   reply:   u64 seq, i64 result, i32 error (an errno; 0: none), u32 data_len, data
//
// Reads and writes always name their offset (the library keeps each file's offset), so a request
// sent twice after a lost connection does the same thing twice; the shadow also answers a repeated
// `seq` from the reply it kept.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kite::rsc {

enum class Op : uint32_t {
  kOpen = 1,   // path, flags, mode -> result: a handle; with O_APPEND, data: the size (8 bytes)
  kClose,      // handle
  kPread,      // handle, offset, size -> data (result: its length; 0 at the end)
  kPwrite,     // handle, offset, data -> result: bytes written
  kAppend,     // handle, data: written at the end (O_APPEND) -> result: bytes written
  kFstat,      // handle -> data: a Stat
  kStat,       // path -> data: a Stat (links followed, inside the allowed paths)
  kLstat,      // path -> data: a Stat of the link itself
  kAccess,     // path, mode (R_OK...)
  kUnlink,     // path
  kRename,     // path -> path2
  kMkdir,      // path, mode
  kRmdir,      // path
  kTruncate,   // path, size
  kFtruncate,  // handle, size
  kFsync,      // handle
  kReaddir,    // handle (a directory), offset: entries to skip -> data: names, each NUL-ended
  // path: the program wrote to this remote file through calls the library does not see (glibc's
  // internal ones: bash's builtins); those bytes never left the execute node. Only reported.
  kUnseen,
  // Metadata, for the file system through the kernel (kite-rsc-fuse). None follows a symbolic
  // link in the last step of its path.
  kChmod,     // path, mode: permission bits only (more is EPERM)
  kChown,     // path, offset: uid, handle: gid (-1: unchanged); only to the user's own
  kUtimens,   // path, data: 4 x i64 (atime s, ns, mtime s, ns; ns may be UTIME_NOW or UTIME_OMIT)
  kSymlink,   // path: the link to make, path2: what it says
  kReadlink,  // path -> data: what the link says
  kLink,      // path: an existing file, path2: its new name
};
inline constexpr uint32_t kLastOp = static_cast<uint32_t>(Op::kLink);

inline constexpr size_t kMaxPath = 4096;
inline constexpr size_t kMaxData = 512 * 1024;  // per request; the library splits larger I/O
inline constexpr size_t kRequestFixed = 8 + 4 + 4 + 4 + 8 + 8 + 8 + 4 + 4 + 4;
inline constexpr size_t kReplyFixed = 8 + 8 + 4 + 4;
inline constexpr size_t kMaxMessage = kRequestFixed + 2 * kMaxPath + kMaxData;

struct Request {
  uint64_t seq = 0;
  Op op = Op::kOpen;
  int32_t flags = 0;
  uint32_t mode = 0;
  int64_t handle = 0;
  int64_t offset = 0;
  uint64_t size = 0;
  std::string path, path2, data;
};

struct Reply {
  uint64_t seq = 0;
  int64_t result = 0;
  int32_t error = 0;
  std::string data;
};

// What fstat/stat answer: the fields a program looks at.
struct Stat {
  uint64_t dev = 0, ino = 0, size = 0, blocks = 0;
  uint32_t mode = 0, nlink = 0, uid = 0, gid = 0, blksize = 0;
  int64_t atime_ns = 0, mtime_ns = 0, ctime_ns = 0;
};
inline constexpr size_t kStatSize = 4 * 8 + 5 * 4 + 3 * 8;

namespace wire {

inline void Put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline uint64_t Get(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return v;
}

}  // namespace wire

inline std::string Encode(const Request& r) {
  std::string out;
  out.reserve(kRequestFixed + r.path.size() + r.path2.size() + r.data.size());
  wire::Put(out, r.seq, 8);
  wire::Put(out, static_cast<uint32_t>(r.op), 4);
  wire::Put(out, static_cast<uint32_t>(r.flags), 4);
  wire::Put(out, r.mode, 4);
  wire::Put(out, static_cast<uint64_t>(r.handle), 8);
  wire::Put(out, static_cast<uint64_t>(r.offset), 8);
  wire::Put(out, r.size, 8);
  wire::Put(out, r.path.size(), 4);
  wire::Put(out, r.path2.size(), 4);
  wire::Put(out, r.data.size(), 4);
  out += r.path;
  out += r.path2;
  out += r.data;
  return out;
}

// nullopt when `in` is not exactly one well-formed request within the limits.
inline std::optional<Request> DecodeRequest(std::string_view in) {
  if (in.size() < kRequestFixed) return std::nullopt;
  Request r;
  r.seq = wire::Get(in, 0, 8);
  uint32_t op = static_cast<uint32_t>(wire::Get(in, 8, 4));
  if (op < 1 || op > kLastOp) return std::nullopt;
  r.op = static_cast<Op>(op);
  r.flags = static_cast<int32_t>(wire::Get(in, 12, 4));
  r.mode = static_cast<uint32_t>(wire::Get(in, 16, 4));
  r.handle = static_cast<int64_t>(wire::Get(in, 20, 8));
  r.offset = static_cast<int64_t>(wire::Get(in, 28, 8));
  r.size = wire::Get(in, 36, 8);
  size_t plen = wire::Get(in, 44, 4), p2len = wire::Get(in, 48, 4), dlen = wire::Get(in, 52, 4);
  if (plen > kMaxPath || p2len > kMaxPath || dlen > kMaxData) return std::nullopt;
  if (in.size() != kRequestFixed + plen + p2len + dlen) return std::nullopt;
  r.path.assign(in.substr(kRequestFixed, plen));
  r.path2.assign(in.substr(kRequestFixed + plen, p2len));
  r.data.assign(in.substr(kRequestFixed + plen + p2len, dlen));
  return r;
}

inline std::string Encode(const Reply& r) {
  std::string out;
  out.reserve(kReplyFixed + r.data.size());
  wire::Put(out, r.seq, 8);
  wire::Put(out, static_cast<uint64_t>(r.result), 8);
  wire::Put(out, static_cast<uint32_t>(r.error), 4);
  wire::Put(out, r.data.size(), 4);
  out += r.data;
  return out;
}

inline std::optional<Reply> DecodeReply(std::string_view in) {
  if (in.size() < kReplyFixed) return std::nullopt;
  Reply r;
  r.seq = wire::Get(in, 0, 8);
  r.result = static_cast<int64_t>(wire::Get(in, 8, 8));
  r.error = static_cast<int32_t>(wire::Get(in, 16, 4));
  size_t dlen = wire::Get(in, 20, 4);
  if (dlen > kMaxData || in.size() != kReplyFixed + dlen) return std::nullopt;
  r.data.assign(in.substr(kReplyFixed));
  return r;
}

inline std::string Encode(const Stat& s) {
  std::string out;
  for (uint64_t v : {s.dev, s.ino, s.size, s.blocks}) wire::Put(out, v, 8);
  for (uint32_t v : {s.mode, s.nlink, s.uid, s.gid, s.blksize}) wire::Put(out, v, 4);
  for (int64_t v : {s.atime_ns, s.mtime_ns, s.ctime_ns})
    wire::Put(out, static_cast<uint64_t>(v), 8);
  return out;
}

inline std::optional<Stat> DecodeStat(std::string_view in) {
  if (in.size() != kStatSize) return std::nullopt;
  Stat s;
  size_t at = 0;
  for (uint64_t* v : {&s.dev, &s.ino, &s.size, &s.blocks}) {
    *v = wire::Get(in, at, 8);
    at += 8;
  }
  for (uint32_t* v : {&s.mode, &s.nlink, &s.uid, &s.gid, &s.blksize}) {
    *v = static_cast<uint32_t>(wire::Get(in, at, 4));
    at += 4;
  }
  for (int64_t* v : {&s.atime_ns, &s.mtime_ns, &s.ctime_ns}) {
    *v = static_cast<int64_t>(wire::Get(in, at, 8));
    at += 8;
  }
  return s;
}

// kUtimens's data: access and modification times as seconds and nanoseconds (UTIME_NOW and
// UTIME_OMIT as they are); none: both now, as utimensat(2) takes a null pointer.
inline std::string EncodeTimes(const struct timespec* ts) {
  std::string out;
  for (int i = 0; i < 2; ++i) {
    struct timespec t = ts ? ts[i] : timespec{0, UTIME_NOW};
    wire::Put(out, static_cast<uint64_t>(t.tv_sec), 8);
    wire::Put(out, static_cast<uint64_t>(t.tv_nsec), 8);
  }
  return out;
}

// kChown's user or group: -1 for "unchanged" ((uid_t)-1 to chown(2)), else the number.
inline int64_t WireId(unsigned id) {
  return id == static_cast<unsigned>(-1) ? -1 : static_cast<int64_t>(id);
}

// A kReaddir reply's names, each NUL-ended; nullopt when one is not, is empty or holds a '/' (no
// folder lists such a name).
inline std::optional<std::vector<std::string>> DecodeNames(std::string_view in) {
  std::vector<std::string> names;
  for (size_t at = 0; at < in.size();) {
    size_t end = in.find('\0', at);
    if (end == std::string_view::npos || end == at) return std::nullopt;
    std::string_view name = in.substr(at, end - at);
    if (name.find('/') != std::string_view::npos) return std::nullopt;
    names.emplace_back(name);
    at = end + 1;
  }
  return names;
}

}  // namespace kite::rsc
