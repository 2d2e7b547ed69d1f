// RunCommand: posix_spawn with two pipes, poll() until both close or the deadline passes.
#include "gram/batch/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "common/strings.h"

namespace kite::gram::batch {
namespace {

// Bounds what one command may print (squeue over every job of a large site fits easily).
constexpr size_t kMaxOutput = 64u << 20;

void CloseBoth(int p[2]) {
  if (p[0] >= 0) ::close(p[0]);
  if (p[1] >= 0) ::close(p[1]);
}

// Reads what `fd` has; false at end of file or on error (the caller stops watching it).
bool Drain(int fd, std::string* into) {
  char buf[16384];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) return false;
  if (into->size() < kMaxOutput) into->append(buf, static_cast<size_t>(n));
  return true;
}

int WaitExit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

Result<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env,
                                 std::chrono::milliseconds timeout) {
  if (argv.empty() || argv[0].empty()) return Fail(ErrorCode::kInvalidInput, "no command to run");
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0) return FailErrno("pipe");
  if (::pipe2(err, O_CLOEXEC) != 0) {
    CloseBoth(out);
    return FailErrno("pipe");
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0].c_str(), &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    return FailErrno("run " + argv[0], rc);
  }

  CommandResult r;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    int n = ::poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      if (!Drain(fds[i].fd, sinks[i])) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  r.exit_code = WaitExit(pid);
  return r;
}

std::string FindInPath(std::string_view name, std::string_view path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string_view::npos) end = path.size();
    std::string dir(path.substr(start, end - start));
    if (!dir.empty()) {
      std::string candidate = dir + "/" + std::string(name);
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    start = end + 1;
  }
  return "";
}

bool MentionsAny(std::string_view text, std::initializer_list<std::string_view> words) {
  for (auto w : words)
    if (text.find(w) != std::string_view::npos) return true;
  return false;
}

std::string FirstLine(const std::string& s) {
  std::string line(Trim(s.substr(0, s.find('\n'))));
  return line.empty() ? "no message" : line;
}

std::string ShellQuote(std::string_view word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

std::string ExecLine(const JobSpec& spec, const std::string& exec_path) {
  std::string s = "exec " + ShellQuote(exec_path);
  s += " --dir " + ShellQuote(spec.control_dir);
  s += " --cwd " + ShellQuote(spec.cwd);
  s += " --in " + ShellQuote(spec.stdin_path);
  if (!spec.stdout_path.empty()) s += " --out " + ShellQuote(spec.stdout_path);
  if (!spec.stderr_path.empty()) s += " --err " + ShellQuote(spec.stderr_path);
  s += " -- " + ShellQuote(spec.program);
  for (const auto& a : spec.args) s += " " + ShellQuote(a);
  return s + "\n";
}

bool WriteQuick(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

}  // namespace kite::gram::batch
