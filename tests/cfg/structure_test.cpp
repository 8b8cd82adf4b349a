// Normalized labels and the Weisfeiler-Lehman structural similarity, against values
// computed by hand from the formula in structure.h.
#include "egca/cfg/structure.h"

#include <gtest/gtest.h>

#include <cmath>

#include "egca/cfg/cfg.h"

namespace egca::cfg {
namespace {

ProgramCfg MustBuild(const std::string& src) {
  StatusOr<ProgramCfg> p = ProgramCfg::Build(src);
  EXPECT_TRUE(p.ok() && p->parsed());
  return std::move(p).value();
}

TEST(Structure, LabelsIgnoreIdentifiersAndLiterals) {
  ProgramCfg p = MustBuild("def f(a):\n    for i in a:\n        a += 1\n");
  const FunctionCfg& f = p.scopes()[1];
  EXPECT_EQ(NormalizedLabel(f.block(1).statements[0]), "for@0");
  EXPECT_EQ(NormalizedLabel(f.block(2).statements[0]), "augassign@1");
  EXPECT_EQ(NormalizedLabel(f.block(2).statements[0], LabelMode::kCoarse), "simple@1");
  EXPECT_EQ(NormalizedLabel(f.block(1).statements[0], LabelMode::kCoarse), "loop@0");
  ProgramCfg renamed = MustBuild("def g(zz):\n    for k in zz:\n        zz += 99\n");
  EXPECT_DOUBLE_EQ(CompareStructure(p, renamed).score, 1.0);
}

// A: def f(x): return x            nodes: entry, return@0, exit
// B: def f(x): y = x; return y     nodes: entry, assign@0, return@0, exit
// (module level left out: both define a function).
constexpr const char* kA = "def f(x):\n    return x\n";
constexpr const char* kB = "def f(x):\n    y = x\n    return y\n";

TEST(Structure, WlKernelWithoutIterationsIsLabelCosine) {
  // h = 0: phi(A) = {entry:1, return:1, exit:1}, phi(B) = {entry, assign, return, exit}
  // sim = 3 / sqrt(3 * 4).
  StructureOptions o = StructureOptions().set_iterations(0).set_labels(LabelMode::kKind);
  double s = CompareStructure(MustBuild(kA), MustBuild(kB), o).score;
  EXPECT_NEAR(s, 3.0 / std::sqrt(12.0), 1e-12);
}

TEST(Structure, WlKernelOneIteration) {
  // h = 1 adds one relabelled feature per node. Common to A and B after relabelling: only
  // Exit (its single in-edge is a kReturn from a return@0 node in both); Entry, return@0
  // differ in their neighbours. phi(A) has 3 + 3 features, phi(B) 4 + 4, all count 1:
  // sim = (3 + 1) / sqrt(6 * 8).
  StructureOptions o = StructureOptions().set_iterations(1).set_labels(LabelMode::kKind);
  double s = CompareStructure(MustBuild(kA), MustBuild(kB), o).score;
  EXPECT_NEAR(s, 4.0 / std::sqrt(48.0), 1e-12);
}

TEST(Structure, WlKernelCountsRepeatedLabels) {
  // C: def f(x): y = x; y = y; return y   nodes: entry, assign x2, return, exit
  // h = 0: phi(B) = (1,1,1,1) on (entry, assign, return, exit), phi(C) = (1,2,1,1)
  // sim = (1 + 2 + 1 + 1) / sqrt(4 * 7).
  StructureOptions o = StructureOptions().set_iterations(0).set_labels(LabelMode::kKind);
  ProgramCfg c = MustBuild("def f(x):\n    y = x\n    y = y\n    return y\n");
  double s = CompareStructure(MustBuild(kB), c, o).score;
  EXPECT_NEAR(s, 5.0 / std::sqrt(28.0), 1e-12);
}

TEST(Structure, ComparabilityGate) {
  ProgramCfg ref = MustBuild(
      "def count(xs):\n    n = 0\n    for x in xs:\n        if x > 0:\n            n += 1\n"
      "    return n\n");
  ProgramCfg near = MustBuild(
      "def count(values):\n    total = 0\n    for v in values:\n        if v >= 1:\n"
      "            total = total + 1\n    return total\n");
  ProgramCfg far = MustBuild(
      "def count(xs):\n    try:\n        return len([x for x in xs if x > 0])\n"
      "    except TypeError:\n        raise\n");
  Comparability a = CompareStructure(near, ref);
  Comparability b = CompareStructure(far, ref);
  EXPECT_DOUBLE_EQ(a.score, 1.0);
  EXPECT_TRUE(a.comparable);
  EXPECT_LT(b.score, a.score);
  EXPECT_EQ(b.comparable, b.score >= StructureOptions().threshold);
  EXPECT_DOUBLE_EQ(a.threshold, StructureOptions().threshold);
  // Symmetric, bounded.
  EXPECT_NEAR(CompareStructure(ref, far).score, b.score, 1e-12);
  EXPECT_GE(b.score, 0.0);
  // A program that does not parse is never comparable.
  StatusOr<ProgramCfg> bad = ProgramCfg::Build("def count(:\n");
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(CompareStructure(*bad, ref).comparable);
  EXPECT_EQ(CompareStructure(*bad, ref).score, 0.0);
}

TEST(Structure, ScriptsWithoutFunctionsUseTheirModuleLevel) {
  ProgramCfg a = MustBuild("n = int(input())\nfor i in range(n):\n    print(i)\n");
  ProgramCfg b = MustBuild("m = int(input())\nfor j in range(m):\n    print(j * 2)\n");
  EXPECT_DOUBLE_EQ(CompareStructure(a, b).score, 1.0);
  EXPECT_GT(StructureFingerprint::OfProgram(a).node_count(), 0u);
}

}  // namespace
}  // namespace egca::cfg
