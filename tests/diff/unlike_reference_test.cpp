// Localization on programs that do not look like their reference (issue 36): output compared
// as state, calls made by the tests paired in order, a decision taken through a helper the
// reference does not have, weak variable pairings, and each divergence's confidence.
#include <gtest/gtest.h>

#include "diff_test_util.h"

namespace egca::diff {
namespace {

using testing::Diff;
using testing::ReadSource;
using testing::SpanText;

DivergenceOptions WithOutput() {
  DivergenceOptions o;
  o.compare_output = true;
  return o;
}

// The README's stdin example: the wrong value exists only inside print()'s argument.
TEST(UnlikeReference, StdoutIsComparedState) {
  const std::string cand = ReadSource("examples/cli/tri_cand.py");
  const std::string ref = ReadSource("examples/cli/tri_ref.py");
  auto test = tracer::TestCase::Stdio("4\n");
  DivergenceReport r = Diff(cand, ref, test, WithOutput());
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kOutput) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 2);
  EXPECT_EQ(SpanText(cand, r.earliest->span), "print(n * (n - 1) // 2)");
  ASSERT_FALSE(r.earliest->variables.empty());
  EXPECT_EQ(r.earliest->variables[0].candidate_value, "6\n");
  EXPECT_EQ(r.earliest->variables[0].reference_value, "10\n");
  EXPECT_GT(r.earliest->confidence, 0);
  EXPECT_FALSE(r.earliest->evidence.empty());
  // Off (call and assert tests, where output is not judged): no divergence at all.
  DivergenceReport off = Diff(cand, ref, test);
  EXPECT_FALSE(off.earliest) << DumpReport(off);
}

// The first differing byte, not the first write: equal lines before it do not count, and
// the write is blamed whatever its chunking (one print per value against one join).
TEST(UnlikeReference, FirstDifferingOutputByte) {
  const std::string cand =
      "n = int(input())\n"
      "for i in range(n):\n"
      "    print(i * i if i < 3 else i * i + 1)\n"
      "print('done')\n";
  const std::string ref =
      "n = int(input())\n"
      "print('\\n'.join(str(i * i) for i in range(n)))\n"
      "print('done')\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::Stdio("5\n"), WithOutput());
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kOutput) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 3);
  EXPECT_EQ(r.earliest->variables[0].candidate_value, "10\n");  // i = 3: 9 + 1
  EXPECT_EQ(r.earliest->variables[0].reference_value, "9\n");
  // Same output written in other chunks: no divergence.
  const std::string same =
      "n = int(input())\n"
      "for i in range(n):\n"
      "    print(i * i)\n"
      "print('done')\n";
  DivergenceReport none = Diff(same, ref, tracer::TestCase::Stdio("5\n"), WithOutput());
  EXPECT_FALSE(none.earliest) << DumpReport(none);
}

// An extra line at the end of a complete reference output is blamed on its print.
TEST(UnlikeReference, ExtraOutputIsBlamedOnItsWriter) {
  const std::string ref = "n = int(input())\nprint(n)\n";
  const std::string cand = "n = int(input())\nprint(n)\nprint(n + 1)\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::Stdio("7\n"), WithOutput());
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kOutput);
  EXPECT_EQ(r.earliest->line, 3);
}

// A comparison moved into a helper the reference does not have: the value the helper
// returned decided the branch, so its return statement is blamed, not the `if`.
TEST(UnlikeReference, DecisionThroughAnUnmatchedHelper) {
  const std::string ref =
      "def count_items(xs):\n"
      "    n = 0\n"
      "    for x in xs:\n"
      "        if x > 3:\n"
      "            n += 1\n"
      "    return n\n";
  const std::string cand =
      "def ok(z):\n"
      "    return z >= 3\n"
      "\n"
      "def count_items(seq):\n"
      "    count = 0\n"
      "    for x in seq:\n"
      "        if ok(x):\n"
      "            count += 1\n"
      "    return count\n";
  DivergenceReport r =
      Diff(cand, ref, tracer::TestCase::Call("count_items", "[[5, 3, 1]]"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kControl) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 2) << DumpReport(r);
  EXPECT_NE(r.earliest->evidence.find("ok"), std::string::npos) << r.earliest->evidence;
}

// The n-th call the tests make is paired with the reference's n-th call: the second call
// takes a path the reference's second call does not, and its wrong return is found in it,
// not in a neighbouring call.
TEST(UnlikeReference, CallsOfTheTestsPairInOrder) {
  const std::string ref =
      "def f(x):\n"
      "    if x > 0:\n"
      "        return x * 2\n"
      "    return 0\n";
  const std::string cand =
      "def f(x):\n"
      "    if x >= 0:\n"
      "        return x * 2 + (1 if x == 0 else 0)\n"
      "    return 0\n";
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate(3) == 6\n"
      "    assert candidate(0) == 0\n"
      "    assert candidate(-1) == 0\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 2) << DumpReport(r);
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kControl) << DumpReport(r);
}

// Pairing by first value (no name, no agreeing history): of the candidate's variables that
// start like the reference's, the one whose history agrees best takes the pair, so a
// distractor counter bound first does not stand for the accumulator and its harmless
// difference does not become k*.
TEST(UnlikeReference, DistractorBoundFirstDoesNotStealThePair) {
  const std::string ref =
      "def total(xs):\n"
      "    s = 0\n"
      "    for x in xs:\n"
      "        if x > 2:\n"
      "            s += x\n"
      "    return s\n";
  const std::string cand =
      "def total(xs):\n"
      "    scanned = 0\n"
      "    acc = 0\n"
      "    for x in xs:\n"
      "        scanned += 100\n"
      "        if x >= 2:\n"
      "            acc += x\n"
      "    return acc\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::Call("total", "[[1, 2, 3]]"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 6) << DumpReport(r);
  bool acc_paired = false;
  for (const VariableMapping& v : r.alignment.variables) {
    if (v.candidate == "acc") acc_paired = v.reference == "s" && v.basis == "binding";
    EXPECT_NE(v.candidate, "scanned") << "the distractor took " << v.reference;
  }
  EXPECT_TRUE(acc_paired) << DumpAlignment(r);
}

}  // namespace
}  // namespace egca::diff

namespace egca::diff {
namespace {

// A wrong initialization returned unchanged: the returned value is the value of a
// candidate variable the reference has no counterpart of (its history matches none, and two
// reference variables are assigned where it is), so the statement that made it is blamed,
// not the `return`.
TEST(UnlikeReference, ReturnedValueBlamedOnTheStatementThatMadeIt) {
  const std::string ref =
      "def count_items(xs):\n"
      "    n = 0\n"
      "    k = 0\n"
      "    for x in xs:\n"
      "        if x != 2:\n"
      "            n += 1\n"
      "            k += 2\n"
      "    return n\n";
  const std::string cand =
      "def count_items(seq):\n"
      "    hits = 1\n"
      "    for val in seq:\n"
      "        if val != 2:\n"
      "            hits += 1\n"
      "    return hits\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::Call("count_items", "[[2, 2, 2]]"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kReturnValue) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 2) << DumpReport(r);
  EXPECT_NE(r.earliest->evidence.find("hits"), std::string::npos) << r.earliest->evidence;
}

}  // namespace
}  // namespace egca::diff

namespace egca::diff {
namespace {

// A range bug changes every value the loop variable takes, so no value history pairs it:
// the targets of the two `for` headers the block matching pairs are paired by place, and
// the first iteration's value difference is blamed on the header, not on the `if` below.
TEST(UnlikeReference, LoopVariablesPairByTheirHeaders) {
  const std::string ref =
      "def all_items(xs):\n"
      "    for x in xs:\n"
      "        if not x > 4:\n"
      "            return False\n"
      "    return True\n";
  const std::string cand =
      "def all_items(data):\n"
      "    size = len(data)\n"
      "    for v in data[1:]:\n"
      "        if not v > 4:\n"
      "            return False\n"
      "    return True\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::Call("all_items", "[[1, 5, 6]]"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 3) << DumpReport(r);
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kValue) << DumpReport(r);
  bool loop_paired = false;
  for (const VariableMapping& v : r.alignment.variables) {
    if (v.candidate == "v") loop_paired = v.reference == "x" && v.basis == "loop";
  }
  EXPECT_TRUE(loop_paired) << DumpAlignment(r);
  EXPECT_DOUBLE_EQ(r.earliest->confidence, 0.85);
  // A loop that stops one iteration early: the header that ended it is blamed.
  const std::string ref2 =
      "def last_index(xs):\n"
      "    idx = -1\n"
      "    for i in range(len(xs)):\n"
      "        if xs[i] <= 6:\n"
      "            idx = i\n"
      "    return idx\n";
  const std::string cand2 =
      "def last_index(arr):\n"
      "    length = 0\n"
      "    idx = -1\n"
      "    for t in range(len(arr) - 1):\n"
      "        length += 1\n"
      "        if arr[t] <= 6:\n"
      "            idx = t\n"
      "    return idx\n";
  DivergenceReport r2 = Diff(cand2, ref2, tracer::TestCase::Call("last_index", "[[9, 1, 2]]"));
  ASSERT_TRUE(r2.earliest) << DumpReport(r2);
  EXPECT_EQ(r2.earliest->line, 4) << DumpReport(r2);
}

// Of two candidate variables whose values resemble the reference's accumulator, the one
// assigned where the accumulator is assigned (under the `if`, not at the top of the loop
// body) takes the pair, although the distractor's history agrees better: the bug (the
// `if` never holds) leaves the accumulator at its first value.
TEST(UnlikeReference, PairsRankedByAssignmentSites) {
  const std::string ref =
      "def sum_items(xs):\n"
      "    s = 0\n"
      "    for x in xs:\n"
      "        if x > 0:\n"
      "            s += x\n"
      "    return s\n";
  const std::string cand =
      "def sum_items(values):\n"
      "    total = 0\n"
      "    seen = 0\n"
      "    for x in values:\n"
      "        seen += 1\n"
      "        if x == 0:\n"
      "            total += x\n"
      "    return total\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::Call("sum_items", "[[1, 2, 3]]"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 6) << DumpReport(r);
  for (const VariableMapping& v : r.alignment.variables) {
    EXPECT_NE(v.candidate, "seen") << "the distractor took " << v.reference << "\n"
                                   << DumpAlignment(r);
  }
}

// A wrong start shifts every value an accumulator takes (histories {1, 2} and {0, 1} agree
// on a third; the first values differ): it is assigned where the reference's accumulator
// is and nowhere else, so it pairs by place, and the difference is blamed on the start,
// not on the `cnt += 1` that made the returned value.
TEST(UnlikeReference, AccumulatorWithAWrongStartPairsByItsSites) {
  const std::string ref =
      "def count_items(xs):\n"
      "    n = 0\n"
      "    for x in xs:\n"
      "        if x > 2:\n"
      "            n += 1\n"
      "    return n\n";
  const std::string cand =
      "def count_items(nums):\n"
      "    # check the numbers one by one\n"
      "    cnt = 1\n"
      "    for y in nums:\n"
      "        if y > 2:\n"
      "            cnt += 1\n"
      "    return cnt\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::Call("count_items", "[[5, 1]]"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 3) << DumpReport(r);
  bool by_sites = false;
  for (const VariableMapping& v : r.alignment.variables) {
    if (v.candidate == "cnt") by_sites = v.reference == "n" && v.basis == "sites";
  }
  EXPECT_TRUE(by_sites) << DumpAlignment(r);
  EXPECT_DOUBLE_EQ(r.earliest->confidence, 0.5);
}

// `return pos + 1` whose value a counter happens to hold is blamed on the `return`: only a
// statement that returns the unmatched variable itself passes the blame to its assignment.
TEST(UnlikeReference, ReturnedExpressionIsNotAVariablesValue) {
  const std::string ref =
      "def first_index(xs):\n"
      "    for i in range(len(xs)):\n"
      "        if xs[i] >= 6:\n"
      "            return i\n"
      "    return -1\n";
  const std::string cand =
      "def first_index(data):\n"
      "    steps = 0\n"
      "    for pos in range(len(data)):\n"
      "        steps += 1\n"
      "        if data[pos] >= 6:\n"
      "            return pos + 1\n"
      "    return -1\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::Call("first_index", "[[1, 7]]"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 6) << DumpReport(r);
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kReturnValue) << DumpReport(r);
}

}  // namespace
}  // namespace egca::diff

namespace egca::diff {
namespace {

// The candidate returns through blocks the reference does not have (an extra check before
// its `return True`) while the reference goes on to its own `return True`: the same value,
// so the rest of the reference's frame is a gap, not a control divergence blamed on the
// loop header; the bug (the chained comparison) is found on the next call.
TEST(UnlikeReference, FrameReturningTheSameValueElsewhereIsNoDivergence) {
  const std::string ref =
      "def f(s):\n"
      "    if len(s) < 3:\n"
      "        return False\n"
      "    for i in range(len(s) - 2):\n"
      "        if s[i] == s[i+1] or s[i+1] == s[i+2] or s[i] == s[i+2]:\n"
      "            return False\n"
      "    return True\n";
  const std::string cand =
      "def f(s):\n"
      "    if len(s) < 3:\n"
      "        return False\n"
      "    seen = set(s)\n"
      "    for i in range(0, len(s) - 2):\n"
      "        if s[i] == s[i + 1] == s[i + 2]:\n"
      "            return False\n"
      "    if len(seen) < 3:\n"
      "        return False\n"
      "    return True\n";
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate('abcd') is True\n"
      "    assert candidate('adbd') is False\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 6) << DumpReport(r) << DumpAlignment(r);
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kControl) << DumpReport(r);
}


// A call the tests made that returned the reference's value holds no fault the tests saw:
// the candidate's first call takes a branch the reference skips (adding 0), with the same
// result; the divergence is sought in the call whose result differs (its wrong return),
// and the walk does not align one call's steps with another call's.
TEST(UnlikeReference, CallThatReturnedTheReferencesValueIsNotTheFault) {
  const std::string ref =
      "def f(xs):\n"
      "    total = 0\n"
      "    for x in xs:\n"
      "        total += x\n"
      "    return total\n";
  const std::string cand =
      "def f(xs):\n"
      "    total = 0\n"
      "    for x in sorted(xs):\n"
      "        total += x\n"
      "    return total * 2 if len(xs) > 2 else total\n";
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate([2, 1]) == 3\n"
      "    assert candidate([1, 2, 3]) == 6\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 5) << DumpReport(r) << DumpAlignment(r);
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kReturnValue) << DumpReport(r);
  EXPECT_NE(r.earliest->evidence.find("returned the reference's value"), std::string::npos)
      << r.earliest->evidence;
  // The harmless difference is still reported as a divergence (the count).
  EXPECT_GE(r.divergence_count, 2) << DumpReport(r);
  // With the first call alone (nothing wrong seen), the difference is all there is.
  const std::string only_first =
      "def check(candidate):\n"
      "    assert candidate([2, 1]) == 3\n";
  DivergenceReport first = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(only_first, "f"));
  ASSERT_TRUE(first.earliest) << DumpReport(first);
  EXPECT_EQ(first.earliest->line, 3) << DumpReport(first) << DumpAlignment(first);
}

// Loop variables of paired headers whose values barely overlap are two representations
// (indices against elements): a difference on them is not the fault; the wrong update of
// `best` is.
TEST(UnlikeReference, IndexAgainstElementLoopVariablesAreNotCompared) {
  const std::string ref =
      "def f(nums):\n"
      "    best = 0\n"
      "    for x in nums:\n"
      "        if x > best:\n"
      "            best = x\n"
      "    return best\n";
  const std::string cand =
      "def f(nums):\n"
      "    best = 0\n"
      "    for i in range(len(nums)):\n"
      "        if nums[i] > best:\n"
      "            best = nums[i] - 1\n"
      "    return best\n";
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate([10, 30, 20]) == 30\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 5) << DumpReport(r) << DumpAlignment(r);
  bool weak_loop_pair = false;
  for (const VariableMapping& v : r.alignment.variables) {
    if (v.candidate == "i") weak_loop_pair = v.reference == "x" && v.basis == "loop";
  }
  EXPECT_TRUE(weak_loop_pair) << DumpReport(r);
  // A range bug keeps most values (`for x in nums[1:]`): still a difference worth blaming.
  const std::string range_bug =
      "def f(nums):\n"
      "    best = 0\n"
      "    for y in nums[1:]:\n"
      "        if y > best:\n"
      "            best = y\n"
      "    return best\n";
  const std::string test2 =
      "def check(candidate):\n"
      "    assert candidate([40, 30, 20, 10]) == 40\n";
  DivergenceReport rb = Diff(range_bug, ref, tracer::TestCase::HumanEvalCheck(test2, "f"));
  ASSERT_TRUE(rb.earliest) << DumpReport(rb);
  EXPECT_EQ(rb.earliest->line, 3) << DumpReport(rb) << DumpAlignment(rb);
}

// One collection in two types (the vowels as a string against a set of the same letters) is
// not a difference: the fault shows where the value is used (the count's wrong step).
TEST(UnlikeReference, DifferentRepresentationsAreNotCompared) {
  const std::string ref =
      "def f(word):\n"
      "    vowels = {'a', 'e', 'i', 'o', 'u'}\n"
      "    n = 0\n"
      "    for ch in word:\n"
      "        if ch in vowels:\n"
      "            n += 1\n"
      "    return n\n";
  const std::string cand =
      "def f(word):\n"
      "    vowels = 'aeiou'\n"
      "    n = 0\n"
      "    for ch in word:\n"
      "        if ch in vowels:\n"
      "            n += 2\n"
      "    return n\n";
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate('banana') == 3\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 6) << DumpReport(r) << DumpAlignment(r);
  // The same kind of value (a string of other vowels) is compared as before.
  const std::string wrong_set =
      "def f(word):\n"
      "    vowels = {'a', 'e', 'i', 'o'}\n"
      "    n = 0\n"
      "    for ch in word:\n"
      "        if ch in vowels:\n"
      "            n += 1\n"
      "    return n\n";
  const std::string test2 =
      "def check(candidate):\n"
      "    assert candidate('unit') == 2\n";
  DivergenceReport w = Diff(wrong_set, ref, tracer::TestCase::HumanEvalCheck(test2, "f"));
  ASSERT_TRUE(w.earliest) << DumpReport(w);
  EXPECT_EQ(w.earliest->line, 2) << DumpReport(w);
  // Ten letters: the set's rendering shows its first eight and its length; still one
  // collection in two types.
  const std::string ref10 =
      "def f(word):\n"
      "    vowels = {'a', 'e', 'i', 'o', 'u', 'A', 'E', 'I', 'O', 'U'}\n"
      "    n = 0\n"
      "    for ch in word:\n"
      "        if ch in vowels:\n"
      "            n += 1\n"
      "    return n\n";
  const std::string cand10 =
      "def f(word):\n"
      "    vowels = 'aeiouAEIOU'\n"
      "    n = 0\n"
      "    for ch in word:\n"
      "        if ch in vowels:\n"
      "            n += 2\n"
      "    return n\n";
  DivergenceReport r10 = Diff(cand10, ref10, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r10.earliest) << DumpReport(r10);
  EXPECT_EQ(r10.earliest->line, 6) << DumpReport(r10) << DumpAlignment(r10);
  // Another type holding most of the letters (a list without 'u'): a difference of value
  // (not CollectionsOfAnotherKindHaveLowConfidence's case: they share most elements).
  const std::string wrong_list =
      "def f(word):\n"
      "    vowels = ['a', 'e', 'i', 'o']\n"
      "    n = 0\n"
      "    for ch in word:\n"
      "        if ch in vowels:\n"
      "            n += 1\n"
      "    return n\n";
  DivergenceReport wl = Diff(wrong_list, ref, tracer::TestCase::HumanEvalCheck(test2, "f"));
  ASSERT_TRUE(wl.earliest) << DumpReport(wl);
  EXPECT_EQ(wl.earliest->line, 2) << DumpReport(wl);
}


// A list the candidate builds in a loop, returned where the reference returns one
// expression (no intermediate state to compare): the first wrong element of the returned
// list is traced to what made it. One element too many (0 kept by `>= 0`, the reference
// keeps `> 0`): the decision before its append. A wrong value appended as a variable's
// value: that variable's assignment (the series' step), not the append.
TEST(UnlikeReference, BuiltListBlamedOnWhatMadeItsFirstWrongElement) {
  const std::string ref = "def f(xs):\n    return [e for e in xs if e > 0]\n";
  const std::string cand =
      "def f(xs):\n"
      "    out = []\n"
      "    for item in xs:\n"
      "        if item >= 0:\n"
      "            out.append(item)\n"
      "    return out\n";
  // Long enough that the encoder shows the list cut short (its first elements only).
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate([5, -1, 6]) == [5, 6]\n"
      "    assert candidate([5, 3, -5, 2, 3, 3, 9, 0, 123, 1, -10]) == [5, 3, 2, 3, 3, 9, 123, 1]\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 4) << DumpReport(r) << DumpAlignment(r);
  EXPECT_NE(r.earliest->evidence.find("does not have"), std::string::npos) << r.earliest->evidence;

  const std::string ref2 = "def pile(n):\n    return [n + 2 * i for i in range(n)]\n";
  const std::string cand2 =
      "def pile(n):\n"
      "    stones = n\n"
      "    out = []\n"
      "    for _ in range(n):\n"
      "        out.append(stones)\n"
      "        stones += 2 if stones % 2 == 0 else 1\n"
      "    return out\n";
  const std::string test2 =
      "def check(candidate):\n"
      "    assert candidate(4) == [4, 6, 8, 10]\n"
      "    assert candidate(3) == [3, 5, 7]\n";
  DivergenceReport r2 = Diff(cand2, ref2, tracer::TestCase::HumanEvalCheck(test2, "pile"));
  ASSERT_TRUE(r2.earliest) << DumpReport(r2);
  EXPECT_EQ(r2.earliest->line, 6) << DumpReport(r2) << DumpAlignment(r2);
  EXPECT_NE(r2.earliest->evidence.find("value of stones"), std::string::npos)
      << r2.earliest->evidence;
}


// A sum accumulated from plain elements under a condition, returned where the reference
// sums a generator: the condition chose the elements, so it is blamed, not `total += x`.
// Accumulating a computed value (`total += x * 2`) keeps the blame on the accumulation.
TEST(UnlikeReference, GuardedCountBlamedOnItsCondition) {
  const std::string ref = "def f(arr, k):\n    return sum(e for e in arr[:k] if len(str(e)) <= 2)\n";
  const std::string cand =
      "def f(arr, k):\n"
      "    total = 0\n"
      "    for i in range(k):\n"
      "        if 0 < arr[i] < 100:\n"
      "            total += arr[i]\n"
      "    return total\n";
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate([111, 21, 3, 4000, 5], 4) == 24\n"
      "    assert candidate([1, -2, -3, 41, 57], 4) == 37\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 4) << DumpReport(r) << DumpAlignment(r);
  const std::string computed =
      "def f(arr, k):\n"
      "    total = 0\n"
      "    for i in range(k):\n"
      "        if -100 < arr[i] < 100:\n"
      "            total += arr[i] * 2\n"
      "    return total\n";
  DivergenceReport r2 = Diff(computed, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r2.earliest) << DumpReport(r2);
  EXPECT_EQ(r2.earliest->line, 5) << DumpReport(r2) << DumpAlignment(r2);
}


// Another search order around a helper the prompt gives (copied unchanged in both): the
// helper's arguments differ from the first call on (prefixes against suffixes), but the
// helper cannot be wrong; its frames are gaps. The wrong value is returned from a block the
// reference does not have, so the frame merely "ended" there: it is a return divergence at
// that statement.
TEST(UnlikeReference, IdenticalHelperIsNotComparedAndUnalignedReturnIsBlamed) {
  const std::string ref =
      "def is_pal(s):\n"
      "    return s == s[::-1]\n"
      "\n"
      "def make(s):\n"
      "    if not s:\n"
      "        return ''\n"
      "    k = 0\n"
      "    while not is_pal(s[k:]):\n"
      "        k += 1\n"
      "    return s + s[:k][::-1]\n";
  const std::string cand =
      "def is_pal(s):\n"
      "    return s == s[::-1]\n"
      "\n"
      "def make(s):\n"
      "    if is_pal(s):\n"
      "        return s\n"
      "    for i in range(len(s), 0, -1):\n"
      "        if is_pal(s[:i]):\n"
      "            return s + s[:i-1][::-1]\n"
      "    return s\n";
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate('') == ''\n"
      "    assert candidate('x') == 'x'\n"
      "    assert candidate('xyz') == 'xyzyx'\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "make"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 9) << DumpReport(r) << DumpAlignment(r);
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kReturnValue) << DumpReport(r);
  EXPECT_NE(r.earliest->evidence.find("a block the reference does not have"), std::string::npos)
      << r.earliest->evidence;
  // No divergence is blamed inside the helper or on its arguments.
  for (const AlignedPair& p : r.alignment.pairs) {
    if (p.candidate >= 0 && p.reference >= 0) {
      EXPECT_NE(r.alignment.candidate_steps[p.candidate].function, "is_pal") << DumpAlignment(r);
    }
  }
}


// A constant returned from a block the reference does not have (`return False` inside a
// check of its own) is wrong only by being reached: the decision before it is blamed.
TEST(UnlikeReference, UnalignedConstantReturnBlamesItsDecision) {
  const std::string ref =
      "def f(lst):\n"
      "    count = dict([(x, 0) for x in lst])\n"
      "    for x in lst:\n"
      "        count[x] += 1\n"
      "    if any(count[x] > 2 for x in lst):\n"
      "        return False\n"
      "    return all(lst[i-1] <= lst[i] for i in range(1, len(lst)))\n";
  const std::string cand =
      "def f(lst):\n"
      "    if sorted(lst) != lst:\n"
      "        return False\n"
      "    for i in range(len(lst)):\n"
      "        if lst.count(lst[i]) > 1:\n"
      "            return False\n"
      "    return True\n";
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate([1, 2, 3]) is True\n"
      "    assert candidate([1, 2, 2, 3]) is True\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 5) << DumpReport(r) << DumpAlignment(r);
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kReturnValue) << DumpReport(r);
}


// A prime search bounded by sqrt(i) against one bounded by i: the inner loops run another
// number of times to the same effect (is_prime), which is no divergence; the outer loop's
// extra iteration (range(2, n + 1) for range(2, n)) is.
TEST(UnlikeReference, LoopsThatEndAlikeAreNotADivergence) {
  const std::string ref =
      "def f(n):\n"
      "    primes = []\n"
      "    for i in range(2, n):\n"
      "        is_prime = True\n"
      "        for j in range(2, i):\n"
      "            if i % j == 0:\n"
      "                is_prime = False\n"
      "                break\n"
      "        if is_prime:\n"
      "            primes.append(i)\n"
      "    return primes\n";
  const std::string cand =
      "def f(n):\n"
      "    primes = []\n"
      "    for i in range(2, n + 1):\n"
      "        is_prime = True\n"
      "        for j in range(2, int(i ** 0.5) + 1):\n"
      "            if i % j == 0:\n"
      "                is_prime = False\n"
      "                break\n"
      "        if is_prime:\n"
      "            primes.append(i)\n"
      "    return primes\n";
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate(11) == [2, 3, 5, 7]\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 3) << DumpReport(r) << DumpAlignment(r);
  // Inner loops that end differently (is_prime wrong for 9) are still a divergence.
  const std::string wrong_inner =
      "def f(n):\n"
      "    primes = []\n"
      "    for i in range(2, n):\n"
      "        is_prime = True\n"
      "        for j in range(2, int(i ** 0.5)):\n"
      "            if i % j == 0:\n"
      "                is_prime = False\n"
      "                break\n"
      "        if is_prime:\n"
      "            primes.append(i)\n"
      "    return primes\n";
  DivergenceReport w = Diff(wrong_inner, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(w.earliest) << DumpReport(w);
  EXPECT_EQ(w.earliest->line, 5) << DumpReport(w) << DumpAlignment(w);
}

// The reference rebinds its parameter (`s = ''.join(...)`) where the candidate keeps it and
// builds its own `result`: the candidate's `s` still holds the input and is not the fault;
// the early constant return (`return '', False`), which the reference computes, is blamed
// on the decision that reached it.
TEST(UnlikeReference, ParameterTheReferenceRebindsIsNotCompared) {
  const std::string ref =
      "def f(s, c):\n"
      "    s = ''.join([ch for ch in s if ch not in c])\n"
      "    return (s, s[::-1] == s)\n";
  const std::string cand =
      "def f(s, c):\n"
      "    result = ''\n"
      "    if len(s) != len(c):\n"
      "        return '', False\n"
      "    for ch in s:\n"
      "        if ch not in c:\n"
      "            result += ch\n"
      "    return result, result == result[::-1]\n";
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate('abcde', 'ae') == ('bcd', False)\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 3) << DumpReport(r) << DumpAlignment(r);
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kReturnValue) << DumpReport(r);
  for (const auto* d : {&r.earliest, &r.last}) {
    ASSERT_TRUE(d->has_value());
    for (const VariableDiff& v : (*d)->variables) EXPECT_NE(v.candidate_name, "s") << DumpReport(r);
  }
}

// A mutation of the parameter in the reference (`l[::3] = ...`) is no new meaning of the
// name: the candidate's `l` is still compared with it.
TEST(UnlikeReference, ParameterTheReferenceMutatesIsCompared) {
  const std::string ref =
      "def f(l):\n"
      "    l = list(l)\n"
      "    l[::3] = sorted(l[::3])\n"
      "    return l\n";
  const std::string cand =
      "def f(l):\n"
      "    idx = [i for i in range(len(l)) if (i + 1) % 3 == 0]\n"
      "    vals = sorted([l[i] for i in idx])\n"
      "    for k in range(len(idx)):\n"
      "        l[idx[k]] = vals[k]\n"
      "    return l\n";
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate([5, 6, 3, 4, 8, 9, 2]) == [2, 6, 3, 4, 8, 9, 5]\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kValue) << DumpReport(r) << DumpAlignment(r);
  ASSERT_FALSE(r.earliest->variables.empty());
  EXPECT_EQ(r.earliest->variables.front().candidate_name, "l") << DumpReport(r);
}


// The reference rebinds its parameter to the value the candidate gives a name of its own
// (`lst = sorted(set(lst))` against `sorted_lst = sorted(lst)`): that variable is compared
// in the parameter's place, so the missing set() is found where the candidate sorts.
TEST(UnlikeReference, OwnNameForAReboundParameterIsCompared) {
  const std::string ref =
      "def f(lst):\n"
      "    lst = sorted(set(lst))\n"
      "    return None if len(lst) < 2 else lst[1]\n";
  const std::string cand =
      "def f(lst):\n"
      "    if len(lst) < 2:\n"
      "        return None\n"
      "    sorted_lst = sorted(lst)\n"
      "    return sorted_lst[1]\n";
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate([2, 1, 1]) == 2\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 4) << DumpReport(r) << DumpAlignment(r);
  EXPECT_EQ(r.earliest->kind, DivergenceKind::kValue) << DumpReport(r);
  ASSERT_FALSE(r.earliest->variables.empty());
  EXPECT_EQ(r.earliest->variables.front().candidate_name, "sorted_lst") << DumpReport(r);
  EXPECT_EQ(r.earliest->variables.front().reference_name, "lst") << DumpReport(r);
}


// A date split into its fields against the date string: two kinds of collection sharing no
// element are more likely two representations than the fault, so the wrong comparison of
// the month is `earliest`; the kinds' difference is still reported, behind it.
TEST(UnlikeReference, CollectionsOfAnotherKindHaveLowConfidence) {
  const std::string ref =
      "def f(date):\n"
      "    date = date.strip()\n"
      "    month = int(date[:2])\n"
      "    ok = 1 <= month <= 12\n"
      "    return ok\n";
  const std::string cand =
      "def f(date):\n"
      "    date = date.split('-')\n"
      "    month = int(date[0])\n"
      "    ok = 1 <= month <= 11\n"
      "    return ok\n";
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate('12-01-2000') is True\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 4) << DumpReport(r) << DumpAlignment(r);
  // The kinds' difference is still reported, after the trusted one.
  bool date_reported = false;
  for (const VariableDiff& v : r.earliest->variables) date_reported |= v.candidate_name == "date";
  EXPECT_TRUE(date_reported) << DumpReport(r);
}


// A sum that never accumulated (every element failed the candidate's condition) is returned
// as its initialization made it: the condition that let nothing through is blamed, not
// `total = 0`.
TEST(UnlikeReference, SumThatNeverAccumulatedBlamesItsCondition) {
  const std::string ref =
      "def f(arr, k):\n"
      "    return sum(e for e in arr[:k] if len(str(e)) <= 2)\n";
  const std::string cand =
      "def f(arr, k):\n"
      "    total = 0\n"
      "    for i in range(k):\n"
      "        if 10 <= arr[i] <= 99:\n"
      "            total += arr[i]\n"
      "    return total\n";
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate([1, 2, 3], 2) == 3\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 4) << DumpReport(r) << DumpAlignment(r);
  // Once it accumulated, the guarded-count rule blames the same condition.
  const std::string test2 =
      "def check(candidate):\n"
      "    assert candidate([1, 20, 3], 3) == 24\n";
  DivergenceReport r2 = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test2, "f"));
  ASSERT_TRUE(r2.earliest) << DumpReport(r2);
  EXPECT_EQ(r2.earliest->line, 4) << DumpReport(r2) << DumpAlignment(r2);
}


// A running sum against the list of terms the reference sums at the end (`result = 0`
// against `result = []`): a number against a list is a representation, so the wrong branch
// condition is `earliest`, not the first step that assigns `result`.
TEST(UnlikeReference, NumberAgainstAListHasLowConfidence) {
  const std::string ref =
      "def f(lst):\n"
      "    result = []\n"
      "    for i in range(len(lst)):\n"
      "        if i % 3 == 0:\n"
      "            result.append(lst[i] ** 2)\n"
      "        else:\n"
      "            result.append(lst[i])\n"
      "    return sum(result)\n";
  const std::string cand =
      "def f(lst):\n"
      "    result = 0\n"
      "    for i in range(len(lst)):\n"
      "        if i % 3 == 0 and i % 4 != 0:\n"
      "            result += lst[i] ** 2\n"
      "        else:\n"
      "            result += lst[i]\n"
      "    return result\n";
  const std::string test =
      "def check(candidate):\n"
      "    assert candidate([2, 3, 4]) == 11\n";
  DivergenceReport r = Diff(cand, ref, tracer::TestCase::HumanEvalCheck(test, "f"));
  ASSERT_TRUE(r.earliest) << DumpReport(r);
  EXPECT_EQ(r.earliest->line, 4) << DumpReport(r) << DumpAlignment(r);
  // A string against a number stays a value: '5' for 5 is a fault.
  const std::string ref2 = "def g(s):\n    n = int(s)\n    return n + 1\n";
  const std::string cand2 = "def g(s):\n    n = s\n    return int(n) + 1\n";
  DivergenceReport r2 = Diff(cand2, ref2, tracer::TestCase::Call("g", "[\"4\"]"));
  EXPECT_FALSE(r2.earliest.has_value() && r2.earliest->confidence < 0.4) << DumpReport(r2);
}

}  // namespace
}  // namespace egca::diff
