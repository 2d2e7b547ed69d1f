// libFuzzer target: arbitrary bytes as DAG files. The input is split at the first "\n--\n": the
// part before is a.dag, the part after is what any other name reads (so INCLUDE and SPLICE find
// text, and nest). Must never crash or hang; a parse either fails with "file:line: ..." or gives a
// DAG whose links are consistent and acyclic.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dag/dag.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckDag(const kite::dag::Dag& d) {
  Check(kite::dag::FindCycle(d).empty());
  Check(d.by_name.size() == d.nodes.size());
  for (size_t i = 0; i < d.nodes.size(); ++i) {
    const auto& n = d.nodes[i];
    Check(d.Find(n.name) == &n);
    for (size_t c : n.children) {
      Check(c < d.nodes.size());
      const auto& back = d.nodes[c].parents;
      Check(std::find(back.begin(), back.end(), i) != back.end());
    }
    for (size_t w : n.weak_parents)
      Check(std::find(n.parents.begin(), n.parents.end(), w) != n.parents.end());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t cut = in.find("\n--\n");
  std::string top(in.substr(0, cut));
  std::string other(cut == std::string_view::npos ? "" : in.substr(cut + 4));
  kite::dag::ParseOptions o;
  o.read = [&](const std::string& path) -> kite::Result<std::string> {
    return path == "a.dag" ? top : other;
  };
  o.max_depth = 8;
  o.max_nodes = 10000;
  auto dag = kite::dag::ParseDag({"a.dag"}, o);
  if (dag) {
    CheckDag(*dag);
  } else {
    Check(!dag.error().message().empty());
  }
  return 0;
}
