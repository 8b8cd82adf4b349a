// Reachability and dominators over one scope's CFG (Boost.Graph algorithms on
// FunctionCfg::graph). Dead code after a return, a block only reached through an
// exception edge, or "which blocks must have run before this one" are questions the
// divergence engine asks when it explains a divergence.
#pragma once

#include <vector>

#include "egca/cfg/cfg.h"

namespace egca::cfg {

struct ReachabilityOptions {
  // Follow exception edges (a block only reachable when something raises counts as
  // reachable) or not.
  bool follow_exception_edges = true;

  ReachabilityOptions& set_follow_exception_edges(bool v) {
    follow_exception_edges = v;
    return *this;
  }
};

// reachable[b] for every block, from Entry.
std::vector<bool> ReachableBlocks(const FunctionCfg& scope,
                                  const ReachabilityOptions& options = {});

// Immediate dominator of every block (Lengauer-Tarjan); Entry's, and an unreachable
// block's, is -1.
std::vector<int32_t> ImmediateDominators(const FunctionCfg& scope);

// Whether `a` dominates `b` (every path from Entry to b passes through a), given the
// immediate dominators. A block dominates itself.
bool Dominates(const std::vector<int32_t>& idom, BlockId a, BlockId b);

}  // namespace egca::cfg
