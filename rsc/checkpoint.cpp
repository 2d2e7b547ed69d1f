// Transparent checkpoints of unmodified programs, from inside libkite_rsc.so (docs/checkpoints.md).
//
// Taking one: the starter sends the checkpoint signal (SIGUSR2). The handler saves the processor
// state where the signal stopped the program (getcontext, in this library's memory), then writes
// an image: every private writable memory region (data and bss of the program and its libraries,
// heap, stack, anonymous maps — this library's own included, which holds that processor state),
// the signal dispositions, the thread pointer, the working folder, the open descriptors (files
// with their flags and offsets, the remote files' stand-ins), and what every file-backed map is
// (where, which part of which file, its contents' hash). The image goes to KITE_CKPT_IMAGE.tmp,
// is synced and renamed over KITE_CKPT_IMAGE, and the program exits KITE_CKPT_EXIT: its starter
// ships the image home as a checkpoint and starts the program again.
//
// Restoring one: a program started with KITE_CKPT_IMAGE naming an image becomes it, here, before
// its own main runs. It checks that the same executable and libraries are mapped at the same
// places (the starter runs such jobs without address-space randomisation) — else it refuses,
// saying why — then moves to a stack of its own in a scratch map outside every saved region,
// puts each saved region back where it was (the heap through brk, the stack by letting it grow),
// opens the descriptors again at their numbers and offsets, sets the signal dispositions and the
// thread pointer, and jumps into the saved processor state: the handler "returns" a second time,
// in the restored process, and the program goes on from where the signal stopped it.
//
// A script's job (KITE_CKPT_TREE) is a tree: each process writes its own image, IMAGE.PID, and
// stops; the starter puts them together (rsc/ckpt_tree.h). Its restore (RestoreTree) starts in
// the script's shell: it makes the tree's pipes again, starts each child again as its own child
// (which restores its image), waits for them, and restores itself. The ids the programs knew stay
// theirs (KnownPid, RealPid: preload.cpp's getpid, wait and kill).
//
// Limits (checked, with the reason on standard error): one thread; descriptors on files,
// folders and character devices only (pipes too, within a tree; not sockets); no shared writable
// maps. Not saved: timers, the standard streams (the new run's own are kept, but those a process
// of a tree redirected itself).
//
// Everything between the start of a restore and the jump uses system calls only: the memory
// being replaced holds malloc's state, the stack protector's canary and libc's errno.
#include "rsc/checkpoint.h"

#include <asm/prctl.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/rseq.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "rsc/ckpt_image.h"

namespace kite::rsc::ckpt {

int g_socket_fd = -1;

namespace {

// A process's id as the programs of a restored tree know it, and its id in this run.
struct PidPair {
  int64_t known, real;
};
constexpr size_t kEnvBytes = 1 << 16;
// A pipe of a tree made again by its first process: which one it was (its inode at the
// checkpoint) and the ends it has now, inherited by every process of the tree.
struct PipeEnds {
  uint64_t inode;
  int32_t r, w;
};
constexpr size_t kMaxPipes = 64;

// What a restore works from: in a scratch map of its own, with the stack it runs on.
struct Scratch {
  Header h;
  Region regions[kMaxRegions];
  FdEntry fds[kMaxFds];
  MapEntry maps[kMaxMaps];
  char image[kPath], sandbox[kPath], state[kPath], socket[kPath];
  int image_fd;
  uint64_t data_at;  // where the regions' bytes start in the image
  // What the kernel keeps of this process's thread control block, registered when it started:
  // the thread pointer then, and where in the block (0: not registered, or not in the block).
  uint64_t fs_new, rseq_at, rseq_len, robust_at, robust_len, tid_at;
  // A process of a tree: the ids its programs know and this run's, for every process restored
  // with it that it may name (kMaxTree at most), and the new launch's environment.
  PidPair pids[kMaxTree];
  int npids;
  int ready;  // told once the process is back (a process of a tree, to its parent); -1: nobody
  PipeEnds pipes[kMaxPipes];
  int npipes;
  char env[kEnvBytes];
  int64_t pipe_used;  // a checkpoint: what waited in the pipes it reads
  char pipe_data[kMaxPipeBytes];
  char buf[1 << 16];
  char maps_text[8 << 20];  // /proc/self/smaps (a checkpoint), /proc/self/maps (a restore)
};
constexpr size_t kStackBytes = 1 << 20;
constexpr size_t kScratchBytes = ((sizeof(Scratch) + kPage - 1) & ~(kPage - 1)) + kStackBytes;

// Set at Init from the environment; after a restore, from the new one.
char g_image[kPath];
char g_sandbox[kPath];
char g_state[kPath];
int g_signal = SIGUSR2;
int g_exit_code = 85;

// The processor state of the handler at the checkpoint: saved with this library's memory, so a
// restored process finds it here.
ucontext_t g_uc;
volatile sig_atomic_t g_restored = 0;
Scratch* volatile g_scratch = nullptr;  // the restore's, unmapped once back

volatile sig_atomic_t g_in_call = 0;
volatile sig_atomic_t g_pending = 0;

// A job whose executable is a script (KITE_CKPT_TREE): each of its processes takes its own
// image, IMAGE.PID, and stops; the starter puts them together, or lets them all go on.
bool g_tree = false;
// After a restore in a tree: each restored process's id as the programs know it and in this run
// (none: the real ones hold); and the launch's environment
// (NAME=VALUE\0..., \0), from which programs started after the restore take Kite's variables.
PidPair g_pids[kMaxTree];
int g_npids = 0;
char g_launch_env[kEnvBytes];
// The sandbox of the tree's first run: the paths a shell keeps in its variables.
char g_first_sandbox[kPath];

// ---- small async-signal-safe helpers ----

size_t Len(const char* s) {
  size_t n = 0;
  while (s[n]) ++n;
  return n;
}
void Copy(char* to, const char* from, size_t cap) {
  size_t i = 0;
  for (; from[i] && i + 1 < cap; ++i) to[i] = from[i];
  to[i] = '\0';
}
void Append(char* to, const char* from, size_t cap) {
  size_t n = Len(to);
  Copy(to + n, from, cap - n);
}
void AppendNumber(char* to, uint64_t v, size_t cap) {
  char d[24];
  int i = 23;
  d[i] = '\0';
  do {
    d[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v && i > 0);
  Append(to, d + i, cap);
}
bool StartsWith(const char* s, const char* prefix) {
  for (; *prefix; ++s, ++prefix)
    if (*s != *prefix) return false;
  return true;
}
bool Same(const char* a, const char* b) {
  for (; *a && *a == *b; ++a, ++b) {
  }
  return *a == *b;
}
// A system call made here, not through libc's syscall(): a restore replaces the memory that
// holds this library's links to libc (its GOT) while it works. -errno on failure.
long Sys(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  long ret;
  register long r10 asm("r10") = d;
  register long r8 asm("r8") = e;
  register long r9 asm("r9") = f;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
               : "rcx", "r11", "memory");
  return ret;
}
void Say(const char* what, const char* why) {
  char line[1024] = "kite: ";
  Append(line, what, sizeof line);
  Append(line, ": ", sizeof line);
  Append(line, why, sizeof line);
  Append(line, "\n", sizeof line);
  Sys(SYS_write, 2, reinterpret_cast<long>(line), static_cast<long>(Len(line)));
}
bool WriteAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    long w = Sys(SYS_write, fd, reinterpret_cast<long>(c), static_cast<long>(n));
    if (w == -EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}
bool PreadAll(int fd, void* p, size_t n, uint64_t at) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    long r = Sys(SYS_pread64, fd, reinterpret_cast<long>(c), static_cast<long>(n),
                 static_cast<long>(at));
    if (r == -EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
    at += static_cast<uint64_t>(r);
  }
  return true;
}
void* Map(size_t n, uint64_t at = 0, int extra = 0) {
  long p = Sys(SYS_mmap, static_cast<long>(at), static_cast<long>(n), PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | extra, -1, 0);
  return p < 0 && p > -4096 ? nullptr : reinterpret_cast<void*>(p);
}

uint64_t Hex(const char*& p) {
  uint64_t v = 0;
  for (;; ++p) {
    char c = *p;
    if (c >= '0' && c <= '9')
      v = v * 16 + static_cast<uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      v = v * 16 + static_cast<uint64_t>(c - 'a' + 10);
    else
      return v;
  }
}

// One line of /proc/self/maps.
struct MapLine {
  uint64_t start, end, offset, inode;
  uint64_t anonymous_kb;  // of its pages, how many are no longer the file's (smaps only)
  uint32_t prot;
  bool shared;
  const char* path;  // "" for an anonymous map; points into the caller's buffer
};
// Parses the line at `p` (NUL-terminated by the caller at its end).
bool ParseMapLine(char* p, MapLine* m) {
  const char* c = p;
  m->start = Hex(c);
  if (*c++ != '-') return false;
  m->end = Hex(c);
  if (*c++ != ' ') return false;
  m->prot = (c[0] == 'r' ? PROT_READ : 0) | (c[1] == 'w' ? PROT_WRITE : 0) |
            (c[2] == 'x' ? PROT_EXEC : 0);
  m->shared = c[3] == 's';
  c += 5;
  m->offset = Hex(c);
  ++c;
  while (*c && *c != ' ') ++c;  // device
  ++c;
  m->inode = 0;
  while (*c >= '0' && *c <= '9') m->inode = m->inode * 10 + static_cast<uint64_t>(*c++ - '0');
  while (*c == ' ') ++c;
  m->path = c;
  return true;
}

// Reads `path` (/proc/self/maps or smaps) into `buf` (cap bytes, NUL-ended); false when it does
// not fit.
bool ReadMaps(const char* path, char* buf, size_t cap) {
  int fd = static_cast<int>(
      Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC));
  if (fd < 0) return false;
  size_t n = 0;
  for (;;) {
    long r = Sys(SYS_read, fd, reinterpret_cast<long>(buf + n), static_cast<long>(cap - 1 - n));
    if (r <= 0) break;
    n += static_cast<size_t>(r);
    if (n + 1 >= cap) break;
  }
  Sys(SYS_close, fd);
  buf[n] = '\0';
  return n + 1 < cap;
}

// Calls f(MapLine&) for each map of the text `text` (cut up in place) of /proc/self/maps or
// smaps; from smaps, with its count of anonymous pages.
template <typename F>
void ForEachMap(char* text, F&& f) {
  MapLine m;
  bool have = false;
  for (char* line = text; *line;) {
    char* nl = line;
    while (*nl && *nl != '\n') ++nl;
    bool more = *nl == '\n';
    *nl = '\0';
    // A map's first line starts with its address; smaps' field lines with a name.
    bool first = (*line >= '0' && *line <= '9') || (*line >= 'a' && *line <= 'f');
    if (first) {
      if (have) f(m);
      have = ParseMapLine(line, &m);
      m.anonymous_kb = 0;
    } else if (have && StartsWith(line, "Anonymous:")) {
      const char* c = line + 10;
      while (*c == ' ') ++c;
      while (*c >= '0' && *c <= '9') m.anonymous_kb = m.anonymous_kb * 10 + uint64_t(*c++ - '0');
    }
    line = more ? nl + 1 : nl;
  }
  if (have) f(m);
}

// The FNV-1a hash and size of a whole file.
bool HashFile(const char* path, char* buf, size_t cap, uint64_t* hash, uint64_t* size) {
  int fd = static_cast<int>(
      Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC));
  if (fd < 0) return false;
  uint64_t h = 1469598103934665603ULL, n = 0;
  for (;;) {
    long r = Sys(SYS_read, fd, reinterpret_cast<long>(buf), static_cast<long>(cap));
    if (r == -EINTR) continue;
    if (r <= 0) break;
    for (long i = 0; i < r; ++i) h = (h ^ static_cast<unsigned char>(buf[i])) * 1099511628211ULL;
    n += static_cast<uint64_t>(r);
  }
  Sys(SYS_close, fd);
  *hash = h;
  *size = n;
  return true;
}

// The hash and size of the file last asked for, kept: a file's maps come one after another.
struct FileHashes {
  char path[512] = "";
  uint64_t hash = 0, size = 0;
  bool Of(const char* p, char* buf, size_t cap, uint64_t* h, uint64_t* n) {
    if (!Same(path, p)) {
      if (!HashFile(p, buf, cap, &hash, &size)) return false;
      Copy(path, p, sizeof path);
    }
    *h = hash;
    *n = size;
    return true;
  }
};

// The path `p` names in the new sandbox when it was in the old one.
void InSandbox(const char* p, const char* old_box, const char* new_box, char* out) {
  size_t n = Len(old_box);
  if (n > 0 && StartsWith(p, old_box) && (p[n] == '/' || p[n] == '\0')) {
    Copy(out, new_box, kPath);
    Append(out, p + n, kPath);
  } else {
    Copy(out, p, kPath);
  }
}

bool Overlaps(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1) {
  return a0 < b1 && b0 < a1;
}

// Where the kernel starts this process's heap (field 47 of /proc/self/stat).
uint64_t StartBrk(char* buf, size_t cap) {
  int fd = static_cast<int>(
      Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/proc/self/stat"), O_RDONLY | O_CLOEXEC));
  if (fd < 0) return 0;
  long n = Sys(SYS_read, fd, reinterpret_cast<long>(buf), static_cast<long>(cap - 1));
  Sys(SYS_close, fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char* p = buf + n;
  while (p > buf && *p != ')') --p;  // the command name may hold spaces
  int field = 2;
  for (; *p && field < 47; ++p)
    if (*p == ' ') ++field;
  uint64_t v = 0;
  while (*p >= '0' && *p <= '9') v = v * 10 + static_cast<uint64_t>(*p++ - '0');
  return v;
}

// A variable of the environment the process started with: not getenv, which a shell (bash)
// replaces with its own, for variables it has not made yet when this library starts.
const char* EnvVar(const char* name) {
  size_t n = Len(name);
  for (char** v = environ; v && *v; ++v)
    if (StartsWith(*v, name) && (*v)[n] == '=') return *v + n + 1;
  return nullptr;
}

// What a tree's first process tells a child it starts again (NAME=VALUE): for that restore only,
// never passed on.
bool PerRestore(const char* kv) {
  return StartsWith(kv, "KITE_CKPT_ENTRY=") || StartsWith(kv, "KITE_CKPT_PIDS=") ||
         StartsWith(kv, "KITE_CKPT_READY=") || StartsWith(kv, "KITE_CKPT_PIPES=");
}

// The id the programs know for the process `real` is in this run, and the other way round.
int64_t KnownOf(int64_t real) {
  for (int i = 0; i < g_npids; ++i)
    if (g_pids[i].real == real) return g_pids[i].known;
  return real;
}
int64_t RealOf(int64_t known) {
  for (int i = 0; i < g_npids; ++i)
    if (g_pids[i].known == known) return g_pids[i].real;
  return known;
}

// ---- taking a checkpoint ----

// What waits in the pipe `fd` reads, appended to the scratch map's pipe bytes without taking it
// out of the pipe: teed into a pipe of its own and read from there.
bool CopyPipe(Scratch* sc, int fd, int64_t* bytes, const char** why) {
  int waiting = 0;
  if (Sys(SYS_ioctl, fd, FIONREAD, reinterpret_cast<long>(&waiting)) != 0)
    return *why = "cannot see what waits in a pipe", false;
  *bytes = 0;
  if (waiting == 0) return true;
  if (waiting > kMaxPipeBytes - sc->pipe_used) return *why = "too much waits in the pipes", false;
  int copy[2];
  if (Sys(SYS_pipe2, reinterpret_cast<long>(copy), O_CLOEXEC | O_NONBLOCK) != 0)
    return *why = "cannot make a pipe to copy one", false;
  long size = Sys(SYS_fcntl, fd, F_GETPIPE_SZ);
  if (size > 0) Sys(SYS_fcntl, copy[1], F_SETPIPE_SZ, size);
  long teed = Sys(SYS_tee, fd, copy[1], waiting, SPLICE_F_NONBLOCK);
  long got = teed == waiting ? Sys(SYS_read, copy[0],
                                   reinterpret_cast<long>(sc->pipe_data + sc->pipe_used), waiting)
                             : -1;
  Sys(SYS_close, copy[0]);
  Sys(SYS_close, copy[1]);
  if (got != waiting) return *why = "cannot copy what waits in a pipe", false;
  sc->pipe_used += waiting;
  *bytes = waiting;
  return true;
}

// Everything the image needs, gathered into `sc` (a scratch map); false with `why`.
bool Gather(Scratch* sc, const char** why) {
  Header& h = sc->h;
  for (size_t i = 0; i < 8; ++i) h.magic[i] = kMagic[i];
  // One thread only: another's registers and stack would not be saved.
  {
    int dir = static_cast<int>(Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/proc/self/task"),
                                   O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir < 0) return *why = "cannot read /proc/self/task", false;
    int tasks = 0;
    for (;;) {
      long n = Sys(SYS_getdents64, dir, reinterpret_cast<long>(sc->buf), sizeof sc->buf);
      if (n <= 0) break;
      for (long at = 0; at < n;) {
        auto* d = reinterpret_cast<struct dirent64*>(sc->buf + at);
        if (d->d_name[0] != '.') ++tasks;
        at += d->d_reclen;
      }
    }
    Sys(SYS_close, dir);
    if (tasks != 1) return *why = "the program has more than one thread", false;
  }
  // No child processes: they would go on without it, or be lost at the restore. In a tree they
  // take their own images.
  if (!g_tree) {
    char path[64] = "/proc/self/task/";
    AppendNumber(path, static_cast<uint64_t>(Sys(SYS_gettid)), sizeof path);
    Append(path, "/children", sizeof path);
    int fd = static_cast<int>(
        Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC));
    long n = fd < 0 ? 0 : Sys(SYS_read, fd, reinterpret_cast<long>(sc->buf), 16);
    if (fd >= 0) Sys(SYS_close, fd);
    if (n > 0 && sc->buf[0] >= '0' && sc->buf[0] <= '9')
      return *why = "the program has a child process", false;
  }
  // Memory.
  uint64_t start_brk = StartBrk(sc->buf, sizeof sc->buf);
  char* maps = sc->maps_text;
  if (!ReadMaps("/proc/self/smaps", maps, sizeof sc->maps_text))
    return *why = "cannot read /proc/self/smaps", false;
  // This checkpoint's own scratch map is left out, even where the kernel merged it with a
  // neighbour.
  uint64_t scratch_lo = reinterpret_cast<uint64_t>(sc), scratch_hi = scratch_lo + kScratchBytes;
  auto add = [&](uint64_t start, uint64_t end, uint32_t prot, uint32_t kind) {
    if (start >= end) return true;
    if (h.regions >= kMaxRegions) return false;
    sc->regions[h.regions++] = Region{start, end, prot, kind};
    return true;
  };
  FileHashes hashes;
  // Each line: its region (when private and writable) and what it maps (when a file); the
  // first thing that cannot be saved, or nullptr.
  auto take = [&](MapLine& m) -> const char* {
    // The kernel's own maps are not the program's; every other one is (named anonymous maps,
    // "[anon:...]", included).
    bool special = Same(m.path, "[vdso]") || Same(m.path, "[vvar]") ||
                   Same(m.path, "[vvar_vclock]") || Same(m.path, "[vsyscall]") ||
                   Same(m.path, "[uprobes]");
    if (Same(m.path, "[vdso]")) h.vdso = m.start;
    if (Same(m.path, "[stack]")) h.stack_top = m.end;
    if (m.shared && (m.prot & PROT_WRITE)) return "the program has a shared writable memory map";
    // Private pages written since they were mapped, though no longer writable: the loader's
    // relocations (RELRO) hold addresses of its own allocations, which differ from one start to
    // the next (a longer path of the preloaded library moves them). After a restore they are
    // anonymous maps of their own (the restore wrote them), and saved all the same.
    bool written = !m.shared && m.anonymous_kb > 0 && (m.prot & PROT_READ);
    if (((m.prot & PROT_WRITE) || written) && !special) {
      if (!(m.prot & PROT_READ)) return "a writable memory region cannot be read";
      uint32_t kind = Same(m.path, "[heap]") ? kHeap : Same(m.path, "[stack]") ? kStack : kPlain;
      // After a restore the program's data may have merged with the heap that follows it.
      if (kind == kHeap && start_brk > m.start && start_brk < m.end) {
        if (!add(m.start, start_brk, m.prot, kPlain)) return "too many memory regions";
        m.start = start_brk;
      }
      bool fits = Overlaps(m.start, m.end, scratch_lo, scratch_hi)
                      ? add(m.start, scratch_lo > m.start ? scratch_lo : m.start, m.prot, kind) &&
                            add(scratch_hi < m.end ? scratch_hi : m.end, m.end, m.prot, kind)
                      : add(m.start, m.end, m.prot, kind);
      if (!fits) return "too many memory regions";
    }
    if (m.path[0] != '/') return nullptr;
    if (h.maps >= kMaxMaps) return "too many mapped files";
    MapEntry& e = sc->maps[h.maps++];
    e.start = m.start;
    e.end = m.end;
    e.offset = m.offset;
    e.prot = m.prot;
    Copy(e.path, m.path, sizeof e.path);
    if (!hashes.Of(m.path, sc->buf, sizeof sc->buf, &e.hash, &e.size))
      return "cannot read a mapped file (removed since it was mapped?)";
    return nullptr;
  };
  const char* bad = nullptr;
  ForEachMap(maps, [&](MapLine& m) {
    if (!bad) bad = take(m);
  });
  if (bad) return *why = bad, false;
  // Signal dispositions, the thread pointer, the working folder.
  for (int s = 1; s <= 64; ++s) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    Sys(SYS_rt_sigaction, s, 0, reinterpret_cast<long>(&h.actions[s]), 8);
  }
  Sys(SYS_arch_prctl, ARCH_GET_FS, reinterpret_cast<long>(&h.fs_base));
  if (Sys(SYS_getcwd, reinterpret_cast<long>(h.cwd), sizeof h.cwd) < 0)
    return *why = "cannot read the working folder", false;
  Copy(h.sandbox, g_sandbox, sizeof h.sandbox);
  h.pid = KnownOf(Sys(SYS_getpid));
  h.ppid = KnownOf(Sys(SYS_getppid));
  long exe_len = Sys(SYS_readlink, reinterpret_cast<long>("/proc/self/exe"),
                     reinterpret_cast<long>(h.exe), sizeof h.exe - 1);
  if (exe_len <= 0) return *why = "cannot read which program this is", false;
  h.exe[exe_len] = '\0';
  // Descriptors, but the standard streams (the next run has its own) and the library's.
  char stand_ins[kPath];
  Copy(stand_ins, g_state, sizeof stand_ins);
  Append(stand_ins, "/.kite-rsc/", sizeof stand_ins);
  int dir = static_cast<int>(Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/proc/self/fd"),
                                 O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir < 0) return *why = "cannot read /proc/self/fd", false;
  bool ok = true;
  for (;;) {
    long n = Sys(SYS_getdents64, dir, reinterpret_cast<long>(sc->buf), sizeof sc->buf);
    if (n <= 0) break;
    for (long at = 0; at < n && ok;) {
      auto* d = reinterpret_cast<struct dirent64*>(sc->buf + at);
      at += d->d_reclen;
      if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
      int fd = 0;
      for (const char* c = d->d_name; *c; ++c) fd = fd * 10 + (*c - '0');
      // The standard streams are the next run's own, unless a process of a tree has one of its
      // own (a shell's `> file`): then it is saved as any descriptor, and put back where it is
      // not the run's (PutBack).
      if ((fd <= 2 && !g_tree) || fd == dir || fd == g_socket_fd) continue;
      if (h.fds >= kMaxFds) {
        *why = "too many open descriptors";
        ok = false;
        break;
      }
      FdEntry& e = sc->fds[h.fds];
      e.fd = fd;
      char link[64] = "/proc/self/fd/";
      AppendNumber(link, static_cast<uint64_t>(fd), sizeof link);
      long len = Sys(SYS_readlink, reinterpret_cast<long>(link), reinterpret_cast<long>(e.path),
                     sizeof e.path - 1);
      if (len <= 0) continue;  // closed meanwhile
      e.path[len] = '\0';
      struct stat st;
      if (Sys(SYS_fstat, fd, reinterpret_cast<long>(&st)) != 0) continue;
      e.flags = static_cast<int32_t>(Sys(SYS_fcntl, fd, F_GETFL));
      e.fd_flags = static_cast<int32_t>(Sys(SYS_fcntl, fd, F_GETFD));
      e.offset = Sys(SYS_lseek, fd, 0, SEEK_CUR);
      e.size = S_ISREG(st.st_mode) ? st.st_size : -1;
      e.stand_in_len = 0;
      if (StartsWith(e.path, stand_ins)) {
        e.kind = kStandIn;
        long m = Sys(SYS_pread64, fd, reinterpret_cast<long>(e.stand_in), sizeof e.stand_in,
                     kStandInIdAt);
        if (m <= 0)  // a file system that cannot hold it there has it at 0
          m = Sys(SYS_pread64, fd, reinterpret_cast<long>(e.stand_in), sizeof e.stand_in, 0);
        if (m <= 0) {
          *why = "cannot read a remote file's stand-in";
          ok = false;
          break;
        }
        e.stand_in_len = static_cast<uint32_t>(m);
      } else if (S_ISDIR(st.st_mode)) {
        e.kind = kDir;
      } else if (S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)) {
        e.kind = kFile;
        size_t pl = Len(e.path);
        if (pl > 10 && Same(e.path + pl - 10, " (deleted)")) {
          *why = "the program holds a file that was removed";
          ok = false;
          break;
        }
      } else if (g_tree && S_ISFIFO(st.st_mode) && StartsWith(e.path, "pipe:[")) {
        // A pipe between processes of the tree: made again by the first one at the restore.
        // What waits in it is copied (tee), not taken: the tree may yet go on.
        e.kind = kPipe;
        e.size = static_cast<int64_t>(st.st_ino);
        e.offset = 0;
        if ((e.flags & O_ACCMODE) == O_RDONLY && !CopyPipe(sc, fd, &e.offset, why)) {
          ok = false;
          break;
        }
      } else {
        *why = "the program holds a pipe or a socket (files, folders and devices only)";
        ok = false;
        break;
      }
      ++h.fds;
    }
    if (!ok) break;
  }
  Sys(SYS_close, dir);
  return ok;
}

bool WriteImage(Scratch* sc, const char* image, const char** why) {
  char tmp[kPath];
  Copy(tmp, image, sizeof tmp);
  Append(tmp, ".tmp", sizeof tmp);
  int fd = static_cast<int>(Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(tmp),
                                O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (fd < 0) return *why = "cannot create the image", false;
  const Header& h = sc->h;
  bool ok = WriteAll(fd, &h, sizeof h) && WriteAll(fd, sc->regions, h.regions * sizeof(Region)) &&
            WriteAll(fd, sc->fds, h.fds * sizeof(FdEntry)) &&
            WriteAll(fd, sc->maps, h.maps * sizeof(MapEntry));
  for (uint64_t i = 0; ok && i < h.regions; ++i) {
    const Region& r = sc->regions[i];
    ok = WriteAll(fd, reinterpret_cast<const void*>(r.start), r.end - r.start);
  }
  ok = ok && WriteAll(fd, sc->pipe_data, static_cast<size_t>(sc->pipe_used));
  ok = ok && Sys(SYS_fsync, fd) == 0;
  Sys(SYS_close, fd);
  if (!ok) {
    Sys(SYS_unlink, reinterpret_cast<long>(tmp));
    return *why = "cannot write the image (disk full?)", false;
  }
  if (Sys(SYS_rename, reinterpret_cast<long>(tmp), reinterpret_cast<long>(image)) != 0)
    return *why = "cannot rename the image into place", false;
  // The rename itself is made durable with the folder.
  char folder[kPath];
  Copy(folder, image, sizeof folder);
  for (size_t i = Len(folder); i > 0; --i) {
    if (folder[i - 1] == '/') {
      folder[i - 1] = '\0';
      break;
    }
  }
  int d = static_cast<int>(Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(folder),
                               O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d >= 0) {
    Sys(SYS_fsync, d);
    Sys(SYS_close, d);
  }
  return true;
}

void AfterRestoreHere();

// IMAGE + `suffix` holding `why`: what the starter reads of a checkpoint or a restore that failed.
void Note(const char* image, const char* suffix, const char* why) {
  char path[kPath];
  Copy(path, image, sizeof path);
  Append(path, suffix, sizeof path);
  int fd = static_cast<int>(Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path),
                                O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (fd >= 0) {
    WriteAll(fd, why, Len(why));
    Sys(SYS_close, fd);
  }
}

__attribute__((noinline)) void TakeCheckpoint() {
  // In a tree each process writes IMAGE.PID (its id in this run, as the starter sees it) and
  // stops, its image written or not: the starter then kills them all or lets them all go on.
  char image[kPath];
  Copy(image, g_image, sizeof image);
  if (g_tree) {
    Append(image, ".", sizeof image);
    AppendNumber(image, static_cast<uint64_t>(Sys(SYS_getpid)), sizeof image);
  }
  Scratch* sc = nullptr;
  for (uint64_t at = 0x100000000000ULL; !sc && at < 0x600000000000ULL; at += 0x40000000000ULL)
    sc = static_cast<Scratch*>(Map(kScratchBytes, at, MAP_FIXED_NOREPLACE));
  const char* why = "no memory for it";
  bool written = sc && Gather(sc, &why) && WriteImage(sc, image, &why);
  if (sc) Sys(SYS_munmap, reinterpret_cast<long>(sc), kScratchBytes);
  if (!written) {
    // Said on standard error and, for the starter, in IMAGE.refused; the program goes on.
    Say("checkpoint not taken", why);
    Note(image, ".refused", why);
  }
  if (g_tree) {
    Sys(SYS_kill, Sys(SYS_getpid), SIGSTOP);
    return;  // let go on: not taken here or by another process of the tree
  }
  // Written: the starter ships it and starts the program again from it.
  if (written) Sys(SYS_exit_group, g_exit_code);
}

void OnCheckpointSignal(int, siginfo_t*, void*) {
  int saved_errno = errno;
  if (g_in_call) {
    g_pending = 1;
    return;
  }
  g_restored = 0;
  ::getcontext(&g_uc);
  if (g_restored) {
    AfterRestoreHere();
  } else {
    TakeCheckpoint();  // returns only when no checkpoint could be taken
  }
  errno = saved_errno;
}

// ---- restoring one ----

// Said on standard error and, for the starter, in IMAGE.failed (the job is held with it). Before
// the scratch map exists the image's path is this library's own; after the old memory is back,
// only the scratch map's is the new one.
[[noreturn]] void Fail(Scratch* sc, const char* why) {
  Say("cannot restore the checkpoint", why);
  Note(sc ? sc->image : g_image, ".failed", why);
  Sys(SYS_exit_group, 1);
  __builtin_unreachable();
}

// The kernel holds three addresses inside the thread control block libc set up at this
// process's start: its restartable-sequences area (which the kernel writes the CPU number into
// at every switch), its robust futex list and the word cleared at its exit. The restored process
// runs on the checkpoint's control block, which is somewhere else whenever the loader's early
// allocations differ in size (the preloaded library at another path, another environment): left
// as they were, the kernel goes on writing into what is now the program's memory — libc's
// malloc state among it. Before the old memory comes back, the kernel lets go of the rseq area
// (its unregistering writes to it); PutBack registers all three again at the same offsets from
// the checkpoint's thread pointer (the libc is the same: the restore checked it by hash).
void NoteThreadRegistrations(Scratch* sc) {
  constexpr uint64_t kNear = 1 << 16;  // the block is a few KiB
  auto in_block = [&](uint64_t p) { return p - sc->fs_new + kNear < 2 * kNear ? p : 0; };
  Sys(SYS_arch_prctl, ARCH_GET_FS, reinterpret_cast<long>(&sc->fs_new));
  sc->rseq_at = sc->rseq_len = 0;
  if (__rseq_size > 0) {
    uint64_t at = in_block(sc->fs_new + static_cast<uint64_t>(__rseq_offset));
    // glibc registers its whole area (32 bytes) while __rseq_size says which fields it uses.
    const uint64_t lens[] = {32, __rseq_size};
    for (uint64_t len : lens) {
      if (at && Sys(SYS_rseq, static_cast<long>(at), static_cast<long>(len), RSEQ_FLAG_UNREGISTER,
                    RSEQ_SIG) == 0) {
        sc->rseq_at = at;
        sc->rseq_len = len;
        break;
      }
    }
  }
  long head = 0;
  size_t len = 0;
  sc->robust_at = sc->robust_len = 0;
  if (Sys(SYS_get_robust_list, 0, reinterpret_cast<long>(&head), reinterpret_cast<long>(&len)) ==
      0) {
    sc->robust_at = in_block(static_cast<uint64_t>(head));
    sc->robust_len = len;
  }
  long tid = 0;
  sc->tid_at = Sys(SYS_prctl, PR_GET_TID_ADDRESS, reinterpret_cast<long>(&tid)) == 0
                   ? in_block(static_cast<uint64_t>(tid))
                   : 0;
}

void MoveThreadRegistrations(const Scratch* sc, uint64_t fs_old) {
  auto moved = [&](uint64_t p) { return static_cast<long>(p - sc->fs_new + fs_old); };
  if (sc->rseq_at) Sys(SYS_rseq, moved(sc->rseq_at), static_cast<long>(sc->rseq_len), 0, RSEQ_SIG);
  if (sc->robust_at)
    Sys(SYS_set_robust_list, moved(sc->robust_at), static_cast<long>(sc->robust_len));
  if (sc->tid_at) Sys(SYS_set_tid_address, moved(sc->tid_at));
}

// In the scratch map, on its stack. From the first region put back on, memory is the old
// process's; only system calls from here to the jump.
[[noreturn]] __attribute__((noinline, no_stack_protector)) void PutBack(Scratch* sc) {
  const Header& h = sc->h;
  // Files the program had mapped itself first: the saved regions (their written pages) go over
  // them.
  for (uint64_t i = 0; i < h.maps; ++i) {
    const MapEntry& e = sc->maps[i];
    if (e.pad != 2) continue;
    int fd = static_cast<int>(
        Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(e.path), O_RDONLY | O_CLOEXEC));
    long m = fd < 0 ? -1
                    : Sys(SYS_mmap, static_cast<long>(e.start), static_cast<long>(e.end - e.start),
                          static_cast<long>(e.prot & ~uint32_t{PROT_WRITE}),
                          MAP_PRIVATE | MAP_FIXED, fd, static_cast<long>(e.offset));
    if (fd >= 0) Sys(SYS_close, fd);
    if (m != static_cast<long>(e.start)) {
      char why[1024] = "cannot map again a file mapped at the checkpoint: ";
      Append(why, e.path, sizeof why);
      Fail(sc, why);
    }
  }
  uint64_t at = sc->data_at;
  for (uint64_t i = 0; i < h.regions; ++i) {
    const Region& r = sc->regions[i];
    uint64_t len = r.end - r.start;
    if (r.kind == kHeap) {
      if (static_cast<uint64_t>(Sys(SYS_brk, static_cast<long>(r.end))) < r.end)
        Fail(sc, "cannot grow the heap back");
    } else if (r.kind == kStack) {
      // The stack grows down to where it reached, page by page.
      for (uint64_t p = r.end - kPage; p >= r.start; p -= kPage)
        *reinterpret_cast<volatile char*>(p) = 0;
    } else {
      long m = Sys(SYS_mmap, static_cast<long>(r.start), static_cast<long>(len),
                   PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (m != static_cast<long>(r.start)) Fail(sc, "cannot map a memory region back");
    }
    if (!PreadAll(sc->image_fd, reinterpret_cast<void*>(r.start), len, at))
      Fail(sc, "the image ends early");
    if (r.prot != (PROT_READ | PROT_WRITE))
      Sys(SYS_mprotect, static_cast<long>(r.start), static_cast<long>(len), r.prot);
    at += len;
  }
  Sys(SYS_close, sc->image_fd);
  // The parent waiting for this process to be back is told before a descriptor of the image may
  // take the number of its pipe; past here, nothing is refused but a file that cannot be opened.
  auto tell_ready = [sc] {
    if (sc->ready < 0) return;
    WriteAll(sc->ready, "+", 1);
    Sys(SYS_close, sc->ready);
    sc->ready = -1;
  };
  for (uint64_t i = 0; i < h.fds; ++i)
    if (sc->fds[i].fd == sc->ready) tell_ready();
  // Descriptors, at their numbers and offsets; the standard streams stay the new run's.
  char stand_ins[kPath];
  Copy(stand_ins, sc->state, sizeof stand_ins);
  Append(stand_ins, "/.kite-rsc", sizeof stand_ins);
  Sys(SYS_mkdir, reinterpret_cast<long>(stand_ins), 0700);
  for (uint64_t i = 0; i < h.fds; ++i) {
    const FdEntry& e = sc->fds[i];
    int cloexec = (e.fd_flags & FD_CLOEXEC) ? O_CLOEXEC : 0;
    int fd;
    if (e.kind == kPipe) {  // one end of a pipe the tree's first process made again
      bool reads = (e.flags & O_ACCMODE) == O_RDONLY;
      int from = -1;
      for (int p = 0; p < sc->npipes; ++p)
        if (sc->pipes[p].inode == static_cast<uint64_t>(e.size))
          from = reads ? sc->pipes[p].r : sc->pipes[p].w;
      if (from < 0)
        Fail(sc, "a pipe of the checkpoint is not here (one to a process outside the job?)");
      if (Sys(SYS_dup3, from, e.fd, cloexec) < 0) Fail(sc, "cannot put a pipe back");
      Sys(SYS_fcntl, e.fd, F_SETFL, e.flags);
      continue;
    }
    if (e.fd <= 2) {  // a standard stream: the run's own is kept where it is the same file
      char link[32] = "/proc/self/fd/", now[kPath], was[kPath];
      AppendNumber(link, static_cast<uint64_t>(e.fd), sizeof link);
      long n = Sys(SYS_readlink, reinterpret_cast<long>(link), reinterpret_cast<long>(now),
                   sizeof now - 1);
      now[n > 0 ? n : 0] = '\0';
      InSandbox(e.path, h.sandbox, sc->sandbox, was);
      if (e.kind != kStandIn && (Same(now, was) || Same(now, e.path))) {
        // Read as far as before (the job's input file); output goes on at the run's own end.
        if (e.fd == 0 && e.kind == kFile && e.size >= 0 && e.offset >= 0)
          Sys(SYS_lseek, 0, e.offset, SEEK_SET);
        continue;
      }
    }
    if (e.kind == kStandIn) {
      char path[kPath];
      Copy(path, sc->state, sizeof path);
      Append(path, "/.kite-rsc/restored.", sizeof path);
      AppendNumber(path, static_cast<uint64_t>(e.fd), sizeof path);
      fd = static_cast<int>(Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path),
                                O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
      if (fd >= 0) {
        if (Sys(SYS_pwrite64, fd, reinterpret_cast<long>(e.stand_in), e.stand_in_len,
                kStandInIdAt) != static_cast<long>(e.stand_in_len))
          Sys(SYS_pwrite64, fd, reinterpret_cast<long>(e.stand_in), e.stand_in_len, 0);
        Sys(SYS_unlink, reinterpret_cast<long>(path));
      }
    } else {
      char path[kPath];
      InSandbox(e.path, h.sandbox, sc->sandbox, path);
      int flags = (e.flags & ~(O_CREAT | O_TRUNC | O_EXCL)) | O_CLOEXEC |
                  (e.kind == kDir ? O_DIRECTORY : 0);
      fd = static_cast<int>(Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), flags, 0));
      // A sandbox file the program appends to is cut back to its size at the checkpoint, as a
      // remote one is: what a lost run wrote after it is written again.
      bool in_sandbox = !Same(path, e.path) || (h.sandbox[0] && StartsWith(e.path, h.sandbox));
      if (fd >= 0 && (e.flags & O_APPEND) && (e.flags & O_ACCMODE) != O_RDONLY && e.size >= 0 &&
          in_sandbox) {
        struct stat now;
        if (Sys(SYS_fstat, fd, reinterpret_cast<long>(&now)) == 0 && now.st_size > e.size)
          Sys(SYS_ftruncate, fd, static_cast<long>(e.size));
      }
    }
    if (fd < 0) {
      char why[kPath + 64] = "cannot open again a file the program had open: ";
      Append(why, e.kind == kStandIn ? "(a remote file's stand-in)" : e.path, sizeof why);
      Fail(sc, why);
    }
    if (fd != e.fd) {
      if (Sys(SYS_dup3, fd, e.fd, cloexec) < 0) Fail(sc, "cannot put a descriptor back");
      Sys(SYS_close, fd);
    } else if (!cloexec) {
      Sys(SYS_fcntl, fd, F_SETFD, 0);
    }
    if (e.offset >= 0) Sys(SYS_lseek, e.fd, e.offset, SEEK_SET);
  }
  // The tree's pipes as inherited, but the ends this process had.
  for (int p = 0; p < sc->npipes; ++p) {
    for (int end : {sc->pipes[p].r, sc->pipes[p].w}) {
      bool kept = false;
      for (uint64_t i = 0; i < h.fds; ++i) kept = kept || sc->fds[i].fd == end;
      if (!kept) Sys(SYS_close, end);
    }
  }
  for (int s = 1; s <= 64; ++s) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    Sys(SYS_rt_sigaction, s, reinterpret_cast<long>(&h.actions[s]), 0, 8);
  }
  char cwd[kPath];
  InSandbox(h.cwd, h.sandbox, sc->sandbox, cwd);
  Sys(SYS_chdir, reinterpret_cast<long>(cwd));
  tell_ready();
  Sys(SYS_arch_prctl, ARCH_SET_FS, static_cast<long>(h.fs_base));
  MoveThreadRegistrations(sc, h.fs_base);
  // This library's memory is the old process's now: say where it came back, and go on from
  // where the checkpoint's handler was.
  g_scratch = sc;
  g_restored = 1;
  ::setcontext(&g_uc);
  Sys(SYS_exit_group, 1);
  __builtin_unreachable();
}

[[noreturn]] void SwitchStack(void* top, Scratch* sc) {
  asm volatile(
      "mov %0, %%rsp\n\t"
      "mov %1, %%rdi\n\t"
      "call *%2\n\t"
      "ud2" ::"r"(top),
      "r"(sc), "r"(&PutBack)
      : "memory", "rdi");
  __builtin_unreachable();
}

// What a process of a tree restores with (set before Restore, copied into its scratch map).
PidPair g_next_pids[kMaxTree];
int g_next_npids = 0;
PipeEnds g_next_pipes[kMaxPipes];
int g_next_npipes = 0;

// Reads the image (`length` bytes at `base` in the file; 0: the whole file), checks it can be
// this process, and puts it back (never returns). `ready`: where to say the checks passed (a
// process of a tree tells its parent, -1: nobody).
[[noreturn]] void Restore(const char* image, uint64_t base = 0, uint64_t length = 0,
                          int ready = -1) {
  // A scratch map outside every region of the image: tried at a few addresses far from where
  // programs and libraries go.
  int fd = static_cast<int>(
      Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(image), O_RDONLY | O_CLOEXEC));
  if (fd < 0) Fail(nullptr, "cannot open the image");
  Header probe;
  if (!PreadAll(fd, &probe, sizeof probe, base)) Fail(nullptr, "the image is too short");
  for (size_t i = 0; i < 8; ++i)
    if (probe.magic[i] != kMagic[i]) Fail(nullptr, "not a Kite checkpoint image");
  if (probe.regions > kMaxRegions || probe.fds > kMaxFds || probe.maps > kMaxMaps)
    Fail(nullptr, "the image is damaged");
  Scratch* sc = nullptr;
  for (uint64_t at = 0x100000000000ULL; at < 0x600000000000ULL; at += 0x40000000000ULL) {
    auto* p = static_cast<Scratch*>(Map(kScratchBytes, at, MAP_FIXED_NOREPLACE));
    if (!p) continue;
    uint64_t lo = reinterpret_cast<uint64_t>(p), hi = lo + kScratchBytes;
    bool clash = false;
    // The tables are read below; they are small enough to read twice.
    Region r;
    for (uint64_t i = 0; i < probe.regions && !clash; ++i) {
      if (!PreadAll(fd, &r, sizeof r, base + sizeof(Header) + i * sizeof(Region)))
        Fail(nullptr, "the image is too short");
      clash = Overlaps(lo, hi, r.start, r.end);
    }
    MapEntry e;
    uint64_t maps_at =
        base + sizeof(Header) + probe.regions * sizeof(Region) + probe.fds * sizeof(FdEntry);
    for (uint64_t i = 0; i < probe.maps && !clash; ++i) {
      if (!PreadAll(fd, &e, sizeof e, maps_at + i * sizeof(MapEntry)))
        Fail(nullptr, "the image is too short");
      clash = Overlaps(lo, hi, e.start, e.end);
    }
    if (!clash) {
      sc = p;
      break;
    }
    Sys(SYS_munmap, reinterpret_cast<long>(p), kScratchBytes);
  }
  if (!sc) Fail(nullptr, "no room for the restore's scratch memory");
  Copy(sc->image, image, sizeof sc->image);
  sc->image_fd = fd;
  Header& h = sc->h;
  uint64_t off = base;
  bool ok = PreadAll(fd, &h, sizeof h, off);
  off += sizeof h;
  ok = ok && PreadAll(fd, sc->regions, h.regions * sizeof(Region), off);
  off += h.regions * sizeof(Region);
  ok = ok && PreadAll(fd, sc->fds, h.fds * sizeof(FdEntry), off);
  off += h.fds * sizeof(FdEntry);
  ok = ok && PreadAll(fd, sc->maps, h.maps * sizeof(MapEntry), off);
  off += h.maps * sizeof(MapEntry);
  if (!ok) Fail(sc, "the image is too short");
  sc->data_at = off;
  struct stat image_st;
  if (Sys(SYS_fstat, fd, reinterpret_cast<long>(&image_st)) != 0) Fail(sc, "cannot read the image");
  if (length == 0) length = static_cast<uint64_t>(image_st.st_size);
  if (const char* bad = CheckTables(h, sc->regions, sc->fds, sc->maps, length)) Fail(sc, bad);
  Copy(sc->sandbox, g_sandbox, sizeof sc->sandbox);
  Copy(sc->state, g_state, sizeof sc->state);
  const char* sock = EnvVar("KITE_RSC_SOCKET");
  Copy(sc->socket, sock ? sock : "", sizeof sc->socket);
  // The same executable and libraries at the same places, and the same kernel-placed maps.
  char* maps = sc->maps_text;
  if (!ReadMaps("/proc/self/maps", maps, sizeof sc->maps_text))
    Fail(sc, "cannot read /proc/self/maps");
  uint64_t vdso = 0, stack_top = 0, heap = 0;
  for (uint64_t i = 0; i < h.maps; ++i) sc->maps[i].pad = 0;  // 1: mapped here already
  FileHashes hashes;
  ForEachMap(maps, [&](MapLine& m) {
    if (Same(m.path, "[vdso]")) vdso = m.start;
    if (Same(m.path, "[stack]")) stack_top = m.end;
    if (m.path[0] != '/') return;
    for (uint64_t i = 0; i < h.maps; ++i) {
      MapEntry& e = sc->maps[i];
      if (e.start != m.start) continue;
      if (e.end != m.end || e.offset != m.offset) {
        char why[1024] = "a file is mapped differently than at the checkpoint: ";
        Append(why, m.path, sizeof why);
        Fail(sc, why);
      }
      uint64_t hash = 0, size = 0;
      if (!hashes.Of(m.path, sc->buf, sizeof sc->buf, &hash, &size))
        Fail(sc, "cannot read a mapped file");
      if (hash != e.hash || size != e.size) {
        char why[1024] = "not the executable or library of the checkpoint: ";
        Append(why, m.path, sizeof why);
        Append(why, " differs from ", sizeof why);
        Append(why, e.path, sizeof why);
        Fail(sc, why);
      }
      e.pad = 1;
    }
  });
  // What the program mapped itself after it started (a library it loaded, a locale's files, a
  // data file) is mapped again by PutBack, at its place, when the file here is the same.
  for (uint64_t i = 0; i < h.maps; ++i) {
    MapEntry& e = sc->maps[i];
    if (e.pad) continue;
    char path[kPath];
    InSandbox(e.path, h.sandbox, sc->sandbox, path);
    uint64_t hash = 0, size = 0;
    if (!hashes.Of(path, sc->buf, sizeof sc->buf, &hash, &size)) {
      char why[1024] = "a file mapped at the checkpoint is not here: ";
      Append(why, path, sizeof why);
      Fail(sc, why);
    }
    if (hash != e.hash || size != e.size) {
      char why[1024] = "a file mapped at the checkpoint is not the same here: ";
      Append(why, path, sizeof why);
      Fail(sc, why);
    }
    Copy(e.path, path, sizeof e.path);
    e.pad = 2;  // to be mapped
  }
  if (vdso != h.vdso || stack_top != h.stack_top)
    Fail(sc, "the kernel placed the stack or the vDSO elsewhere (address-space randomisation on?)");
  heap = StartBrk(sc->buf, sizeof sc->buf);
  for (uint64_t i = 0; i < h.regions; ++i) {
    if (sc->regions[i].kind == kHeap && sc->regions[i].start != heap)
      Fail(sc, "the kernel placed the heap elsewhere (address-space randomisation on?)");
  }
  for (int i = 0; i < g_next_npids; ++i) sc->pids[i] = g_next_pids[i];
  sc->npids = g_next_npids;
  for (int i = 0; i < g_next_npipes; ++i) sc->pipes[i] = g_next_pipes[i];
  sc->npipes = g_next_npipes;
  // The launch's environment, for programs the restored process starts.
  size_t at = 0;
  for (char** e = environ; *e && at + Len(*e) + 2 < sizeof sc->env; ++e) {
    Copy(sc->env + at, *e, sizeof sc->env - at);
    at += Len(*e) + 1;
  }
  sc->env[at] = '\0';
  sc->ready = ready;
  NoteThreadRegistrations(sc);
  SwitchStack(reinterpret_cast<char*>(sc) + kScratchBytes, sc);
}

// Makes this process the run's program (kProgramPidName) unless another living process already
// is: a second process of the same executable — the program starting itself again, or a child
// of it — neither restores the image nor takes checkpoints, and is never sent the signal. Where
// the file cannot be written the program still restores and arms itself (as before the file
// existed); the starter, finding no file, then says no checkpoint can be asked of it.
bool ClaimProgram() {
  char path[kPath];
  Copy(path, g_state, sizeof path);
  Append(path, "/", sizeof path);
  Append(path, kProgramPidName, sizeof path);
  long self = Sys(SYS_getpid);
  char text[32];
  int fd = static_cast<int>(
      Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC));
  if (fd >= 0) {
    long n = Sys(SYS_read, fd, reinterpret_cast<long>(text), sizeof text - 1);
    Sys(SYS_close, fd);
    long pid = 0;
    for (long i = 0; i < n && text[i] >= '0' && text[i] <= '9'; ++i) pid = pid * 10 + text[i] - '0';
    if (pid > 0 && pid != self && Sys(SYS_kill, pid, 0) != -ESRCH) return false;
  }
  char tmp[kPath];
  Copy(tmp, path, sizeof tmp);
  Append(tmp, ".tmp", sizeof tmp);
  text[0] = '\0';
  AppendNumber(text, static_cast<uint64_t>(self), sizeof text);
  fd = static_cast<int>(Sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(tmp),
                            O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (fd < 0) return true;
  bool ok = WriteAll(fd, text, Len(text));
  Sys(SYS_close, fd);
  if (ok) Sys(SYS_rename, reinterpret_cast<long>(tmp), reinterpret_cast<long>(path));
  return true;
}

// The pipes of a tree's images, made again in this process (the tree's first) at numbers above
// every descriptor the images hold, without close-on-exec so that the children it starts inherit
// them, each filled with what waited in it (from the first image that holds it); nullptr, or why
// not.
const char* MakePipes(int fd, const TreeHeader& t, const TreeEntry* e) {
  g_next_npipes = 0;
  bool filled[kMaxPipes] = {};
  int base = 700;
  FdEntry fe;
  Header h;
  auto entry_at = [&](size_t k, uint64_t i) {
    return e[k].offset + sizeof(Header) + h.regions * sizeof(Region) + i * sizeof(FdEntry);
  };
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t k = 0; k < t.count; ++k) {
      if (!PreadAll(fd, &h, sizeof h, e[k].offset) || h.regions > kMaxRegions || h.fds > kMaxFds)
        return "the checkpoint is damaged (a process's image)";
      int64_t waiting = 0;  // this image's pipe bytes, which end it
      for (uint64_t i = 0; i < h.fds; ++i) {
        if (!PreadAll(fd, &fe, sizeof fe, entry_at(k, i))) return "the image is too short";
        if (fe.fd >= base) base = fe.fd + 1;
        if (fe.kind == kPipe && (fe.offset < 0 || fe.offset > kMaxPipeBytes - waiting))
          return "the checkpoint is damaged (what waited in a pipe)";
        if (fe.kind == kPipe) waiting += fe.offset;
      }
      if (pass == 0) continue;
      if (waiting < 0 || static_cast<uint64_t>(waiting) > e[k].length)
        return "the checkpoint is damaged (what waited in a pipe)";
      uint64_t bytes_at = e[k].offset + e[k].length - static_cast<uint64_t>(waiting);
      for (uint64_t i = 0; i < h.fds; ++i) {
        if (!PreadAll(fd, &fe, sizeof fe, entry_at(k, i))) return "the image is too short";
        if (fe.kind != kPipe) continue;
        int64_t in_it = fe.offset;
        int p = 0;
        while (p < g_next_npipes && g_next_pipes[p].inode != static_cast<uint64_t>(fe.size)) ++p;
        if (p == g_next_npipes) {
          if (p == static_cast<int>(kMaxPipes)) return "the tree has too many pipes";
          int made[2];
          if (::pipe2(made, 0) != 0) return "cannot make a pipe again";
          int r = ::fcntl(made[0], F_DUPFD, base + 2 * p);
          int w = ::fcntl(made[1], F_DUPFD, base + 2 * p + 1);
          ::close(made[0]);
          ::close(made[1]);
          if (r < 0 || w < 0) return "cannot make a pipe again";
          g_next_pipes[g_next_npipes++] = {static_cast<uint64_t>(fe.size), r, w};
        }
        // Every reader saw the same bytes (they were copied, not taken): the first fills it.
        if (in_it > 0 && !filled[p]) {
          filled[p] = true;
          int w = g_next_pipes[p].w;
          // Room for all of it at once: nothing reads it before the tree is back. Written
          // without waiting: a pipe that cannot be made that large fails the restore.
          if (in_it > 65536) ::fcntl(w, F_SETPIPE_SZ, static_cast<int>(in_it));
          ::fcntl(w, F_SETFL, O_NONBLOCK);
          char chunk[1 << 14];
          for (int64_t done = 0; done < in_it;) {
            size_t n = static_cast<size_t>(in_it - done) < sizeof chunk
                           ? static_cast<size_t>(in_it - done)
                           : sizeof chunk;
            if (!PreadAll(fd, chunk, n, bytes_at + static_cast<uint64_t>(done)) ||
                !WriteAll(w, chunk, n))
              return "cannot fill a pipe again with what waited in it";
            done += static_cast<int64_t>(n);
          }
        }
        bytes_at += static_cast<uint64_t>(in_it);
      }
    }
  }
  return nullptr;
}

// A restore of a tree (KITE_CKPT_TREE), in the process the starter launched (the tree's first
// process) or in one that process started for a child (KITE_CKPT_ENTRY): the first process starts
// each child again — the child's executable, which restores the child's image, its parent being
// this process as before — waits until each says it is back, then restores itself. A child that
// cannot be restored fails the whole restore (the others are killed), so that no script goes on
// without the program it was waiting for.
[[noreturn]] void RestoreTree(const char* image, const char* entry) {
  int fd = ::open(image, O_RDONLY | O_CLOEXEC);
  if (fd < 0) Fail(nullptr, "cannot open the image");
  TreeHeader t;
  TreeEntry e[kMaxTree];
  struct stat st;
  if (::fstat(fd, &st) != 0 || !PreadAll(fd, &t, sizeof t, 0))
    Fail(nullptr, "the image is too short");
  if (t.count > kMaxTree) Fail(nullptr, "the checkpoint is damaged (its number of processes)");
  if (!PreadAll(fd, e, t.count * sizeof(TreeEntry), sizeof t))
    Fail(nullptr, "the image is too short");
  if (const char* bad = CheckTree(t, e, static_cast<uint64_t>(st.st_size))) Fail(nullptr, bad);
  size_t root = 0;
  for (size_t i = 0; i < t.count; ++i)
    if (!ParentInTree(e, t.count, i)) root = i;
  if (entry) {
    // A child, started by the first process: KITE_CKPT_PIDS is "PARENT_KNOWN:PARENT_REAL".
    size_t k = static_cast<size_t>(::atol(entry));
    if (k >= t.count || k == root) Fail(nullptr, "KITE_CKPT_ENTRY names no child of the tree");
    const char* parent = EnvVar("KITE_CKPT_PIDS");
    const char* ready = EnvVar("KITE_CKPT_READY");
    g_next_pids[0] = {e[root].pid, parent ? ::atol(parent) : 0};
    if (parent && ::strchr(parent, ':')) g_next_pids[0].real = ::atol(::strchr(parent, ':') + 1);
    g_next_pids[1] = {e[k].pid, Sys(SYS_getpid)};
    g_next_npids = 2;
    // KITE_CKPT_PIPES: "INODE:READ:WRITE,..." — the tree's pipes, as inherited.
    g_next_npipes = 0;
    for (const char* p = EnvVar("KITE_CKPT_PIPES"); p && *p && g_next_npipes < int(kMaxPipes);) {
      PipeEnds& ends = g_next_pipes[g_next_npipes++];
      ends.inode = ::strtoull(p, const_cast<char**>(&p), 10);
      ends.r = *p == ':' ? static_cast<int32_t>(::strtol(p + 1, const_cast<char**>(&p), 10)) : -1;
      ends.w = *p == ':' ? static_cast<int32_t>(::strtol(p + 1, const_cast<char**>(&p), 10)) : -1;
      if (*p == ',')
        ++p;
      else if (*p)
        Fail(nullptr, "KITE_CKPT_PIPES is not INODE:READ:WRITE,...");
    }
    ::close(fd);
    Restore(image, e[k].offset, e[k].length, ready ? ::atoi(ready) : -1);
  }
  // The first process: its children first.
  g_next_npids = 0;
  g_next_pids[g_next_npids++] = {e[root].pid, Sys(SYS_getpid)};
  pid_t started[kMaxTree];
  int nstarted = 0;
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) Fail(nullptr, "cannot make a pipe to its children");
  if (const char* bad = MakePipes(fd, t, e)) Fail(nullptr, bad);
  char pipes_var[64 + kMaxPipes * 48] = "KITE_CKPT_PIPES=";
  for (int p = 0; p < g_next_npipes; ++p) {
    if (p) Append(pipes_var, ",", sizeof pipes_var);
    AppendNumber(pipes_var, g_next_pipes[p].inode, sizeof pipes_var);
    Append(pipes_var, ":", sizeof pipes_var);
    AppendNumber(pipes_var, static_cast<uint64_t>(g_next_pipes[p].r), sizeof pipes_var);
    Append(pipes_var, ":", sizeof pipes_var);
    AppendNumber(pipes_var, static_cast<uint64_t>(g_next_pipes[p].w), sizeof pipes_var);
  }
  auto give_up = [&](const char* why) {
    for (int i = 0; i < nstarted; ++i) ::kill(started[i], SIGKILL);
    char failed[kPath];
    Copy(failed, image, sizeof failed);
    Append(failed, ".failed", sizeof failed);
    struct stat was;
    if (::stat(failed, &was) == 0) {  // a child said why already: that reason stays
      Say("cannot restore the checkpoint", why);
      Sys(SYS_exit_group, 1);
    }
    Fail(nullptr, why);
  };
  for (size_t k = 0; k < t.count; ++k) {
    if (k == root) continue;
    Header h;
    if (!PreadAll(fd, &h, sizeof h, e[k].offset) || !Terminated(h.exe, sizeof h.exe) ||
        !Terminated(h.sandbox, sizeof h.sandbox))
      give_up("the checkpoint is damaged (a child's image)");
    char exe[kPath];
    InSandbox(h.exe, h.sandbox, g_sandbox, exe);
    char known[64] = "", number[24] = "";
    AppendNumber(known, static_cast<uint64_t>(e[root].pid), sizeof known);
    Append(known, ":", sizeof known);
    AppendNumber(known, static_cast<uint64_t>(Sys(SYS_getpid)), sizeof known);
    AppendNumber(number, k, sizeof number);
    pid_t child = ::fork();
    if (child < 0) give_up("cannot start a child process again");
    if (child == 0) {
      int w = ::fcntl(ready[1], F_DUPFD, 512);  // out of the way of the child's own
      if (w < 0) ::_exit(127);
      // Its own array, not setenv: a shell (bash) has setenv and getenv of its own, for its
      // variables, which do not exist yet.
      char entry_var[64] = "KITE_CKPT_ENTRY=", pids_var[96] = "KITE_CKPT_PIDS=",
           ready_var[64] = "KITE_CKPT_READY=";
      Append(entry_var, number, sizeof entry_var);
      Append(pids_var, known, sizeof pids_var);
      AppendNumber(ready_var, static_cast<uint64_t>(w), sizeof ready_var);
      char* env[512];
      size_t n = 0;
      for (char** v = environ; *v && n + 5 < 512; ++v)
        if (!PerRestore(*v)) env[n++] = *v;
      env[n++] = pipes_var;
      env[n++] = entry_var;
      env[n++] = pids_var;
      env[n++] = ready_var;
      env[n] = nullptr;
      char* argv[] = {exe, nullptr};
      ::execve(exe, argv, env);
      char why[kPath + 64] = "cannot start again the program of a child process: ";
      Append(why, exe, sizeof why);
      Note(image, ".failed", why);
      ::_exit(127);
    }
    started[nstarted++] = child;
    g_next_pids[g_next_npids++] = {e[k].pid, child};
  }
  ::close(ready[1]);
  for (int i = 0; i < nstarted; ++i) {
    char c;
    long n;
    do {
      n = Sys(SYS_read, ready[0], reinterpret_cast<long>(&c), 1);
    } while (n == -EINTR);
    if (n != 1) give_up("a child process of the tree could not be restored (its reason is above)");
  }
  ::close(ready[0]);
  ::close(fd);
  Restore(image, e[root].offset, e[root].length);
}

void AfterRestoreHere() {
  Scratch* sc = g_scratch;
  g_scratch = nullptr;
  Copy(g_image, sc->image, sizeof g_image);
  Copy(g_sandbox, sc->sandbox, sizeof g_sandbox);
  Copy(g_state, sc->state, sizeof g_state);
  g_in_call = 0;
  g_pending = 0;
  g_socket_fd = -1;
  for (int i = 0; i < sc->npids; ++i) g_pids[i] = sc->pids[i];
  g_npids = sc->npids;
  for (size_t i = 0; i < sizeof g_launch_env; ++i) g_launch_env[i] = sc->env[i];
  kite::rsc::AfterRestore(sc->socket, sc->state, sc->sandbox);
  Sys(SYS_munmap, reinterpret_cast<long>(sc), kScratchBytes);
}

}  // namespace

void Init() {
  const char* image = EnvVar("KITE_CKPT_IMAGE");
  if (!image || image[0] != '/') return;
  // Only the job's program: not the wrapper that starts it, nor programs it starts. A script's
  // job (KITE_CKPT_TREE): every process of it.
  bool tree = EnvVar("KITE_CKPT_TREE") != nullptr;
  const char* program = EnvVar("KITE_CKPT_PROGRAM");
  char exe[kPath];
  long n = Sys(SYS_readlink, reinterpret_cast<long>("/proc/self/exe"), reinterpret_cast<long>(exe),
               sizeof exe - 1);
  if (!tree) {
    if (!program || n <= 0) return;
    exe[n] = '\0';
    if (!Same(exe, program)) return;
  }
  Copy(g_image, image, sizeof g_image);
  const char* box = EnvVar("KITE_RSC_SANDBOX");
  Copy(g_sandbox, box ? box : "", sizeof g_sandbox);
  const char* state = EnvVar("KITE_RSC_STATE");
  Copy(g_state, state ? state : g_sandbox, sizeof g_state);
  if (const char* code = EnvVar("KITE_CKPT_EXIT")) g_exit_code = ::atoi(code);
  struct stat st;
  if (tree) {
    g_tree = true;
    Copy(g_first_sandbox, g_sandbox, sizeof g_first_sandbox);
    // The process the starter launched restores the tree — the child of the job's wrapper, the
    // leader of the job's process group (or that leader itself, started without a wrapper) —
    // unless one of the run's did already; a child it starts again restores what
    // KITE_CKPT_ENTRY names.
    const char* entry = EnvVar("KITE_CKPT_ENTRY");
    long group = Sys(SYS_getpgid, 0);
    bool first =
        !entry && (Sys(SYS_getppid) == group || Sys(SYS_getpid) == group) && ClaimProgram();
    if ((first || entry) && ::stat(image, &st) == 0) RestoreTree(image, entry);
  } else {
    if (!ClaimProgram()) return;
    if (::stat(image, &st) == 0) Restore(image);
  }
  struct sigaction sa {};
  sa.sa_sigaction = OnCheckpointSignal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  ::sigfillset(&sa.sa_mask);
  ::sigaction(g_signal, &sa, nullptr);
}

bool Renamed() {
  return g_npids > 0;
}
long KnownPid(long real) {
  return KnownOf(real);
}
long RealPid(long known) {
  return RealOf(known);
}

// Kite's own variables from the launch, anything else from the program; the first run's sandbox
// in a value (its start, or after a ':') becomes this run's.
std::vector<std::string> EnvironmentFor(char* const* envp) {
  auto ours = [](const char* kv) {
    return StartsWith(kv, "KITE_") || StartsWith(kv, "LD_PRELOAD=");
  };
  std::vector<std::string> out;
  for (const char* kv = g_launch_env; *kv; kv += Len(kv) + 1)
    if (ours(kv) && !PerRestore(kv)) out.emplace_back(kv);
  std::string old_box = g_first_sandbox, new_box = g_sandbox;
  for (char* const* e = envp; e && *e; ++e) {
    if (ours(*e)) continue;
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (!old_box.empty() && old_box != new_box && eq != std::string::npos) {
      for (size_t at = eq + 1; at < kv.size();) {
        size_t end = at + old_box.size();
        if (kv.compare(at, old_box.size(), old_box) == 0 &&
            (end == kv.size() || kv[end] == '/' || kv[end] == ':')) {
          kv.replace(at, old_box.size(), new_box);
          at += new_box.size();
        }
        size_t colon = kv.find(':', at);
        if (colon == std::string::npos) break;
        at = colon + 1;
      }
    }
    out.push_back(std::move(kv));
  }
  return out;
}

void EnterCall() {
  g_in_call = 1;
}

void LeaveCall() {
  g_in_call = 0;
  if (g_pending) {
    g_pending = 0;
    ::raise(g_signal);
  }
}

}  // namespace kite::rsc::ckpt
