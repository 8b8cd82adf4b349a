#include "egca/cfg/reachability.h"

#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/dominator_tree.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/property_map/property_map.hpp>

namespace egca::cfg {
namespace {

struct SkipExceptions {
  const Graph* g = nullptr;
  bool follow = true;
  bool operator()(Graph::edge_descriptor e) const {
    return follow || (*g)[e].kind != EdgeKind::kException;
  }
};

class MarkVisited : public boost::default_bfs_visitor {
 public:
  explicit MarkVisited(std::vector<bool>* seen) : seen_(seen) {}
  template <typename Vertex, typename G>
  void discover_vertex(Vertex v, const G&) const {
    (*seen_)[v] = true;
  }

 private:
  std::vector<bool>* seen_;  // Borrowed.
};

}  // namespace

std::vector<bool> ReachableBlocks(const FunctionCfg& scope, const ReachabilityOptions& options) {
  std::vector<bool> seen(scope.block_count(), false);
  using Filtered = boost::filtered_graph<Graph, SkipExceptions>;
  Filtered fg(scope.graph, SkipExceptions{&scope.graph, options.follow_exception_edges});
  std::vector<boost::default_color_type> colors(scope.block_count());
  boost::breadth_first_search(
      fg, scope.entry,
      boost::visitor(MarkVisited(&seen))
          .color_map(boost::make_iterator_property_map(
              colors.begin(), boost::get(boost::vertex_index, scope.graph))));
  return seen;
}

std::vector<int32_t> ImmediateDominators(const FunctionCfg& scope) {
  const size_t n = scope.block_count();
  std::vector<BlockId> dom(n, boost::graph_traits<Graph>::null_vertex());
  auto index = boost::get(boost::vertex_index, scope.graph);
  auto dom_map = boost::make_iterator_property_map(dom.begin(), index);
  boost::lengauer_tarjan_dominator_tree(scope.graph, scope.entry, dom_map);
  std::vector<int32_t> out(n, -1);
  for (size_t v = 0; v < n; ++v) {
    if (dom[v] != boost::graph_traits<Graph>::null_vertex()) out[v] = static_cast<int32_t>(dom[v]);
  }
  return out;
}

bool Dominates(const std::vector<int32_t>& idom, BlockId a, BlockId b) {
  for (int64_t v = static_cast<int64_t>(b); v >= 0; v = idom[v]) {
    if (static_cast<BlockId>(v) == a) return true;
  }
  return false;
}

}  // namespace egca::cfg
