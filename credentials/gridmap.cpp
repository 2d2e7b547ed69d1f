// grid-mapfile parsing and lookup.
#include "credentials/gridmap.h"

#include <algorithm>

#include "common/files.h"
#include "common/strings.h"

namespace kite::credentials {

namespace {

struct Line {
  std::string dn;
  std::vector<std::string> accounts;
};

// Reads the DN at the start of `s`, advancing past it. Returns an error text, or "" on success.
std::string ReadDn(std::string_view& s, std::string& dn) {
  if (s.front() != '"') {
    size_t end = s.find_first_of(" \t");
    if (end == std::string_view::npos) return "no account after the DN";
    dn.assign(s.substr(0, end));
    s.remove_prefix(end);
    return "";
  }
  size_t i = 1;
  for (; i < s.size() && s[i] != '"'; ++i) {
    if (s[i] == '\\') {
      if (++i == s.size()) break;
    }
    dn += s[i];
  }
  if (i >= s.size()) return "unterminated quoted DN";
  s.remove_prefix(i + 1);
  return "";
}

std::string ParseLine(std::string_view text, Line& out) {
  std::string_view s = text;
  if (auto e = ReadDn(s, out.dn); !e.empty()) return e;
  if (out.dn.empty()) return "empty DN";
  if (out.dn.front() != '/') return "DN '" + out.dn + "' does not start with '/'";
  if (!s.empty() && s.front() != ' ' && s.front() != '\t') return "no blank after the quoted DN";
  s = Trim(s);
  if (s.empty()) return "no account after the DN";
  for (auto& a : Split(s, ',', false)) {
    if (a.empty()) return "empty account name in '" + std::string(s) + "'";
    if (a.find_first_of(" \t\"") != std::string::npos) return "bad account name '" + a + "'";
    out.accounts.push_back(std::move(a));
  }
  return "";
}

}  // namespace

Result<GridMap> GridMap::Parse(std::string_view text, std::string_view source) {
  GridMap gm;
  int line_no = 0;
  for (size_t pos = 0; pos <= text.size();) {
    size_t nl = text.find('\n', pos);
    std::string_view raw = text.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#') continue;
    Line parsed;
    if (auto e = ParseLine(line, parsed); !e.empty()) {
      return Fail(ErrorCode::kInvalidInput,
                  std::string(source) + ":" + std::to_string(line_no) + ": " + e);
    }
    auto& accounts = gm.map_[parsed.dn];
    for (auto& a : parsed.accounts) {
      if (std::find(accounts.begin(), accounts.end(), a) == accounts.end()) {
        accounts.push_back(std::move(a));
      }
    }
  }
  return gm;
}

Result<GridMap> GridMap::Load(const std::string& path) {
  auto text = ReadFile(path);
  if (!text) return Fail(text.error());
  return Parse(*text, path);
}

const std::vector<std::string>& GridMap::Accounts(std::string_view dn) const {
  static const std::vector<std::string> kNone;
  auto it = map_.find(std::string(dn));
  return it == map_.end() ? kNone : it->second;
}

std::optional<std::string> GridMap::DefaultAccount(std::string_view dn) const {
  const auto& a = Accounts(dn);
  if (a.empty()) return std::nullopt;
  return a.front();
}

bool GridMap::Allows(std::string_view dn, std::string_view account) const {
  const auto& a = Accounts(dn);
  return std::find(a.begin(), a.end(), account) != a.end();
}

}  // namespace kite::credentials
