#include "dag/config.h"

#include <map>

#include "common/strings.h"
#include "dag/lines.h"

namespace kite::dag {
namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::optional<bool> ParseBool(std::string_view v) {
  std::string u = Upper(v);
  if (u == "TRUE" || u == "T" || u == "YES" || u == "1") return true;
  if (u == "FALSE" || u == "F" || u == "NO" || u == "0") return false;
  return std::nullopt;
}

// A DOT identifier: the text quoted, its quotes and backslashes escaped.
std::string DotId(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace

Result<DagConfig> ParseDagConfig(const std::string& file, std::string_view text) {
  DagConfig out;
  std::map<std::string, std::optional<int>*, std::less<>> ints = {
      {"DAGMAN_MAX_JOBS_SUBMITTED", &out.max_jobs},
      {"DAGMAN_MAX_JOBS_IDLE", &out.max_idle},
      {"DAGMAN_MAX_PRE_SCRIPTS", &out.max_pre},
      {"DAGMAN_MAX_POST_SCRIPTS", &out.max_post}};
  int number = 0;
  std::string line;
  int first = 0;  // the line a continued line began on
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++number;
    if (raw.find('\0') != std::string_view::npos)
      return Fail(ErrorAt({file, number}, "a NUL byte"));
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    if (line.empty()) first = number;
    if (!raw.empty() && raw.back() == '\\') {
      line.append(raw.substr(0, raw.size() - 1));
      if (pos <= text.size()) continue;
    } else {
      line.append(raw);
    }
    std::string whole = std::move(line);
    line.clear();
    std::string_view l = Trim(whole);
    if (l.empty() || l[0] == '#') continue;
    Where where{file, first};
    size_t eq = l.find('=');
    std::string name = eq == std::string_view::npos ? "" : Upper(Trim(l.substr(0, eq)));
    if (name.empty() || name.find_first_of(" \t") != std::string::npos)
      return Fail(ErrorAt(where, "not a setting (NAME = value): " + std::string(l.substr(0, 80))));
    std::string_view value = Trim(l.substr(eq + 1));
    if (auto it = ints.find(name); it != ints.end()) {
      auto n = ParseInt(value);
      if (!n || *n < 0 || *n > 1000000)
        return Fail(ErrorAt(where, name + " must be a whole number from 0 to 1000000"));
      *it->second = *n;
    } else if (name == "DAGMAN_ALWAYS_RUN_POST" || name == "DAGMAN_SUBMIT_DEPTH_FIRST") {
      auto b = ParseBool(value);
      if (!b) return Fail(ErrorAt(where, name + " must be True or False"));
      (name == "DAGMAN_ALWAYS_RUN_POST" ? out.always_run_post : out.depth_first) = *b;
    } else {
      out.warnings.push_back(where.ToString() + ": " + name + " is not applied by Kite");
    }
  }
  return out;
}

std::string DotText(const Dag& dag, const std::string& name, const std::string& header,
                    const std::vector<std::string>* states) {
  std::string out = "digraph " + DotId(name) + " {\n";
  if (!header.empty()) out += header + (header.back() == '\n' ? "" : "\n");
  for (size_t i = 0; i < dag.nodes.size(); ++i) {
    const auto& n = dag.nodes[i];
    std::string label = n.name;
    if (states && i < states->size()) label += " - " + (*states)[i];
    out += "    " + DotId(n.name) + " [label=" + DotId(label) + "];\n";
  }
  for (const auto& n : dag.nodes) {
    for (size_t c : n.children)
      out += "    " + DotId(n.name) + " -> " + DotId(dag.nodes[c].name) + ";\n";
  }
  return out + "}\n";
}

}  // namespace kite::dag
