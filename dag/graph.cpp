// FindCycle: a depth-first walk over the children, without recursion (a 10,000-node chain is
// deep).
#include <algorithm>

#include "dag/dag.h"

namespace kite::dag {

std::vector<std::string> FindCycle(const Dag& dag) {
  enum Color : char { kWhite, kGrey, kBlack };
  std::vector<Color> color(dag.nodes.size(), kWhite);
  // (node, next child to look at)
  std::vector<std::pair<size_t, size_t>> stack;
  for (size_t root = 0; root < dag.nodes.size(); ++root) {
    if (color[root] != kWhite) continue;
    stack.push_back({root, 0});
    color[root] = kGrey;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      const auto& children = dag.nodes[node].children;
      if (next == children.size()) {
        color[node] = kBlack;
        stack.pop_back();
        continue;
      }
      size_t child = children[next++];
      if (color[child] == kGrey) {
        // The grey nodes on the stack from `child` to `node` are the cycle.
        std::vector<std::string> cycle;
        auto from = std::find_if(stack.begin(), stack.end(),
                                 [&](const auto& e) { return e.first == child; });
        for (auto it = from; it != stack.end(); ++it) cycle.push_back(dag.nodes[it->first].name);
        cycle.push_back(dag.nodes[child].name);
        return cycle;
      }
      if (color[child] == kWhite) {
        color[child] = kGrey;
        stack.push_back({child, 0});
      }
    }
  }
  return {};
}

}  // namespace kite::dag
