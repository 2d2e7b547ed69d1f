// Path defaults.
#include "common/paths.h"

#include <pwd.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>

#include "common/files.h"

namespace kite {

std::string KiteHome() {
  if (const char* h = std::getenv("KITE_HOME"); h && *h) return AbsolutePath(h);
  const char* home = std::getenv("HOME");
  std::string base;
  if (home && *home) {
    base = home;
  } else if (auto* pw = ::getpwuid(::getuid())) {
    base = pw->pw_dir;
  } else {
    base = "/tmp";
  }
  return JoinPath(base, ".kite");
}

std::string DefaultProxyPath() {
  if (const char* p = std::getenv("X509_USER_PROXY"); p && *p) return p;
  return "/tmp/x509up_u" + std::to_string(::getuid());
}

std::string ProgramDir() {
  if (const char* d = std::getenv("KITE_LIBEXEC"); d && *d) return d;
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  return DirName(buf);
}

std::string ProgramPath(const std::string& name) {
  return JoinPath(ProgramDir(), name);
}

}  // namespace kite
