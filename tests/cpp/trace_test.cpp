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

TEST(CppTrace, DivergenceReportForTheViews) {
  // Candidate: x = 3 after line 2 where the reference has 2 (value), both return at line 6
  // with 0 vs 2 (return). Steps: the 'A' and 'R' events only (the 'B' ones are not blamed).
  CppTrace ref = ParseTrace(
      "T B 2 0 0\tn=1\nT A 2 0 0\tn=1\tx=2\nT B 6 0 0\tn=1\tx=2\nT R 6 0 0\treturn=2\n");
  CppTrace cand = ParseTrace(
      "T B 2 0 0\tn=1\nT A 2 0 0\tn=1\tx=3\nT B 6 0 0\tn=1\tx=3\nT R 6 0 0\treturn=3\n");
  CppLocalization loc = Localize(kRef, kRef, cand, ref, 1);
  diff::DivergenceReport r = ToDivergenceReport(kRef, kRef, cand, ref, loc);
  ASSERT_EQ(r.alignment.candidate_steps.size(), 2u);
  const diff::Step& a2 = r.alignment.candidate_steps[0];
  EXPECT_EQ(a2.first_line, 2);
  EXPECT_EQ(a2.first_event, 1);
  ASSERT_EQ(a2.state.size(), 2u);
  EXPECT_EQ(a2.state[1], (std::pair<std::string, std::string>("x", "3")));
  EXPECT_EQ(a2.changed, std::vector<std::string>{"x"});  // n was already 1 before
  const diff::Step& r6 = r.alignment.candidate_steps[1];
  EXPECT_TRUE(r6.returned);
  EXPECT_EQ(r6.return_value, "3");
  // Pairs: events 1 and 3 of both (B events skipped).
  ASSERT_EQ(r.alignment.pairs.size(), 2u);
  EXPECT_EQ(r.alignment.pairs[0].candidate, 0);
  EXPECT_EQ(r.alignment.pairs[0].reference, 0);
  EXPECT_TRUE(r.alignment.pairs[0].diverges);
  ASSERT_TRUE(r.earliest.has_value());
  EXPECT_EQ(r.earliest->kind, diff::DivergenceKind::kValue);
  EXPECT_EQ(r.earliest->pair, 0);
  EXPECT_EQ(r.earliest->line, 2);
  ASSERT_EQ(r.earliest->variables.size(), 1u);
  EXPECT_EQ(r.earliest->variables[0].candidate_value, "3");
  EXPECT_EQ(r.earliest->variables[0].reference_value, "2");
  ASSERT_TRUE(r.last.has_value());
  EXPECT_EQ(r.last->kind, diff::DivergenceKind::kReturnValue);
  EXPECT_EQ(r.last->line, 6);
  EXPECT_EQ(r.last->pair, 1);
  EXPECT_EQ(r.divergence_count, 2);
  // Executed boundaries: lines 2 and 6, as whole-line spans.
  ASSERT_EQ(r.executed_boundaries.size(), 2u);
  EXPECT_EQ(r.executed_boundaries[1].begin.line, 6);
}

TEST(CppTrace, DivergenceReportKeepsABlamedBeforeEventAndEndedRuns) {
  // The candidate stops after line 2 while the reference goes on: "ended", blamed on the
  // candidate's last event (its 'A' 2); the reference's extra step is a gap.
  CppTrace ref = ParseTrace("T B 2 0 0\tn=1\nT A 2 0 0\tn=1\tx=2\nT B 6 0 0\tn=1\tx=2\n");
  CppTrace cand = ParseTrace("T B 2 0 0\tn=1\nT A 2 0 0\tn=1\tx=2\n");
  CppLocalization loc = Localize(kRef, kRef, cand, ref, 1);
  ASSERT_TRUE(loc.earliest.ended);
  diff::DivergenceReport r = ToDivergenceReport(kRef, kRef, cand, ref, loc);
  ASSERT_TRUE(r.earliest.has_value());
  EXPECT_EQ(r.earliest->kind, diff::DivergenceKind::kEnded);
  // The reference's 'B' 6 is not blamed, so not a step: the only pair is (0, 0).
  ASSERT_EQ(r.alignment.pairs.size(), 1u);
  EXPECT_TRUE(r.alignment.pairs[0].diverges);
  // A control divergence at a 'B' event keeps that event as a step.
  CppTrace ref2 = ParseTrace("T B 3 0 0\tx=2\nT A 3 0 0\tx=2\nT B 6 0 0\tx=2\n");
  CppTrace cand2 = ParseTrace("T B 3 0 0\tx=2\nT A 3 0 0\tx=2\nT B 4 3 5\tx=2\nT A 4 3 5\tx=0\n");
  CppLocalization loc2 = Localize(kRef, kRef, cand2, ref2, 1);
  ASSERT_EQ(loc2.earliest.event, 2);
  diff::DivergenceReport r2 = ToDivergenceReport(kRef, kRef, cand2, ref2, loc2);
  ASSERT_TRUE(r2.earliest.has_value());
  EXPECT_EQ(r2.earliest->kind, diff::DivergenceKind::kControl);
  EXPECT_EQ(r2.earliest->line, 3);
  EXPECT_EQ(r2.alignment.candidate_steps[r2.earliest->candidate_step].first_line, 4);
  EXPECT_EQ(r2.alignment.reference_steps[r2.earliest->reference_step].first_line, 6);
}

}  // namespace
}  // namespace egca::cpp
