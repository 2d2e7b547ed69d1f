// posix_spawn wrapper.
#include "common/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

extern char** environ;

namespace kite {

Result<pid_t> Spawn(const SpawnOptions& o) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (o.new_session) flags |= POSIX_SPAWN_SETSID;
  posix_spawnattr_setflags(&attr, flags);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  if (!o.stdin_path.empty())
    posix_spawn_file_actions_addopen(&fa, 0, o.stdin_path.c_str(), O_RDONLY, 0);
  if (!o.stdout_path.empty())
    posix_spawn_file_actions_addopen(&fa, 1, o.stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
  if (o.stderr_to_stdout)
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  else if (!o.stderr_path.empty())
    posix_spawn_file_actions_addopen(&fa, 2, o.stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
  if (!o.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, o.cwd.c_str());
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);  // only stdin, stdout and stderr are passed on
  std::vector<char*> argv, envp;
  for (auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : o.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = o.search_path && o.program.find('/') == std::string::npos
               ? posix_spawnp(&pid, o.program.c_str(), &fa, &attr, argv.data(), envp.data())
               : posix_spawn(&pid, o.program.c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return FailErrno("spawn " + o.program, rc);
  return pid;
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

}  // namespace kite
