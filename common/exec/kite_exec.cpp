// kite-exec: runs one job and records how it ended, so that its starter need not be its parent.
//
//   kite-exec --dir DIR [--lock-fd N] [--cwd DIR] [--in FILE] [--out FILE] [--err FILE] [--append]
//             [--no-aslr] [--fuse-server PROG --fuse-socket SOCK --fuse-mount DIR --fuse-log FILE
//             --fuse-roots R1:R2... [--fuse-keep DIR]] -- PROGRAM ARGS...
//
// While it lives it holds an exclusive flock on DIR/lock (or on the already locked file it
// inherits as fd N, so the lock is never free between its starter's decision and its start); when
// the job ends it appends how it ended to DIR/lock (see common/exec_status.h) and exits 0. The job
// runs with this process's environment. The wrapper ignores SIGTERM/SIGINT/SIGHUP/SIGQUIT so that
// signalling the job's process group (how Kite stops a job) stops the job while the wrapper lives
// on to record the signal; it ignores SIGUSR2 too, the transparent checkpoint signal
// (docs/checkpoints.md), which goes to the job's group the same way. `--no-aslr` runs the program
// without address-space randomisation (personality), as a restored checkpoint needs. Deliberately
// small: only libc and common/exec_status, so it starts fast.
//
// With `--fuse-server` the job reaches its remote paths through the kernel (docs/remote-io.md):
// this wrapper opens /dev/fuse and starts the server (kite-rsc-fuse) on it in a session of its
// own; the job, before its program starts, enters a mount namespace of its own (and a user
// namespace when not root), mounts the file system at DIR, puts each root's folder or file from
// it over that root's path, puts the folder --fuse-keep (its sandbox, when inside a root) back
// over the mounted tree, and lets go of DIR. Nothing of this is seen outside the job's
// processes; the server ends when the last of them has.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/exec_status.h"
#include "common/files.h"

namespace {

volatile sig_atomic_t g_child = 0;    // the job, once forked
volatile sig_atomic_t g_pending = 0;  // a stop signal that arrived before the job existed

void ForwardToJob(int sig) {
  if (g_child > 0) {
    kill(static_cast<pid_t>(g_child), sig);
  } else {
    g_pending = sig;
  }
}

double Now() {
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6;
}

struct Args {
  std::string dir, cwd, in = "/dev/null", out, err;
  int lock_fd = -1;
  bool append = false;
  bool no_aslr = false;
  std::string fuse_server, fuse_socket, fuse_mount, fuse_log, fuse_roots, fuse_keep;
  int fuse_fd = -1;       // /dev/fuse, opened here
  int fuse_mounted = -1;  // written one byte by the job once it has mounted the file system
  std::vector<char*> argv;
};

bool ParseArgs(int argc, char** argv, Args* a) {
  int i = 1;
  for (; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--") {
      ++i;
      break;
    }
    if (k == "--append") {
      a->append = true;
      continue;
    }
    if (k == "--no-aslr") {
      a->no_aslr = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    std::string v = argv[++i];
    if (k == "--dir")
      a->dir = v;
    else if (k == "--cwd")
      a->cwd = v;
    else if (k == "--lock-fd")
      a->lock_fd = atoi(v.c_str());
    else if (k == "--in")
      a->in = v;
    else if (k == "--out")
      a->out = v;
    else if (k == "--err")
      a->err = v;
    else if (k == "--fuse-server")
      a->fuse_server = v;
    else if (k == "--fuse-socket")
      a->fuse_socket = v;
    else if (k == "--fuse-mount")
      a->fuse_mount = v;
    else if (k == "--fuse-log")
      a->fuse_log = v;
    else if (k == "--fuse-roots")
      a->fuse_roots = v;
    else if (k == "--fuse-keep")
      a->fuse_keep = v;
    else
      return false;
  }
  for (; i < argc; ++i) a->argv.push_back(argv[i]);
  a->argv.push_back(nullptr);
  bool fuse_whole = !a->fuse_socket.empty() && !a->fuse_mount.empty() && !a->fuse_roots.empty();
  return !a->dir.empty() && a->argv.size() > 1 && (a->fuse_server.empty() || fuse_whole);
}

// Writes `text` at the end of the file `fd` is open on (synced when `sync`).
bool Append(int fd, const std::string& text, bool sync) {
  off_t end = lseek(fd, 0, SEEK_END);
  return end >= 0 &&
         pwrite(fd, text.data(), text.size(), end) == static_cast<ssize_t>(text.size()) &&
         (!sync || fsync(fd) == 0);
}

// Child side: report a failure through the pipe as "S<errno> <what>" or "E<errno>", then exit.
[[noreturn]] void ChildFail(int fd, char kind, int err, const std::string& what) {
  std::string msg = std::string(1, kind) + std::to_string(err) + " " + what;
  (void)!write(fd, msg.data(), msg.size());
  _exit(127);
}

int OpenOrFail(int pipe_fd, const std::string& path, int flags, int target, const char* role) {
  int fd = open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) ChildFail(pipe_fd, 'S', errno, "cannot open " + path + " as " + role);
  if (dup2(fd, target) < 0) ChildFail(pipe_fd, 'S', errno, std::string("dup2 ") + role);
  close(fd);
  return 0;
}

bool WriteFile(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// The job's side of remote I/O through the kernel: its own mount namespace, the file system
// mounted, each root put in place from it (see the head of this file).
void MountRemote(const Args& a, int pipe_fd) {
  uid_t uid = getuid();
  gid_t gid = getgid();
  int flags = CLONE_NEWNS | (geteuid() == 0 ? 0 : CLONE_NEWUSER);
  if (unshare(flags) != 0)
    ChildFail(pipe_fd, 'S', errno, "remote I/O: cannot make a mount namespace for the job");
  if ((flags & CLONE_NEWUSER) &&
      !(WriteFile("/proc/self/setgroups", "deny") &&
        WriteFile("/proc/self/uid_map", std::to_string(uid) + " " + std::to_string(uid) + " 1") &&
        WriteFile("/proc/self/gid_map", std::to_string(gid) + " " + std::to_string(gid) + " 1")))
    ChildFail(pipe_fd, 'S', errno, "remote I/O: cannot map the job's user in its namespace");
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    ChildFail(pipe_fd, 'S', errno, "remote I/O: cannot make the job's mounts its own");
  int keep = -1;
  if (!a.fuse_keep.empty()) {
    keep = open(a.fuse_keep.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (keep < 0) ChildFail(pipe_fd, 'S', errno, "remote I/O: cannot open " + a.fuse_keep);
  }
  std::string opts = "fd=" + std::to_string(a.fuse_fd) +
                     ",rootmode=40000,user_id=" + std::to_string(uid) +
                     ",group_id=" + std::to_string(gid);
  if (mount("kite-rsc", a.fuse_mount.c_str(), "fuse.kite-rsc", MS_NOSUID | MS_NODEV,
            opts.c_str()) != 0)
    ChildFail(pipe_fd, 'S', errno, "remote I/O: cannot mount its file system at " + a.fuse_mount);
  close(a.fuse_fd);
  (void)!write(a.fuse_mounted, "m", 1);  // the server may serve now
  close(a.fuse_mounted);
  for (size_t i = 0; i <= a.fuse_roots.size();) {
    size_t j = a.fuse_roots.find(':', i);
    if (j == std::string::npos) j = a.fuse_roots.size();
    std::string root = a.fuse_roots.substr(i, j - i);
    i = j + 1;
    if (root.empty()) continue;
    std::string from = a.fuse_mount + root;
    if (mount(from.c_str(), root.c_str(), nullptr, MS_BIND, nullptr) != 0)
      ChildFail(pipe_fd, 'S', errno,
                "remote I/O: cannot put the remote path " + root + " in place");
  }
  if (keep >= 0) {
    std::string from = "/proc/self/fd/" + std::to_string(keep);
    if (mount(from.c_str(), a.fuse_keep.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      ChildFail(pipe_fd, 'S', errno, "remote I/O: cannot keep the sandbox " + a.fuse_keep);
    close(keep);
  }
  umount2(a.fuse_mount.c_str(), MNT_DETACH);
}

// The file system's server, in a session of its own (stopping the job's group leaves it to
// answer the job's last calls); it ends when the job's namespace does. It may read /dev/fuse only
// once the job has mounted it: it waits for a byte on a pipe the job writes then (a.fuse_mounted;
// the end of the pipe without one: the job never mounted, and the server leaves). A server that
// cannot start closes its descriptor: once the job has closed its own, its mounts fail with
// ENOTCONN, said as the job's setup failure.
void StartFuseServer(Args& a) {
  a.fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  int mounted[2];
  if (a.fuse_fd < 0 || pipe2(mounted, O_CLOEXEC) != 0) {
    perror("kite-exec: remote I/O: /dev/fuse");
    if (a.fuse_fd >= 0) close(a.fuse_fd);
    a.fuse_fd = -1;
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR2}) sigaction(s, &dfl, nullptr);
    close(mounted[1]);
    std::string fd = std::to_string(dup(a.fuse_fd));  // without close-on-exec
    std::string wait = std::to_string(dup(mounted[0]));
    execl(a.fuse_server.c_str(), a.fuse_server.c_str(), "--fd", fd.c_str(), "--mounted",
          wait.c_str(), "--socket", a.fuse_socket.c_str(), "--roots", a.fuse_roots.c_str(), "--log",
          a.fuse_log.c_str(), "--keep", a.fuse_keep.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(mounted[0]);
  a.fuse_mounted = mounted[1];
  if (pid < 0) {
    close(a.fuse_fd);
    a.fuse_fd = -1;
  }
}

[[noreturn]] void RunChild(const Args& a, int pipe_fd) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR2}) sigaction(s, &dfl, nullptr);
  if (a.no_aslr &&
      personality(static_cast<unsigned long>(personality(0xffffffff)) | ADDR_NO_RANDOMIZE) < 0)
    ChildFail(pipe_fd, 'S', errno, "cannot turn address-space randomisation off");
  if (!a.fuse_server.empty()) {
    if (a.fuse_fd < 0)
      ChildFail(pipe_fd, 'S', ENODEV,
                "remote I/O: cannot open /dev/fuse or start its file system's server");
    MountRemote(a, pipe_fd);
  }
  sigset_t stop;
  kite::ExecStopSignals(&stop);
  sigprocmask(SIG_UNBLOCK, &stop, nullptr);  // one sent since the fork is delivered now
  if (!a.cwd.empty() && chdir(a.cwd.c_str()) != 0)
    ChildFail(pipe_fd, 'S', errno, "cannot change to directory " + a.cwd);
  OpenOrFail(pipe_fd, a.in, O_RDONLY, 0, "standard input");
  int wflags = O_WRONLY | O_CREAT | (a.append ? O_APPEND : O_TRUNC);
  if (!a.out.empty()) OpenOrFail(pipe_fd, a.out, wflags, 1, "standard output");
  if (!a.err.empty()) {
    if (a.err == a.out) {
      dup2(1, 2);
    } else {
      OpenOrFail(pipe_fd, a.err, wflags, 2, "standard error");
    }
  }
  execv(a.argv[0], a.argv.data());
  ChildFail(pipe_fd, 'E', errno, a.argv[0]);
}

}  // namespace

int main(int argc, char** argv) {
  sigset_t stop;
  kite::ExecStopSignals(&stop);
  sigprocmask(SIG_BLOCK, &stop, nullptr);
  // `kite-exec --version` answers whether this binary runs here (the glide-in bootstrap asks).
  if (argc == 2 && std::string(argv[1]) == "--version") {
    printf("kite-exec 0.1.0\n");
    return 0;
  }
  Args a;
  if (!ParseArgs(argc, argv, &a)) {
    fprintf(stderr,
            "usage: kite-exec --version | --dir DIR [--cwd DIR] [--in F] [--out F] [--err F] "
            "[--append] [--no-aslr] [--fuse-server P --fuse-socket S --fuse-mount D --fuse-log F "
            "--fuse-roots R:R] -- "
            "PROGRAM ARGS...\n");
    return 2;
  }
  std::string lock = a.dir + "/lock";
  int lock_fd = a.lock_fd;
  if (lock_fd >= 0) {
    fcntl(lock_fd, F_SETFD, FD_CLOEXEC);  // the job itself must not keep the lock alive
  } else {
    lock_fd = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  }
  if (lock_fd < 0 || flock(lock_fd, LOCK_EX) != 0) {
    perror(("kite-exec: lock " + lock).c_str());
    return 2;
  }
  // Its pid after its starter's lines: how a restarted starter signals the job's group, and the
  // mark that the job was handed over. Not synced: after a machine crash no process is left.
  if (!Append(lock_fd, "pid " + std::to_string(getpid()) + "\n", false)) {
    perror(("kite-exec: writing its pid to " + lock).c_str());
    return 2;
  }
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, nullptr);
  sigaction(SIGUSR2, &ign, nullptr);
  struct sigaction fwd {};
  fwd.sa_handler = ForwardToJob;
  fwd.sa_flags = SA_RESTART;
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaction(s, &fwd, nullptr);

  if (!a.fuse_server.empty()) StartFuseServer(a);
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return 2;
  kite::ExecStatus st;
  st.start = Now();
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) RunChild(a, p[1]);
  g_child = pid;
  if (a.fuse_fd >= 0) close(a.fuse_fd);
  if (a.fuse_mounted >= 0) close(a.fuse_mounted);
  if (g_pending) kill(pid, g_pending);
  sigprocmask(SIG_UNBLOCK, &stop, nullptr);
  close(p[1]);
  char buf[1024];
  ssize_t n;
  std::string report;
  while ((n = read(p[0], buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    report.append(buf, static_cast<size_t>(n));
  }
  close(p[0]);
  int wstatus = 0;
  struct rusage ru {};
  while (wait4(pid, &wstatus, 0, &ru) < 0 && errno == EINTR) {
  }
  st.end = Now();
  st.utime = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
  st.stime = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  st.max_rss_kb = ru.ru_maxrss;  // KiB on Linux
  if (!report.empty()) {
    st.kind = report[0] == 'E' ? kite::ExecStatus::Kind::kExecFailed
                               : kite::ExecStatus::Kind::kSetupFailed;
    st.code = atoi(report.c_str() + 1);
    auto sp = report.find(' ');
    std::string what = sp == std::string::npos ? "" : report.substr(sp + 1);
    st.message = what + ": " + strerror(st.code);
  } else if (WIFSIGNALED(wstatus)) {
    st.kind = kite::ExecStatus::Kind::kSignaled;
    st.code = WTERMSIG(wstatus);
    st.core = WCOREDUMP(wstatus);
  } else {
    st.kind = kite::ExecStatus::Kind::kExited;
    st.code = WEXITSTATUS(wstatus);
  }
  // Appended to the lock this process still holds, and synced: no new file, no rename.
  if (!Append(lock_fd, kite::FormatExecStatusRecord(st), true)) {
    perror(("kite-exec: recording the job's end in " + lock).c_str());
    return 2;
  }
  return 0;
}
