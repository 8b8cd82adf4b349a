// Snapshot traces: parsing, dumps, line matching and the earliest / last divergence rules.
#include "egca/cpp/trace.h"

#include <gtest/gtest.h>

namespace egca::cpp {
namespace {

TEST(CppTrace, ParsesEventsAndSkipsOtherLines) {
  CppTrace t = ParseTrace(
      "egca-cpp abc\nT B 3 0 0\tn=5\nT A 3 0 0\tn=5\tx=[1,2]\ngarbage\nT R 4 2 6\treturn=7\nT stop\n");
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_TRUE(t.stopped);
  EXPECT_EQ(DumpTrace(t), "B 3 n=5\nA 3 n=5 x=[1,2]\nR 4 [2-6] return=7\nstopped\n");
}

TEST(CppTrace, MatchLinesFollowsTheLongestCommonSubsequence) {
  auto map = MatchLines("int f(int n)\n{\n  int x = n + 1;\n  return x;\n}\n",
                        "int f(int n)\n\n{\n  int x = n;\n  return x;\n}\n");
  ASSERT_EQ(map.size(), 5u);
  EXPECT_EQ(map[0], 1);
  EXPECT_EQ(map[1], 3);
  EXPECT_EQ(map[2], 0);  // the changed line
  EXPECT_EQ(map[3], 5);
}

const char* kRef = "int f(int n) {\n  int x = n * 2;\n  if (x > 3) {\n    x = 0;\n  }\n  return x;\n}\n";

TEST(CppTrace, ValueDivergenceBlamesTheStatementThatProducedIt) {
  // Same text, different values at line 2 (as when a callee differs).
  CppTrace ref = ParseTrace("T B 2 0 0\tn=1\nT A 2 0 0\tn=1\tx=2\nT B 3 0 0\tn=1\tx=2\n");
  CppTrace cand = ParseTrace("T B 2 0 0\tn=1\nT A 2 0 0\tn=1\tx=3\nT B 3 0 0\tn=1\tx=3\n");
  CppLocalization loc = Localize(kRef, kRef, cand, ref, 1);
  EXPECT_EQ(loc.earliest.kind, DivergenceKind::kValue);
  EXPECT_EQ(loc.earliest.line, 2);
  EXPECT_EQ(loc.earliest.why, "x: 3 vs 2 (reference)");
  ASSERT_TRUE(loc.earliest.span.has_value());
  EXPECT_EQ(loc.earliest.span->begin.line, 2);
}

TEST(CppTrace, ControlDivergenceBlamesTheDecidingIf) {
  // The candidate enters the if's body (line 4, parent 3-5); the reference skips to 6.
  CppTrace ref = ParseTrace("T B 3 0 0\tx=2\nT A 3 0 0\tx=2\nT B 6 0 0\tx=2\n");
  CppTrace cand = ParseTrace("T B 3 0 0\tx=2\nT B 4 3 5\tx=2\nT A 4 3 5\tx=0\n");
  CppLocalization loc = Localize(kRef, kRef, cand, ref, 1);
  EXPECT_EQ(loc.earliest.kind, DivergenceKind::kControl);
  EXPECT_EQ(loc.earliest.line, 3);
}

TEST(CppTrace, LeavingALoopEarlyBlamesTheLoop) {
  CppTrace ref = ParseTrace("T B 4 3 5\ti=0\nT A 4 3 5\ti=0\nT B 4 3 5\ti=1\n");
  CppTrace cand = ParseTrace("T B 4 3 5\ti=0\nT A 4 3 5\ti=0\nT B 6 0 0\n");
  CppLocalization loc = Localize(kRef, kRef, cand, ref, 1);
  EXPECT_EQ(loc.earliest.kind, DivergenceKind::kControl);
  EXPECT_EQ(loc.earliest.line, 3);
}

TEST(CppTrace, AChangedLineIsBlamedWhenFirstExecuted) {
  const char* cand_src = "int f(int n) {\n  int x = n * 3;\n  if (x > 3) {\n    x = 0;\n  }\n  return x;\n}\n";
  CppTrace ref = ParseTrace("T B 2 0 0\tn=1\nT A 2 0 0\tn=1\tx=2\n");
  CppTrace cand = ParseTrace("T B 2 0 0\tn=1\nT A 2 0 0\tn=1\tx=3\n");
  CppLocalization loc = Localize(cand_src, kRef, cand, ref, 1);
  EXPECT_EQ(loc.earliest.kind, DivergenceKind::kUnmatchedStatement);
  EXPECT_EQ(loc.earliest.line, 2);
  EXPECT_EQ(loc.last.line, 2);
}

TEST(CppTrace, AgreeingTracesHaveNoDivergence) {
  CppTrace t = ParseTrace("T B 2 0 0\tn=1\nT A 2 0 0\tn=1\tx=2\n");
  CppLocalization loc = Localize(kRef, kRef, t, t, 7);
  EXPECT_EQ(loc.earliest.kind, DivergenceKind::kNone);
  EXPECT_FALSE(loc.note.empty());
  EXPECT_EQ(loc.random_line, 2);
}

}  // namespace
}  // namespace egca::cpp
