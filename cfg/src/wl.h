// The normalized statement graph and Weisfeiler-Lehman relabelling shared by structure.cpp
// (comparability) and matching.cpp (block matching). Private to cfg/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "egca/cfg/cfg.h"
#include "egca/cfg/structure.h"

namespace egca::cfg {

struct NormNode {
  int32_t scope = 0;
  BlockId block = 0;
  int32_t statement = -1;  // -1: the block's Entry/Exit/empty node
  uint64_t label = 0;      // hash of the normalized label
};

struct NormEdge {
  int32_t from;
  int32_t to;
  uint8_t kind;  // EdgeKind, or kScopeEdge
};
inline constexpr uint8_t kScopeEdge = 200;

struct NormGraph {
  std::vector<NormNode> nodes;
  std::vector<NormEdge> edges;
};

// Graph over `scopes` (each with its statements); scope edges only between included scopes.
NormGraph BuildNormGraph(const ProgramCfg& program, const std::vector<int32_t>& scopes,
                         bool include_imports, LabelMode mode);

// labels[i][v] = l_i(v) for i = 0..iterations.
std::vector<std::vector<uint64_t>> WlLabels(const NormGraph& graph, int32_t iterations);

uint64_t HashString(const std::string& s);
uint64_t HashCombine(uint64_t seed, uint64_t value);

}  // namespace egca::cfg
