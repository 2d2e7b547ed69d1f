#include "rsc/ckpt_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "rsc/ckpt_image.h"

namespace kite::rsc::ckpt {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool PreadAll(int fd, void* p, size_t n, off_t at) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = ::pread(fd, c, n, at);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
    at += r;
  }
  return true;
}

bool WriteAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

std::vector<TreeProcess> GroupProcesses(pid_t group) {
  std::vector<TreeProcess> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (struct dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || pid == group) continue;
    std::string stat = Slurp("/proc/" + std::string(e->d_name) + "/stat");
    // "PID (NAME) STATE PPID PGRP ...": the name may hold spaces and parentheses.
    size_t open = stat.find('('), close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close + 2 >= stat.size())
      continue;
    std::istringstream rest(stat.substr(close + 2));
    TreeProcess p;
    long ppid = 0, pgrp = 0;
    if (!(rest >> p.state >> ppid >> pgrp) || pgrp != group) continue;
    p.pid = static_cast<pid_t>(pid);
    p.ppid = static_cast<pid_t>(ppid);
    p.name = stat.substr(open + 1, close - open - 1);
    out.push_back(p);
  }
  ::closedir(d);
  return out;
}

std::string PartOf(const std::string& image, pid_t pid) {
  return image + "." + std::to_string(pid);
}

void RemoveParts(const std::string& image, const std::vector<TreeProcess>& procs) {
  for (const auto& p : procs) {
    ::unlink(PartOf(image, p.pid).c_str());
    ::unlink((PartOf(image, p.pid) + ".refused").c_str());
  }
}

std::string Describe(const TreeProcess& p) {
  return std::to_string(p.pid) + " (" + p.name + ")";
}

std::string SignalRefusal(const TreeProcess& p) {
  // The signal's default would end it: a process still starting (or restoring) has no handler
  // yet, and one that blocks it would keep every other stopped until the grace is over.
  std::string status = Slurp("/proc/" + std::to_string(p.pid) + "/status");
  auto mask = [&](const char* field) {
    size_t at = status.find(field);
    return at == std::string::npos
               ? 0ULL
               : std::strtoull(status.c_str() + at + std::strlen(field), nullptr, 16);
  };
  uint64_t bit = uint64_t{1} << (kSignal - 1);
  if (!(mask("SigCgt:") & bit))
    return "process " + Describe(p) + " does not take the checkpoint signal (yet: is it starting?)";
  if (mask("SigBlk:") & bit) return "process " + Describe(p) + " blocks the checkpoint signal";
  return "";
}

std::string TreeRefusal(pid_t leader, const std::vector<TreeProcess>& procs,
                        const std::string& library) {
  pid_t first = 0;
  for (const auto& p : procs) {
    if (p.ppid != leader) continue;
    if (first) return "the job has more than one first process";
    first = p.pid;
  }
  if (!first) return "the job has no process left";
  if (procs.size() > kMaxTree)
    return "the job has more than " + std::to_string(kMaxTree) + " processes";
  for (const auto& p : procs) {
    if (p.pid != first && p.ppid != first)
      return "process " + Describe(p) +
             " is not the script's child but a grandchild (a script and its children only)";
    std::string maps = Slurp("/proc/" + std::to_string(p.pid) + "/maps");
    if (maps.find("/" + library + "\n") == std::string::npos)
      return "process " + Describe(p) + " is not under the checkpoint library " +
             "(a statically linked or set-user-ID program?)";
    if (std::string why = SignalRefusal(p); !why.empty()) return why;
  }
  return "";
}

std::string ComposeTree(const std::string& image, const std::vector<TreeProcess>& procs) {
  if (procs.empty() || procs.size() > kMaxTree) return "no processes to put together";
  // The first process first (any order would do for a restore; this one reads well).
  std::vector<TreeProcess> order = procs;
  for (size_t i = 0; i < order.size(); ++i) {
    bool parent_here = false;
    for (const auto& q : order) parent_here = parent_here || q.pid == order[i].ppid;
    if (!parent_here) std::swap(order[0], order[i]);
  }
  TreeHeader t{};
  std::memcpy(t.magic, kTreeMagic, sizeof t.magic);
  t.count = order.size();
  std::vector<TreeEntry> entries(order.size());
  std::vector<int> fds;
  auto close_all = [&] {
    for (int fd : fds) ::close(fd);
  };
  uint64_t at = sizeof t + order.size() * sizeof(TreeEntry);
  for (size_t i = 0; i < order.size(); ++i) {
    std::string part = PartOf(image, order[i].pid);
    int fd = ::open(part.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    Header h;
    if (fd < 0 || ::fstat(fd, &st) != 0 || !PreadAll(fd, &h, sizeof h, 0)) {
      if (fd >= 0) ::close(fd);
      close_all();
      return "the image of process " + Describe(order[i]) + " cannot be read";
    }
    fds.push_back(fd);
    entries[i] = {h.pid, h.ppid, at, static_cast<uint64_t>(st.st_size)};
    at += static_cast<uint64_t>(st.st_size);
  }
  if (const char* bad = CheckTree(t, entries.data(), at)) {
    close_all();
    return std::string("the images do not make a tree: ") + bad;
  }
  std::string tmp = image + ".tree";
  int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool ok = out >= 0 && WriteAll(out, &t, sizeof t) &&
            WriteAll(out, entries.data(), entries.size() * sizeof(TreeEntry));
  for (size_t i = 0; ok && i < fds.size(); ++i) {
    // In the kernel where the file system allows it (copy_file_range), else through a buffer.
    uint64_t left = entries[i].length;
    loff_t from = 0;
    while (ok && left > 0) {
      ssize_t n = ::copy_file_range(fds[i], &from, out, nullptr, left, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        std::vector<char> buf(1 << 20);
        while (ok && left > 0) {
          size_t want = left < buf.size() ? left : buf.size();
          ok = PreadAll(fds[i], buf.data(), want, from) && WriteAll(out, buf.data(), want);
          from += static_cast<loff_t>(want);
          left -= want;
        }
        break;
      }
      left -= static_cast<uint64_t>(n);
    }
  }
  ok = ok && ::fsync(out) == 0;
  if (out >= 0) ::close(out);
  close_all();
  if (const char* bad = ok ? nullptr : "cannot write the tree's image (disk full?)") {
    ::unlink(tmp.c_str());
    return bad;
  }
  if (::rename(tmp.c_str(), image.c_str()) != 0) return "cannot rename the tree's image into place";
  std::string folder = image.substr(0, image.rfind('/') + 1);
  int dir = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  RemoveParts(image, order);
  return "";
}

}  // namespace kite::rsc::ckpt
