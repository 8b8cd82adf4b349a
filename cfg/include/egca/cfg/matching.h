// Structural matching between a candidate's and a reference's CFGs: which candidate scope
// corresponds to which reference scope, and inside a pair of scopes which candidate block
// corresponds to which reference block. The divergence engine uses it to align the two
// traces boundary by boundary.
//
// Blocks are compared by the cosine of their WL feature vectors (the WL labels, iterations
// 0..h, of their statements in the scope's normalized statement graph, see structure.h, plus
// the block's terminator and loop depth); the matching is the order-preserving alignment of
// the two block sequences (source order) that maximizes the summed score of matched pairs
// (Needleman-Wunsch with zero gap cost), keeping only pairs scoring >= min_score.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "egca/cfg/cfg.h"
#include "egca/cfg/structure.h"

namespace egca::cfg {

struct MatchOptions {
  int32_t iterations = 2;
  // Coarse labels: "b = b + x" and "b += x" are the same step of the algorithm.
  LabelMode labels = LabelMode::kCoarse;
  double min_score = 0.25;

  MatchOptions& set_iterations(int32_t v) {
    iterations = v;
    return *this;
  }
  MatchOptions& set_min_score(double v) {
    min_score = v;
    return *this;
  }
  MatchOptions& set_labels(LabelMode v) {
    labels = v;
    return *this;
  }
};

struct BlockMatch {
  BlockId candidate = 0;
  BlockId reference = 0;
  double score = 0;  // cosine similarity in [0, 1]
};

struct BlockMatching {
  std::vector<BlockMatch> pairs;  // increasing in both candidate and reference block ids
  std::vector<BlockId> unmatched_candidate;
  std::vector<BlockId> unmatched_reference;
  // Entry and Exit always match each other.
  std::optional<BlockId> ReferenceFor(BlockId candidate) const;
  std::optional<BlockId> CandidateFor(BlockId reference) const;
  std::string Dump() const;
};

// Matches the blocks of scope `candidate_scope` of `candidate` with those of
// `reference_scope` of `reference`.
BlockMatching MatchBlocks(const ProgramCfg& candidate, int32_t candidate_scope,
                          const ProgramCfg& reference, int32_t reference_scope,
                          const MatchOptions& options = {});

struct ScopeMatch {
  int32_t candidate = -1;
  int32_t reference = -1;
  double score = 0;
};

// Pairs scopes one-to-one: the modules with each other, then scopes of the same kind and
// name (the entry point), then the remaining ones greedily by WL similarity
// (>= options.min_score). Sorted by candidate scope.
std::vector<ScopeMatch> MatchScopes(const ProgramCfg& candidate, const ProgramCfg& reference,
                                    const MatchOptions& options = {});

}  // namespace egca::cfg
