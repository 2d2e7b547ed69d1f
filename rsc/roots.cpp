#include "rsc/roots.h"

#include <algorithm>

#include "rsc/paths.h"

namespace kite::rsc {

std::string NormalPath(const std::string& cwd, const std::string& path) {
  return LexicalPath(cwd, path, /*clamp=*/false);
}

bool IsSystemPath(const std::string& p) {
  static const char* const kSystem[] = {"/bin",   "/boot",  "/dev",    "/etc",     "/lib",
                                        "/lib32", "/lib64", "/libx32", "/proc",    "/run",
                                        "/sbin",  "/sys",   "/usr",    "/var/run", "/var/lib"};
  if (p == "/") return true;
  for (const char* s : kSystem) {
    std::string root = s;
    if (p == root || p.compare(0, root.size() + 1, root + "/") == 0) return true;
  }
  return false;
}

std::vector<std::string> RemoteRoots(const classad::ClassAd& job) {
  std::string iwd = job.EvaluateString("Iwd").value_or("");
  std::vector<std::string> out;
  auto add = [&](const std::string& path) {
    if (path.empty() || (iwd.empty() && path[0] != '/')) return;
    std::string n = NormalPath(iwd.empty() ? "/" : iwd, path);
    if (n.empty() || IsSystemPath(n)) return;
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  add(iwd);
  for (const char* attr : {"In", "Out", "Err"}) {
    auto v = job.EvaluateString(attr);
    if (v && *v != "/dev/null") add(*v);
  }
  // remote_io_paths: blanks and commas separate; relative ones are under the Iwd.
  // Arguments (Args in the old syntax): the words that are absolute paths (quotes around a word
  // are not part of it).
  for (const char* attr : {"RemoteIOPaths", "Arguments", "Args"}) {
    std::string v = job.EvaluateString(attr).value_or("");
    std::string word;
    for (size_t k = 0; k <= v.size(); ++k) {
      char c = k < v.size() ? v[k] : ' ';
      if (c == ' ' || c == '\t' || c == ',' || c == '\n') {
        if (!word.empty() && (attr[0] == 'R' || word[0] == '/')) add(word);
        word.clear();
      } else if (c != '"' && c != '\'') {
        word.push_back(c);
      }
    }
  }
  // A root inside another says nothing more.
  std::vector<std::string> kept;
  for (const auto& p : out) {
    bool inside = std::any_of(out.begin(), out.end(),
                              [&](const std::string& r) { return r != p && PathUnder(p, r); });
    if (!inside) kept.push_back(p);
  }
  return kept;
}

}  // namespace kite::rsc
