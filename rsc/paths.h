// Lexical path helpers shared by the preloaded library (which links nothing of Kite's) and the
// rest of remote I/O. Header-only; no file system access.
#pragma once

#include <string>
#include <vector>

namespace kite::rsc {

// `path` made absolute against `cwd` with "." and ".." folded and no repeated or trailing '/'.
// A ".." above "/" stays at "/" when `clamp` (as the kernel resolves it), else gives "".
inline std::string LexicalPath(const std::string& cwd, const std::string& path, bool clamp) {
  std::string whole = !path.empty() && path[0] == '/' ? path : cwd + "/" + path;
  std::vector<std::string> parts;
  for (size_t i = 0; i <= whole.size();) {
    size_t j = whole.find('/', i);
    if (j == std::string::npos) j = whole.size();
    std::string c = whole.substr(i, j - i);
    if (c == "..") {
      if (parts.empty() && !clamp) return "";
      if (!parts.empty()) parts.pop_back();
    } else if (!c.empty() && c != ".") {
      parts.push_back(std::move(c));
    }
    i = j + 1;
  }
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

// `p` is `root` or lies inside it (both lexically normal).
inline bool PathUnder(const std::string& p, const std::string& root) {
  if (p == root) return true;
  if (root == "/") return p.size() > 1 && p[0] == '/';
  return p.size() > root.size() && p.compare(0, root.size(), root) == 0 && p[root.size()] == '/';
}

}  // namespace kite::rsc
