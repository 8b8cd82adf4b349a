// C++ CFGs and facts from Clang (egca/cpp/analysis.h): golden dumps of hand-checked CFGs,
// the facts the constraint checkers read, I_cmp on C++ programs, the checkers, and the
// record parser's errors.
//
// The goldens (tests/cpp/golden/*.dump) were checked by hand against the rules of
// analysis.h: in cfg_loops.cpp, `count_pairs` has the outer and inner `for` headers as
// loop blocks (depth 0 and 1), the `&&` of the inner `if` inside its header (one edge from
// the inner for to the if), `c++` looping back through the contracted increment to the
// inner header, the `else if` as elif whose false edge goes to the inner header, `break`
// leaving to the outer header, and the `while` with its body looping back; in
// cfg_switch_try.cpp the range-for, the switch's cases in source order (default last and
// "false"), `break` / `continue` inside the switch, the do-while's body before its header
// (true edge back to the body), the `throw` (a full-expression with a temporary) going to
// the try's dispatch, which goes to the catch and to Exit.
#include "egca/cpp/analysis.h"

#include <gtest/gtest.h>

#include "egca/cfg/structure.h"
#include "egca/core/files.h"
#include "egca/cpp/router.h"

namespace egca::cpp {
namespace {

std::string Golden(const std::string& name) {
  auto text = ReadFile(std::string(EGCA_SOURCE_DIR) + "/tests/cpp/golden/" + name);
  EXPECT_TRUE(text.ok()) << name;
  return text.ok() ? text.value() : "";
}

// The analysis, or skips the test when egca was built without libclang-cpp.
#define ANALYZE_OR_SKIP(var, source)                                   \
  auto var##_or = AnalyzeCpp(source);                                  \
  if (var##_or.status().code() == StatusCode::kFailedPrecondition) {   \
    GTEST_SKIP() << var##_or.status().ToString();                      \
  }                                                                    \
  ASSERT_TRUE(var##_or.ok()) << var##_or.status().ToString();          \
  const CppAnalysis& var = *var##_or.value()

TEST(CppCfg, GoldenLoopsAndBranches) {
  ANALYZE_OR_SKIP(a, Golden("cfg_loops.cpp"));
  EXPECT_EQ(a.program.Dump(), Golden("cfg_loops.dump"));
}

TEST(CppCfg, GoldenSwitchDoWhileTryCatch) {
  ANALYZE_OR_SKIP(a, Golden("cfg_switch_try.cpp"));
  EXPECT_EQ(a.program.Dump(), Golden("cfg_switch_try.dump"));
}

// A program that includes <bits/stdc++.h> is analysed with the tool's precompiled header
// and only its own declarations are walked: the same CFG, byte for byte, as the program
// with one named header (both include lines are 24 bytes, so every offset agrees).
TEST(CppCfg, WholeLibraryIncludeGivesTheSameCfg) {
  const std::string body =
      "using namespace std;\n"
      "int total(const vector<int>& v) {\n"
      "  int s = 0;\n"
      "  for (int x : v) {\n"
      "    if (x > 0) s += x; else break;\n"
      "  }\n"
      "  return s;\n"
      "}\n"
      "namespace helpers { int twice(int x) { return 2 * x; } }\n";
  const std::string whole = "#include <bits/stdc++.h>\n" + body;
  const std::string named = "#include <vector>       \n" + body;
  ASSERT_EQ(whole.size(), named.size());
  ANALYZE_OR_SKIP(a, whole);
  ANALYZE_OR_SKIP(b, named);
  EXPECT_EQ(a.program.Dump(), b.program.Dump());
  EXPECT_NE(a.program.Dump().find("twice"), std::string::npos) << a.program.Dump();
  EXPECT_EQ(a.facts.loops.size(), 1u);
}

TEST(CppCfg, FactsOfTheLoopsProgram) {
  ANALYZE_OR_SKIP(a, Golden("cfg_loops.cpp"));
  const gates::ProgramFacts& f = a.facts;
  // Loops: the two fors of count_pairs (depth 1 and 2) and its while (depth 1).
  ASSERT_EQ(f.loops.size(), 3u);
  EXPECT_EQ(f.loops[0].kind, gates::LoopKind::kFor);
  EXPECT_EQ(f.loops[0].span.begin.line, 10);
  EXPECT_EQ(f.loops[1].depth, 2);
  EXPECT_EQ(f.loops[1].span.begin.line, 11);
  EXPECT_EQ(f.loops[2].kind, gates::LoopKind::kWhile);
  EXPECT_EQ(f.loops[2].depth, 1);
  EXPECT_EQ(f.max_loop_depth, 2);
  // fact calls itself.
  ASSERT_EQ(f.recursive_calls.size(), 1u);
  EXPECT_EQ(f.recursive_calls[0].function, "fact");
  EXPECT_TRUE(f.recursive_calls[0].direct);
  EXPECT_EQ(f.recursive_calls[0].span.begin.line, 5);
  // std::vector parameter, std::sort.
  ASSERT_EQ(f.structures.size(), 1u);
  EXPECT_EQ(f.structures[0].structure, gates::DataStructure::kList);
  ASSERT_EQ(f.sorts.size(), 1u);
  EXPECT_EQ(f.sorts[0].how, "std::sort");
  ASSERT_EQ(f.imports.size(), 2u);
  EXPECT_EQ(f.imports[0].module, "vector");
  EXPECT_EQ(f.imports[1].module, "algorithm");
  // Statements: fact 3 (if, 2 returns), count_pairs 11.
  EXPECT_EQ(f.statements.size(), 14u);
}

TEST(CppCfg, ContainersOfTheSwitchProgram) {
  ANALYZE_OR_SKIP(a, Golden("cfg_switch_try.cpp"));
  ASSERT_EQ(a.facts.structures.size(), 2u);
  EXPECT_EQ(a.facts.structures[0].structure, gates::DataStructure::kList);  // the parameter
  EXPECT_EQ(a.facts.structures[1].structure, gates::DataStructure::kDict);  // std::map
  EXPECT_TRUE(a.facts.recursive_calls.empty());
  EXPECT_EQ(a.facts.max_loop_depth, 1);
}

constexpr const char* kIterative =
    "int sum_to(int n) {\n  int s = 0;\n  for (int i = 1; i <= n; ++i) {\n    s += i;\n  }\n"
    "  return s;\n}\n";
constexpr const char* kRenamed =
    "int sum_to(int m) {\n  int total = 0;\n  for (int k = 1; k <= m; k++) total += k;\n"
    "  return total;\n}\n";
constexpr const char* kRecursive =
    "int sum_to(int n) {\n  if (n <= 0) return 0;\n  return n + sum_to(n - 1);\n}\n";

constexpr const char* kRecursiveSwitch =
    "int sum_to(int n) {\n  if (n <= 0) return 0;\n  switch (n) {\n    case 1: return 1;\n"
    "    case 2: return 3;\n    default: break;\n  }\n  return n + sum_to(n - 1);\n}\n";

TEST(CppCfg, ComparabilityOfCppPrograms) {
  ANALYZE_OR_SKIP(it, kIterative);
  auto renamed = AnalyzeCpp(kRenamed);
  auto recursive = AnalyzeCpp(kRecursive);
  ASSERT_TRUE(renamed.ok() && recursive.ok());
  // Same structure with other names and without braces: similarity 1.
  cfg::Comparability same = cfg::CompareStructure((*renamed)->program, it.program);
  EXPECT_DOUBLE_EQ(same.score, 1.0);
  EXPECT_TRUE(same.comparable);
  // Recursion instead of a loop: below Python's threshold, above C++'s (calibrated lower:
  // C++ similarities run lower, docs/cpp.md), so comparable with C++'s settings.
  const cfg::StructureOptions cpp_options = CppStructureOptions();
  EXPECT_DOUBLE_EQ(cpp_options.threshold, kCppComparabilityThreshold);
  cfg::Comparability other = cfg::CompareStructure((*recursive)->program, it.program, cpp_options);
  EXPECT_LT(other.score, 0.40);
  EXPECT_FALSE(cfg::CompareStructure((*recursive)->program, it.program).comparable);
  EXPECT_GT(other.score, kCppComparabilityThreshold);
  EXPECT_TRUE(other.comparable);
  // Recursion with a switch: below C++'s threshold too.
  auto switched = AnalyzeCpp(kRecursiveSwitch);
  ASSERT_TRUE(switched.ok());
  cfg::Comparability far = cfg::CompareStructure((*switched)->program, it.program, cpp_options);
  EXPECT_LT(far.score, kCppComparabilityThreshold);
  EXPECT_FALSE(far.comparable);
}

TEST(CppCfg, ConstraintCheckersOnCppFacts) {
  ANALYZE_OR_SKIP(a, Golden("cfg_loops.cpp"));
  const std::string source = Golden("cfg_loops.cpp");
  auto checkers = MakeCppConstraintSet({{"max_loop_depth", int64_t{1}, ""},
                                        {"forbids_recursion", {}, ""},
                                        {"requires_structure", std::string("dict"), ""},
                                        {"forbids_sorting", {}, ""},
                                        {"max_loop_depth", int64_t{2}, ""}});
  ASSERT_TRUE(checkers.ok()) << checkers.status().ToString();
  ASSERT_EQ(checkers->size(), 5u);
  auto depth = (*checkers)[0]->Violation(source, cfg::ProgramCfg{});
  ASSERT_TRUE(depth.has_value());
  ASSERT_TRUE(depth->span.has_value());
  EXPECT_EQ(depth->span->begin.line, 11);  // the inner for
  auto recursion = (*checkers)[1]->Violation(source, cfg::ProgramCfg{});
  ASSERT_TRUE(recursion.has_value());
  EXPECT_EQ(recursion->span->begin.line, 5);
  EXPECT_TRUE((*checkers)[2]->Violation(source, cfg::ProgramCfg{}).has_value());
  auto sorting = (*checkers)[3]->Violation(source, cfg::ProgramCfg{});
  ASSERT_TRUE(sorting.has_value());
  EXPECT_EQ(sorting->span->begin.line, 9);
  EXPECT_FALSE((*checkers)[4]->Violation(source, cfg::ProgramCfg{}).has_value());
  // A program the tool cannot parse violates nothing (it is SYNTAX).
  EXPECT_FALSE((*checkers)[0]->Violation("int f( {", cfg::ProgramCfg{}).has_value());
  EXPECT_FALSE(MakeCppConstraint({"max_loop_depth", std::string("x"), ""}).ok());
}

TEST(CppCfg, DoesNotParseIsInvalidArgument) {
  auto r = AnalyzeCpp("int f( {\n");
  if (r.status().code() == StatusCode::kFailedPrecondition) GTEST_SKIP();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(CppCfg, ParseAnalysisRejectsMalformedRecords) {
  const std::string src = "int f() { return 1; }\n";
  auto ok = ParseAnalysis(src,
                          "F\tf\tf\t0\t21\t8\t1\nB\t0\tentry\tnone\nB\t1\tbasic\treturn\n"
                          "S\t1\treturn\t0\t10\t18\nB\t2\texit\tnone\nE\t0\t1\tnormal\n"
                          "E\t1\t2\treturn\n");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->program.scopes().size(), 2u);
  EXPECT_EQ(ok->program.scopes()[1].block(1).statements[0].kind, cfg::StmtKind::kReturn);
  EXPECT_EQ(ok->facts.statements.size(), 1u);
  auto bad_kind = ParseAnalysis(src, "F\tf\tf\t0\t21\t8\t1\nB\t0\tentry\tnone\nS\t0\tnope\t0\t0\t1\n");
  EXPECT_EQ(bad_kind.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_kind.status().message().find("line 3"), std::string::npos);
  auto out_of_range = ParseAnalysis(src, "F\tf\tf\t0\t99\t8\t1\n");
  EXPECT_FALSE(out_of_range.ok());
  auto no_exit = ParseAnalysis(src, "F\tf\tf\t0\t21\t8\t1\nB\t0\tentry\tnone\n");
  EXPECT_FALSE(no_exit.ok());
  EXPECT_FALSE(ParseAnalysis(src, "Z\t1\n").ok());
}

}  // namespace
}  // namespace egca::cpp
