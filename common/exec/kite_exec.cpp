// kite-exec: runs one job and records how it ended, so that its starter need not be its parent.
//
//   kite-exec --dir DIR [--lock-fd N] [--cwd DIR] [--in FILE] [--out FILE] [--err FILE] [--append]
//             [--no-aslr] -- PROGRAM ARGS...
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
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
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
    else
      return false;
  }
  for (; i < argc; ++i) a->argv.push_back(argv[i]);
  a->argv.push_back(nullptr);
  return !a->dir.empty() && a->argv.size() > 1;
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

[[noreturn]] void RunChild(const Args& a, int pipe_fd) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR2}) sigaction(s, &dfl, nullptr);
  if (a.no_aslr &&
      personality(static_cast<unsigned long>(personality(0xffffffff)) | ADDR_NO_RANDOMIZE) < 0)
    ChildFail(pipe_fd, 'S', errno, "cannot turn address-space randomisation off");
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
            "[--append] [--no-aslr] -- "
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

  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return 2;
  kite::ExecStatus st;
  st.start = Now();
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) RunChild(a, p[1]);
  g_child = pid;
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
