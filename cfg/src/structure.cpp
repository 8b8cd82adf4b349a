#include "egca/cfg/structure.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "wl.h"

namespace egca::cfg {

uint64_t HashString(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

uint64_t HashCombine(uint64_t seed, uint64_t value) {
  // splitmix64 finalizer over the pair: deterministic across platforms and runs.
  uint64_t x = seed ^ (value + 0x9E3779B97F4A7C15ULL + (seed << 6) + (seed >> 2));
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

const char* CoarseClass(StmtKind kind) {
  switch (kind) {
    case StmtKind::kIf:
    case StmtKind::kElif:
    case StmtKind::kMatch:
    case StmtKind::kCase:
    case StmtKind::kComprehensionIf:
      return "branch";
    case StmtKind::kFor:
    case StmtKind::kAsyncFor:
    case StmtKind::kWhile:
    case StmtKind::kComprehensionFor:
      return "loop";
    case StmtKind::kReturn:
    case StmtKind::kLambdaBody:
      return "return";
    case StmtKind::kRaise:
    case StmtKind::kAssert:
      return "raise";
    case StmtKind::kBreak:
    case StmtKind::kContinue:
      return "jump";
    case StmtKind::kTry:
    case StmtKind::kExcept:
    case StmtKind::kFinally:
    case StmtKind::kWith:
    case StmtKind::kAsyncWith:
      return "try";
    case StmtKind::kFunctionDef:
    case StmtKind::kAsyncFunctionDef:
    case StmtKind::kClassDef:
      return "def";
    default:
      return "simple";
  }
}

std::string NormalizedLabel(const Statement& s, LabelMode mode) {
  return fmt::format("{}@{}",
                     mode == LabelMode::kCoarse ? CoarseClass(s.kind) : StmtKindName(s.kind),
                     s.loop_depth);
}

NormGraph BuildNormGraph(const ProgramCfg& program, const std::vector<int32_t>& scopes,
                         bool include_imports, LabelMode mode) {
  NormGraph g;
  const auto& all = program.scopes();
  std::vector<int32_t> entry_node(all.size(), -1);
  struct BlockNodes {
    int32_t first = -1;
    int32_t last = -1;
  };
  std::vector<std::vector<BlockNodes>> block_nodes(all.size());
  auto included = [&](const Statement& s) {
    return s.kind != StmtKind::kDocstring && (include_imports || s.kind != StmtKind::kImport);
  };
  for (int32_t sc : scopes) {
    const FunctionCfg& f = all[sc];
    block_nodes[sc].resize(f.block_count());
    for (BlockId b = 0; b < f.block_count(); ++b) {
      const BasicBlock& bb = f.block(b);
      BlockNodes& bn = block_nodes[sc][b];
      for (size_t i = 0; i < bb.statements.size(); ++i) {
        if (!included(bb.statements[i])) continue;
        int32_t id = static_cast<int32_t>(g.nodes.size());
        g.nodes.push_back(NormNode{sc, b, static_cast<int32_t>(i),
                                   HashString(NormalizedLabel(bb.statements[i], mode))});
        if (bn.last >= 0) g.edges.push_back(NormEdge{bn.last, id, uint8_t(EdgeKind::kNormal)});
        if (bn.first < 0) bn.first = id;
        bn.last = id;
      }
      if (bn.first < 0) {
        std::string label = bb.kind == BlockKind::kEntry
                                ? fmt::format("entry:{}", ScopeKindName(f.kind))
                                : (bb.kind == BlockKind::kExit ? "exit" : "empty");
        int32_t id = static_cast<int32_t>(g.nodes.size());
        g.nodes.push_back(NormNode{sc, b, -1, HashString(label)});
        bn.first = bn.last = id;
      }
    }
    entry_node[sc] = block_nodes[sc][f.entry].first;
  }
  for (int32_t sc : scopes) {
    const FunctionCfg& f = all[sc];
    for (BlockId b = 0; b < f.block_count(); ++b) {
      for (const Successor& s : f.Successors(b)) {
        g.edges.push_back(NormEdge{block_nodes[sc][b].last, block_nodes[sc][s.block].first,
                                   static_cast<uint8_t>(s.kind)});
      }
    }
  }
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    const NormNode& n = g.nodes[v];
    if (n.statement < 0) continue;
    for (int32_t child : all[n.scope].block(n.block).statements[n.statement].child_scopes) {
      if (child >= 0 && child < static_cast<int32_t>(all.size()) && entry_node[child] >= 0) {
        g.edges.push_back(NormEdge{static_cast<int32_t>(v), entry_node[child], kScopeEdge});
      }
    }
  }
  return g;
}

std::vector<std::vector<uint64_t>> WlLabels(const NormGraph& g, int32_t iterations) {
  const size_t n = g.nodes.size();
  std::vector<std::vector<uint64_t>> labels;
  labels.reserve(iterations + 1);
  std::vector<uint64_t> cur(n);
  for (size_t v = 0; v < n; ++v) cur[v] = g.nodes[v].label;
  labels.push_back(cur);
  std::vector<std::vector<std::pair<int32_t, uint8_t>>> out(n), in(n);
  for (const NormEdge& e : g.edges) {
    out[e.from].push_back({e.to, e.kind});
    in[e.to].push_back({e.from, e.kind});
  }
  std::vector<uint64_t> neigh;
  for (int32_t it = 0; it < iterations; ++it) {
    std::vector<uint64_t> next(n);
    for (size_t v = 0; v < n; ++v) {
      neigh.clear();
      for (auto [u, k] : out[v]) neigh.push_back(HashCombine(HashCombine(1, k), cur[u]));
      for (auto [u, k] : in[v]) neigh.push_back(HashCombine(HashCombine(2, k), cur[u]));
      std::sort(neigh.begin(), neigh.end());
      uint64_t h = HashCombine(0xC0FFEEULL + static_cast<uint64_t>(it), cur[v]);
      for (uint64_t x : neigh) h = HashCombine(h, x);
      next[v] = h;
    }
    cur = next;
    labels.push_back(cur);
  }
  return labels;
}

namespace {

std::vector<int32_t> ScopeAndDescendants(const ProgramCfg& program, int32_t root) {
  std::vector<int32_t> out;
  const auto& all = program.scopes();
  for (int32_t i = 0; i < static_cast<int32_t>(all.size()); ++i) {
    for (int32_t p = i; p >= 0; p = all[p].parent) {
      if (p == root) {
        out.push_back(i);
        break;
      }
    }
  }
  return out;
}

}  // namespace

StructureFingerprint StructureFingerprint::OfScope(const ProgramCfg& program, int32_t scope,
                                                   const StructureOptions& options) {
  StructureFingerprint fp;
  if (!program.parsed() || scope < 0 || scope >= static_cast<int32_t>(program.scopes().size())) {
    return fp;
  }
  std::vector<int32_t> scopes = ScopeAndDescendants(program, scope);
  if (!options.include_module_level && scope == 0 && scopes.size() > 1) {
    scopes.erase(std::remove(scopes.begin(), scopes.end(), 0), scopes.end());
  }
  NormGraph g = BuildNormGraph(program, scopes, options.include_imports, options.labels);
  std::vector<std::vector<uint64_t>> labels = WlLabels(g, options.iterations);
  for (size_t it = 0; it < labels.size(); ++it) {
    for (uint64_t l : labels[it]) fp.features_[HashCombine(it, l)] += 1.0;
  }
  for (const auto& [k, v] : fp.features_) fp.self_kernel_ += v * v;
  fp.node_count_ = g.nodes.size();
  return fp;
}

StructureFingerprint StructureFingerprint::OfProgram(const ProgramCfg& program,
                                                     const StructureOptions& options) {
  return OfScope(program, 0, options);
}

double StructureFingerprint::Similarity(const StructureFingerprint& other) const {
  if (self_kernel_ <= 0 || other.self_kernel_ <= 0) return 0.0;
  const auto& small = features_.size() <= other.features_.size() ? features_ : other.features_;
  const auto& large = features_.size() <= other.features_.size() ? other.features_ : features_;
  double dot = 0;
  for (const auto& [k, v] : small) {
    auto it = large.find(k);
    if (it != large.end()) dot += v * it->second;
  }
  return std::min(1.0, dot / std::sqrt(self_kernel_ * other.self_kernel_));
}

Comparability CompareStructure(const ProgramCfg& candidate, const ProgramCfg& reference,
                               const StructureOptions& options) {
  Comparability c;
  c.threshold = options.threshold;
  if (!candidate.parsed() || !reference.parsed()) return c;
  c.score = StructureFingerprint::OfProgram(candidate, options)
                .Similarity(StructureFingerprint::OfProgram(reference, options));
  c.comparable = c.score >= options.threshold;
  return c;
}

}  // namespace egca::cfg
