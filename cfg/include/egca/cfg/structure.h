// Normalized structure and structural comparability (EGCA section 3.4: the comparability
// gate I_cmp(y)).
//
// Normalized statement graph of a scope: one node per executed statement (docstrings
// dropped), plus the scope's Entry and Exit; edges follow execution inside a block and
// along every CFG edge, each carrying its EdgeKind; a statement that creates a nested
// scope (def, class, lambda, comprehension) gets a "scope" edge to that scope's Entry, so
// a program is one graph. A node's label ignores identifiers and literals: the statement
// kind and its loop depth ("for@1", "augassign@2", "return@0").
//
// Similarity is the normalized Weisfeiler-Lehman subtree kernel (Shervashidze et al. 2011):
//   l_0(v)     = label(v)
//   l_{i+1}(v) = H(l_i(v), sorted multiset {(dir, edge kind, l_i(u)) : u adjacent to v})
//   phi(G)     = sum_{i=0..h} histogram of l_i over V(G)
//   k(G, G')   = <phi(G), phi(G')>
//   sim(G, G') = k(G, G') / sqrt(k(G, G) k(G', G'))          in [0, 1]
// where dir is "out" or "in" and H an injective relabelling (a 64-bit hash here).
// I_cmp(y) = [sim(G(y), G(y_ref)) >= threshold].
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "egca/cfg/cfg.h"

namespace egca::cfg {

enum class LabelMode : uint8_t {
  kKind,    // the statement kind: "augassign", "elif", "comp-for", ...
  kCoarse,  // its class: simple / branch / loop / return / raise / jump / try / def
};

// Defaults calibrated on 7,141 solved HumanEval programs (MapCoder, LDB, Reflexion) against
// the canonical solutions (bench/cfg/cfg_comparability, docs/cfg.md): these settings separate
// a program's own reference from another task's best (AUC 0.78), and the threshold makes
// ~89% of passing programs comparable.
struct StructureOptions {
  int32_t iterations = 1;  // h
  LabelMode labels = LabelMode::kCoarse;
  double threshold = 0.40;
  // Module-level statements (the prompt's imports, test calls an LLM appends) are mostly
  // noise for comparing solutions. When a program defines no function/class at all (a
  // stdin script), its module level is used regardless.
  bool include_module_level = false;
  bool include_imports = false;

  StructureOptions& set_iterations(int32_t v) {
    iterations = v;
    return *this;
  }
  StructureOptions& set_labels(LabelMode v) {
    labels = v;
    return *this;
  }
  StructureOptions& set_threshold(double v) {
    threshold = v;
    return *this;
  }
  StructureOptions& set_include_module_level(bool v) {
    include_module_level = v;
    return *this;
  }
  StructureOptions& set_include_imports(bool v) {
    include_imports = v;
    return *this;
  }
};

// Label of one statement: kind (or its coarse class) and loop depth, no identifiers or
// literals: "augassign@1", "loop@0".
std::string NormalizedLabel(const Statement& statement, LabelMode mode = LabelMode::kKind);
const char* CoarseClass(StmtKind kind);

// phi(G) of a whole program (every scope, linked by scope edges) or of one scope.
class StructureFingerprint {
 public:
  static StructureFingerprint OfProgram(const ProgramCfg& program,
                                        const StructureOptions& options = {});
  static StructureFingerprint OfScope(const ProgramCfg& program, int32_t scope,
                                      const StructureOptions& options = {});
  // Normalized kernel sim(G, G') as above; 0 if either graph is empty.
  double Similarity(const StructureFingerprint& other) const;
  const std::unordered_map<uint64_t, double>& features() const { return features_; }
  size_t node_count() const { return node_count_; }

 private:
  std::unordered_map<uint64_t, double> features_;
  double self_kernel_ = 0;
  size_t node_count_ = 0;
};

struct Comparability {
  double score = 0;  // sim in [0, 1]
  double threshold = 0;
  bool comparable = false;  // I_cmp
};

// I_cmp of a candidate against its reference. Both must have parsed (a program that does
// not parse is SYNTAX before it ever reaches the gate): otherwise score 0, not comparable.
Comparability CompareStructure(const ProgramCfg& candidate, const ProgramCfg& reference,
                               const StructureOptions& options = {});

}  // namespace egca::cfg
