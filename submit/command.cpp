// Running `include command` and `queue ... from CMD |` commands: /bin/sh -c, output captured.
#include "submit/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "common/spawn.h"

namespace kite::submit {
namespace {

// Closes the file descriptors it holds when it goes out of scope.
struct Fds {
  int fd[4] = {-1, -1, -1, -1};  // stdout read, stdout write, stderr read, stderr write
  ~Fds() {
    for (int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
  void Close(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

Result<pid_t> Start(const std::string& command, const std::string& dir, Fds& fds) {
  if (::pipe2(&fds.fd[0], O_CLOEXEC) != 0 || ::pipe2(&fds.fd[2], O_CLOEXEC) != 0) {
    return FailErrno("pipe");
  }
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds.fd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds.fd[3], 2);
  if (!dir.empty()) posix_spawn_file_actions_addchdir_np(&actions, dir.c_str());
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // own group: a timeout kills it all
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<std::string> env = CurrentEnvironment();
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", dash_c = "-c", cmd = command;
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return FailErrno("cannot run /bin/sh", rc);
  fds.Close(1);
  fds.Close(3);
  return pid;
}

std::string FirstLine(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > 200 ? line.substr(0, 200) + "..." : line;
}

}  // namespace

Result<std::string> RunShellCommand(const std::string& command, const std::string& dir,
                                    int timeout_seconds, size_t max_output) {
  Fds fds;
  auto pid = Start(command, dir, fds);
  if (!pid) return Fail(pid.error());
  std::string out, err;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  bool timed_out = false, too_long = false;
  while (fds.fd[0] >= 0 || fds.fd[2] >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p[2] = {{fds.fd[0], POLLIN, 0}, {fds.fd[2], POLLIN, 0}};
    int n = ::poll(p, 2, static_cast<int>(left));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (p[i].fd < 0 || (p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[65536];
      ssize_t got = ::read(p[i].fd, buf, sizeof buf);
      if (got <= 0) {
        fds.Close(i * 2);
        continue;
      }
      std::string& dest = i == 0 ? out : err;
      if (dest.size() + static_cast<size_t>(got) > max_output) too_long = true;
      if (!too_long) dest.append(buf, static_cast<size_t>(got));
    }
    if (too_long) break;
  }
  if (timed_out || too_long) ::kill(-*pid, SIGKILL);
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Fail(ErrorCode::kTimeout, "command '" + command + "' ran longer than " +
                                         std::to_string(timeout_seconds) + " s and was killed");
  }
  if (too_long) {
    return Fail(ErrorCode::kInvalidInput, "command '" + command + "' wrote more than " +
                                              std::to_string(max_output >> 20) + " MiB");
  }
  if (WIFSIGNALED(status)) {
    return Fail(ErrorCode::kInvalidInput, "command '" + command + "' was killed by signal " +
                                              std::to_string(WTERMSIG(status)));
  }
  if (WEXITSTATUS(status) != 0) {
    std::string why = FirstLine(err);
    return Fail(ErrorCode::kInvalidInput, "command '" + command + "' exited with status " +
                                              std::to_string(WEXITSTATUS(status)) +
                                              (why.empty() ? "" : ": " + why));
  }
  return out;
}

}  // namespace kite::submit
