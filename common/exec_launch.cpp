// The kite-exec launch sequence.
#include "common/exec_launch.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/exec_status.h"

namespace kite {

Result<pid_t> LaunchUnderExec(const ExecLaunch& l) {
  int lock = ::open((l.dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock < 0) return FailErrno("open " + l.dir + "/lock");
  if (::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    ::close(lock);
    return Fail(ErrorCode::kConflict, l.dir + " already has a live wrapper");
  }
  // An earlier run's pid and owner are not this one's. Written over, then cut to length: a
  // lock file reused for another run keeps its data block (emptying it first frees the block).
  std::string head = l.owner.empty() ? "" : "owner " + l.owner + "\n";
  if (::pwrite(lock, head.data(), head.size(), 0) != static_cast<ssize_t>(head.size()) ||
      ::ftruncate(lock, static_cast<off_t>(head.size())) != 0) {
    int err = errno;
    ::close(lock);
    return FailErrno("write " + l.dir + "/lock", err);
  }
  std::vector<std::string> argv = {l.exec_path, "--lock-fd", "3",    "--dir", l.dir,
                                   "--cwd",     l.cwd,       "--in", l.in};
  if (!l.out.empty()) argv.insert(argv.end(), {"--out", l.out});
  if (!l.err.empty()) argv.insert(argv.end(), {"--err", l.err});
  if (l.append) argv.push_back("--append");
  if (l.no_aslr) argv.push_back("--no-aslr");
  if (!l.fuse.server.empty()) {
    std::string roots;
    for (const auto& r : l.fuse.roots) roots += (roots.empty() ? "" : ":") + r;
    argv.insert(argv.end(),
                {"--fuse-server", l.fuse.server, "--fuse-socket", l.fuse.socket, "--fuse-mount",
                 l.fuse.mount, "--fuse-log", l.fuse.log, "--fuse-roots", roots});
    if (!l.fuse.keep.empty()) argv.insert(argv.end(), {"--fuse-keep", l.fuse.keep});
  }
  argv.push_back("--");
  argv.push_back(l.program);
  argv.insert(argv.end(), l.args.begin(), l.args.end());
  std::vector<std::string> env = l.env;
  std::vector<char*> cargv, cenv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (auto& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  sigset_t all, stop;
  sigfillset(&all);
  ExecStopSignals(&stop);  // held until kite-exec can pass them on to the job
  posix_spawnattr_setsigmask(&attr, &stop);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawn_file_actions_adddup2(&fa, lock, 3);  // dup2 clears FD_CLOEXEC on fd 3
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  // Nothing else of the starter's reaches the job: an inherited socket would outlive the starter.
  posix_spawn_file_actions_addclosefrom_np(&fa, 4);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, l.exec_path.c_str(), &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(lock);  // the wrapper now holds the lock alone; it adds its pid and, later, its end
  if (rc != 0) return FailErrno("spawn " + l.exec_path, rc);
  return pid;
}

}  // namespace kite
