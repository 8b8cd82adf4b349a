#include "egca/cfg/matching.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "egca/cfg/structure.h"
#include "wl.h"

namespace egca::cfg {
namespace {

using Features = std::map<uint64_t, double>;

// Per-block WL feature vectors of one scope (its own statements only).
std::vector<Features> BlockFeatures(const ProgramCfg& program, int32_t scope, int32_t iterations,
                                    LabelMode mode) {
  const FunctionCfg& f = program.scopes()[scope];
  std::vector<Features> out(f.block_count());
  NormGraph g = BuildNormGraph(program, {scope}, /*include_imports=*/true, mode);
  std::vector<std::vector<uint64_t>> labels = WlLabels(g, iterations);
  for (size_t it = 0; it < labels.size(); ++it) {
    for (size_t v = 0; v < g.nodes.size(); ++v) {
      out[g.nodes[v].block][HashCombine(it, labels[it][v])] += 1.0;
    }
  }
  for (BlockId b = 0; b < f.block_count(); ++b) {
    const BasicBlock& bb = f.block(b);
    out[b][HashString(fmt::format("term:{}@{}", TerminatorName(bb.terminator), bb.loop_depth))] +=
        1.0;
  }
  return out;
}

double Cosine(const Features& a, const Features& b) {
  double dot = 0, na = 0, nb = 0;
  for (const auto& [k, v] : a) {
    na += v * v;
    auto it = b.find(k);
    if (it != b.end()) dot += v * it->second;
  }
  for (const auto& [k, v] : b) nb += v * v;
  if (na <= 0 || nb <= 0) return 0;
  return dot / std::sqrt(na * nb);
}

}  // namespace

std::optional<BlockId> BlockMatching::ReferenceFor(BlockId candidate) const {
  for (const BlockMatch& m : pairs) {
    if (m.candidate == candidate) return m.reference;
  }
  return std::nullopt;
}

std::optional<BlockId> BlockMatching::CandidateFor(BlockId reference) const {
  for (const BlockMatch& m : pairs) {
    if (m.reference == reference) return m.candidate;
  }
  return std::nullopt;
}

std::string BlockMatching::Dump() const {
  std::string out;
  for (const BlockMatch& m : pairs) {
    out += fmt::format("B{} ~ B{} {:.3f}\n", m.candidate, m.reference, m.score);
  }
  for (BlockId b : unmatched_candidate) out += fmt::format("B{} ~ -\n", b);
  for (BlockId b : unmatched_reference) out += fmt::format("- ~ B{}\n", b);
  return out;
}

BlockMatching MatchBlocks(const ProgramCfg& candidate, int32_t candidate_scope,
                          const ProgramCfg& reference, int32_t reference_scope,
                          const MatchOptions& options) {
  BlockMatching result;
  if (!candidate.parsed() || !reference.parsed()) return result;
  const FunctionCfg& cf = candidate.scopes().at(candidate_scope);
  const FunctionCfg& rf = reference.scopes().at(reference_scope);
  std::vector<Features> cfeat =
      BlockFeatures(candidate, candidate_scope, options.iterations, options.labels);
  std::vector<Features> rfeat =
      BlockFeatures(reference, reference_scope, options.iterations, options.labels);

  // Basic blocks are numbered in source order, so ids give the sequences to align.
  std::vector<BlockId> cs, rs;
  for (BlockId b = 0; b < cf.block_count(); ++b) {
    if (cf.block(b).kind == BlockKind::kBasic) cs.push_back(b);
  }
  for (BlockId b = 0; b < rf.block_count(); ++b) {
    if (rf.block(b).kind == BlockKind::kBasic) rs.push_back(b);
  }
  const size_t n = cs.size(), m = rs.size();
  std::vector<std::vector<double>> score(n, std::vector<double>(m));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < m; ++j) score[i][j] = Cosine(cfeat[cs[i]], rfeat[rs[j]]);
  }
  // best[i][j]: max total score aligning cs[i..] with rs[j..].
  std::vector<std::vector<double>> best(n + 1, std::vector<double>(m + 1, 0.0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      double v = std::max(best[i + 1][j], best[i][j + 1]);
      if (score[i][j] >= options.min_score) v = std::max(v, score[i][j] + best[i + 1][j + 1]);
      best[i][j] = v;
    }
  }
  result.pairs.push_back(BlockMatch{cf.entry, rf.entry, 1.0});
  size_t i = 0, j = 0;
  std::vector<bool> cmatched(n, false), rmatched(m, false);
  while (i < n && j < m) {
    if (score[i][j] >= options.min_score && best[i][j] == score[i][j] + best[i + 1][j + 1]) {
      result.pairs.push_back(BlockMatch{cs[i], rs[j], score[i][j]});
      cmatched[i] = rmatched[j] = true;
      ++i;
      ++j;
    } else if (best[i][j] == best[i + 1][j]) {
      ++i;
    } else {
      ++j;
    }
  }
  result.pairs.push_back(BlockMatch{cf.exit, rf.exit, 1.0});
  for (size_t a = 0; a < n; ++a) {
    if (!cmatched[a]) result.unmatched_candidate.push_back(cs[a]);
  }
  for (size_t b = 0; b < m; ++b) {
    if (!rmatched[b]) result.unmatched_reference.push_back(rs[b]);
  }
  return result;
}

std::vector<ScopeMatch> MatchScopes(const ProgramCfg& candidate, const ProgramCfg& reference,
                                    const MatchOptions& options) {
  std::vector<ScopeMatch> out;
  if (!candidate.parsed() || !reference.parsed()) return out;
  const auto& cs = candidate.scopes();
  const auto& rs = reference.scopes();
  StructureOptions so;
  so.iterations = options.iterations;
  so.labels = options.labels;
  std::vector<StructureFingerprint> cfp, rfp;
  for (size_t i = 0; i < cs.size(); ++i) {
    cfp.push_back(StructureFingerprint::OfScope(candidate, static_cast<int32_t>(i), so));
  }
  for (size_t j = 0; j < rs.size(); ++j) {
    rfp.push_back(StructureFingerprint::OfScope(reference, static_cast<int32_t>(j), so));
  }
  std::vector<bool> cused(cs.size(), false), rused(rs.size(), false);
  auto take = [&](size_t i, size_t j) {
    out.push_back(
        ScopeMatch{static_cast<int32_t>(i), static_cast<int32_t>(j), cfp[i].Similarity(rfp[j])});
    cused[i] = rused[j] = true;
  };
  take(0, 0);
  // Same kind and qualified name: the entry point and its helpers keep their names.
  for (size_t i = 1; i < cs.size(); ++i) {
    for (size_t j = 1; j < rs.size(); ++j) {
      if (!rused[j] && !cused[i] && cs[i].kind == rs[j].kind && cs[i].kind != ScopeKind::kLambda &&
          cs[i].kind != ScopeKind::kComprehension && cs[i].qualified_name == rs[j].qualified_name) {
        take(i, j);
      }
    }
  }
  // The rest greedily by similarity (ties: lower indices first).
  struct Cand {
    double s;
    size_t i, j;
  };
  std::vector<Cand> cands;
  for (size_t i = 1; i < cs.size(); ++i) {
    for (size_t j = 1; j < rs.size(); ++j) {
      if (cused[i] || rused[j] || cs[i].kind != rs[j].kind) continue;
      double s = cfp[i].Similarity(rfp[j]);
      if (s >= options.min_score) cands.push_back(Cand{s, i, j});
    }
  }
  std::stable_sort(cands.begin(), cands.end(),
                   [](const Cand& a, const Cand& b) { return a.s > b.s; });
  for (const Cand& c : cands) {
    if (!cused[c.i] && !rused[c.j]) take(c.i, c.j);
  }
  std::sort(out.begin(), out.end(),
            [](const ScopeMatch& a, const ScopeMatch& b) { return a.candidate < b.candidate; });
  return out;
}

}  // namespace egca::cfg
