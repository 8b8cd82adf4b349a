// Change detection in the trace hook: a variable is reported iff its canonical value
// changed since its frame's previous snapshot. Unchanged values are recognized by their
// shape (element identities, see ShadowBuilder in trace_recorder.cpp) without hashing;
// these tests pin down that in-place mutations are still seen through that fast path and
// that equal values in new objects are still not changes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "egca/tracer/trace_dump.h"
#include "trace_test_util.h"

namespace egca::tracer {
namespace {

using testing::RunTraced;

// Renderings of `name` at every event that reports it as changed, in trace order.
std::vector<std::string> Changes(const proto::Trace& trace, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& e : trace.events()) {
    for (const auto& v : e.changed()) {
      if (v.name() == name) out.push_back(v.value().text());
    }
  }
  return out;
}

using Texts = std::vector<std::string>;

Texts ChangesOf(const std::string& src, const std::string& name,
                TraceOptions options = TraceOptions()) {
  auto run = RunTraced(src, "", options);
  EXPECT_EQ(run.error, "") << src;
  return Changes(run.trace, name);
}

TEST(TraceChangeDetection, ListElementAssignedInPlace) {
  // a[0] = 0 stores an equal value: not a change; the other stores are.
  std::string src = "a = [0] * 4\nfor i in range(4):\n    a[i] = i\nz = 0\n";
  EXPECT_EQ(ChangesOf(src, "a"),
            (Texts{"[0, 0, 0, 0]", "[0, 1, 0, 0]", "[0, 1, 2, 0]", "[0, 1, 2, 3]"}));
}

TEST(TraceChangeDetection, NestedListElement) {
  std::string src =
      "g = [[0] * 2 for _ in range(2)]\n"
      "g[1][0] = 7\n"
      "g[1][0] = 7\n"
      "g[0].append(5)\n"
      "z = 0\n";
  EXPECT_EQ(ChangesOf(src, "g"),
            (Texts{"[[0, 0], [0, 0]]", "[[0, 0], [7, 0]]", "[[0, 0, 5], [7, 0]]"}));
}

TEST(TraceChangeDetection, ListInsideTuple) {
  std::string src = "t = ([1], 'x')\nt[0].append(2)\nz = 0\n";
  EXPECT_EQ(ChangesOf(src, "t"), (Texts{"([1], 'x')", "([1, 2], 'x')"}));
}

TEST(TraceChangeDetection, DictValueUpdates) {
  std::string src =
      "d = {'a': 1, 'b': [1]}\n"
      "d['a'] = 2\n"
      "d['b'].append(2)\n"
      "d['a'] = 2\n"
      "d['a'] = 1 + 1\n"
      "z = 0\n";
  EXPECT_EQ(ChangesOf(src, "d"),
            (Texts{"{'a': 1, 'b': [1]}", "{'a': 2, 'b': [1]}", "{'a': 2, 'b': [1, 2]}"}));
}

TEST(TraceChangeDetection, DictDeleteAndReinsertChangesOrder) {
  // Dicts hash in insertion order, so moving a key to the end is a change.
  std::string src = "d = {1: 1, 2: 2}\nv = d.pop(1)\nd[1] = v\nz = 0\n";
  EXPECT_EQ(ChangesOf(src, "d"), (Texts{"{1: 1, 2: 2}", "{2: 2}", "{2: 2, 1: 1}"}));
}

TEST(TraceChangeDetection, SetAddAndNoOpAdd) {
  std::string src =
      "s = {1, 2}\n"
      "s.add(3)\n"
      "s.add(3)\n"
      "s.discard(1); s.add(1)\n"
      "s.discard(2); s.add(4)\n"
      "z = 0\n";
  EXPECT_EQ(ChangesOf(src, "s"), (Texts{"{1, 2}", "{1, 2, 3}", "{1, 3, 4}"}));
}

TEST(TraceChangeDetection, EqualValueInNewObjectIsNotAChange) {
  // New int/str/float/list objects equal to the previous value: nothing is reported.
  std::string src =
      "n = 10 ** 20\n"
      "k = 1000\n"
      "s = 'ab'\n"
      "f = 0.5\n"
      "l = [1, 2]\n"
      "for i in range(3):\n"
      "    n = 10 ** 20 + i - i\n"
      "    k = int('1000')\n"
      "    s = ''.join(['a', 'b'])\n"
      "    f = float('0.5')\n"
      "    l = list(l)\n"
      "z = 0\n";
  auto run = RunTraced(src, "", TraceOptions());
  ASSERT_EQ(run.error, "");
  EXPECT_EQ(Changes(run.trace, "n"), (Texts{"100000000000000000000"}));
  EXPECT_EQ(Changes(run.trace, "k"), (Texts{"1000"}));
  EXPECT_EQ(Changes(run.trace, "s"), (Texts{"'ab'"}));
  EXPECT_EQ(Changes(run.trace, "f"), (Texts{"0.5"}));
  EXPECT_EQ(Changes(run.trace, "l"), (Texts{"[1, 2]"}));
}

TEST(TraceChangeDetection, MutationByCalleeSeenAtCallersNextEvent) {
  std::string src =
      "def push(xs, v):\n"
      "    xs.append(v)\n"
      "a = []\n"
      "push(a, 1)\n"
      "push(a, 1)\n"
      "z = 0\n";
  auto run = RunTraced(src, "", TraceOptions());
  ASSERT_EQ(run.error, "");
  // "xs" in push: bound at each call; "a": created, then one change per push.
  EXPECT_EQ(Changes(run.trace, "a"), (Texts{"[]", "[1]", "[1, 1]"}));
}

TEST(TraceChangeDetection, InstanceAttributeChanges) {
  // Instances of plain classes have a shape (type + __dict__ entries): a new attribute
  // value, a new attribute and a mutated list attribute are changes; rebinding to an equal
  // value is not.
  std::string src =
      "class P:\n"
      "    pass\n"
      "p = P()\n"
      "p.v = 1\n"
      "p.v = 2\n"
      "p.v = 2\n"
      "ps = [p]\n"
      "p.v = 3\n"
      "z = 0\n";
  auto run = RunTraced(src, "", TraceOptions());
  ASSERT_EQ(run.error, "");
  EXPECT_EQ(Changes(run.trace, "p"), (Texts{"P()", "P(v=1)", "P(v=2)", "P(v=3)"}));
  EXPECT_EQ(Changes(run.trace, "ps"), (Texts{"[P(v=2)]", "[P(v=3)]"}));
}

TEST(TraceChangeDetection, CyclicGraphOfInstances) {
  // a <-> b through their `nbrs` lists, c shared by both: the shape walks each node once
  // (back-references), and a change anywhere in the graph is seen from `a`.
  std::string src =
      "class N:\n"
      "    def __init__(self, v):\n"
      "        self.v = v\n"
      "        self.nbrs = []\n"
      "a, b, c = N(1), N(2), N(3)\n"
      "a.nbrs.append(b)\n"
      "b.nbrs.append(a)\n"
      "a.nbrs.append(c)\n"
      "b.nbrs.append(c)\n"
      "x = 0\n"
      "x = 1\n"
      "c.v = 30\n"
      "x = 2\n"
      "b.nbrs.pop()\n"
      "x = 3\n";
  auto run = RunTraced(src, "", TraceOptions());
  ASSERT_EQ(run.error, "");
  // a: created, b appended, (b's back edge), c appended, (c into b), c.v, pop from b.
  Texts a = Changes(run.trace, "a");
  EXPECT_EQ(a.size(), 7u) << ::testing::PrintToString(a);
  // Lines 10-11 (x = 0, x = 1) change nothing but x.
  for (const auto& e : run.trace.events()) {
    if (e.line() != 11 && e.line() != 12) continue;
    for (const auto& v : e.changed()) EXPECT_EQ(v.name(), "x") << "line " << e.line();
  }
  EXPECT_EQ(Changes(run.trace, "c"), (Texts{"N(v=3, nbrs=[])", "N(v=30, nbrs=[])"}));
}

TEST(TraceChangeDetection, SlotsAndSubclassesStillHashed) {
  // Classes outside the shape's scope (__slots__, enum members, subclasses of builtins)
  // are hashed at every event, so their in-place changes are seen too.
  std::string src =
      "import enum\n"
      "class S:\n"
      "    __slots__ = ('v',)\n"
      "    def __init__(self):\n"
      "        self.v = 1\n"
      "class L(list):\n"
      "    pass\n"
      "s = S()\n"
      "l = L()\n"
      "s.v = 2\n"
      "l.append(1)\n"
      "s.v = 2\n";
  EXPECT_EQ(ChangesOf(src, "s"), (Texts{"S(v=1)", "S(v=2)"}));
  EXPECT_EQ(ChangesOf(src, "l"), (Texts{"L([])", "L([1])"}));
}

TEST(TraceChangeDetection, RebindingFunctionAndDeletion) {
  std::string src =
      "f = len\n"
      "g = lambda: 0\n"
      "g2 = g\n"
      "g = lambda: 0\n"
      "x = [1]\n"
      "y = x\n"
      "del x\n"
      "x = y\n"
      "z = 0\n";
  auto run = RunTraced(src, "", TraceOptions());
  ASSERT_EQ(run.error, "");
  // A new lambda has the same qualname: same canonical value.
  EXPECT_EQ(Changes(run.trace, "g"), (Texts{"<function <lambda>>"}));
  EXPECT_EQ(Changes(run.trace, "x"), (Texts{"[1]", "[1]"}));  // bound, deleted, rebound
  int deletions = 0;
  for (const auto& e : run.trace.events()) {
    for (const auto& name : e.deleted()) deletions += name == "x";
  }
  EXPECT_EQ(deletions, 1);
}

TEST(TraceChangeDetection, BeyondHashBudgetIsNotAChange) {
  // The hash covers the first hash_budget elements; the fast path stops at the same
  // element, so a change past it is invisible either way and one before it is seen.
  std::string src = "a = [0] * 10\na[8] = 1\na[1] = 1\nz = 0\n";
  TraceOptions options;
  options.hash_budget = 4;
  auto changes = ChangesOf(src, "a", options);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[1].substr(0, 12), "[0, 1, 0, 0,");
}

TEST(TraceChangeDetection, DeepNestingFallsBackToHashing) {
  // Nested deeper than max_hash_depth: no shape, the hash decides (and sees the length).
  std::string src =
      "x = [[[[1]]]]\n"
      "x[0][0][0].append(2)\n"
      "x[0].append(0)\n"
      "z = 0\n";
  TraceOptions options;
  options.max_hash_depth = 2;
  EXPECT_EQ(ChangesOf(src, "x", options).size(), 2u);
  EXPECT_EQ(ChangesOf(src, "x").size(), 3u);
}

TEST(TraceChangeDetection, TracesAreDeterministicAcrossRuns) {
  std::string src =
      "import collections\n"
      "dp = [[0] * 6 for _ in range(4)]\n"
      "seen = set()\n"
      "q = collections.deque([1])\n"
      "for i in range(1, 4):\n"
      "    for j in range(1, 6):\n"
      "        dp[i][j] = max(dp[i - 1][j], dp[i][j - 1] + (i * j) % 3)\n"
      "        seen.add((i, j % 2))\n"
      "        q.append(i)\n";
  auto a = RunTraced(src, "", TraceOptions());
  auto b = RunTraced(src, "", TraceOptions());
  ASSERT_EQ(a.error, "");
  EXPECT_EQ(DumpTrace(a.trace), DumpTrace(b.trace));
  // Every store into dp that changes a cell is reported: count them independently.
  int stores = 0, changes = 0;
  std::vector<std::vector<int>> dp(4, std::vector<int>(6, 0));
  for (int i = 1; i < 4; ++i) {
    for (int j = 1; j < 6; ++j) {
      int v = std::max(dp[i - 1][j], dp[i][j - 1] + (i * j) % 3);
      changes += v != dp[i][j];
      dp[i][j] = v;
      ++stores;
    }
  }
  EXPECT_EQ(stores, 15);
  EXPECT_EQ(static_cast<int>(Changes(a.trace, "dp").size()), 1 + changes);
  EXPECT_EQ(Changes(a.trace, "q").size(), 1u + 15u);
}

TEST(TraceChangeDetection, IntsAroundDigitBoundaries) {
  // Ints of up to two 30-bit digits are read from their digits directly (python_compat.h);
  // the rendering shows the value that was read, the hash separates neighbours.
  std::string src =
      "xs = [0, 1, -1, 2**30 - 1, 2**30]\n"
      "ys = [-2**30, 2**60 - 1, -(2**60 - 1), 2**60, -2**60]\n"
      "z = 0\n";
  EXPECT_EQ(ChangesOf(src, "xs"), (Texts{"[0, 1, -1, 1073741823, 1073741824]"}));
  EXPECT_EQ(ChangesOf(src, "ys"),
            (Texts{"[-1073741824, 1152921504606846975, -1152921504606846975, "
                   "1152921504606846976, -1152921504606846976]"}));
  std::string bump = "x = 2**30 - 1\nx += 1\nx -= 1\nx = -x\nx = 2**60 - 1\nx += 1\nz = 0\n";
  EXPECT_EQ(ChangesOf(bump, "x"), (Texts{"1073741823", "1073741824", "1073741823",
                                         "-1073741823", "1152921504606846975",
                                         "1152921504606846976"}));
}

TEST(TraceChangeDetection, DefaultdictAndOrderedDict) {
  std::string src =
      "import collections\n"
      "memo = collections.defaultdict(int)\n"
      "memo[1, 2] = 3\n"
      "v = memo[1, 2]\n"
      "memo[1, 2] = 3\n"
      "w = memo[5, 5]\n"
      "od = collections.OrderedDict(a=1)\n"
      "od['a'] = 2\n"
      "od['a'] = 2\n"
      "z = 0\n";
  auto run = RunTraced(src, "", TraceOptions());
  ASSERT_EQ(run.error, "");
  // memo[5, 5] inserts a default entry: a change made by a read.
  EXPECT_EQ(Changes(run.trace, "memo"),
            (Texts{"collections.defaultdict({})", "collections.defaultdict({(1, 2): 3})",
                   "collections.defaultdict({(1, 2): 3, (5, 5): 0})"}));
  EXPECT_EQ(Changes(run.trace, "od"),
            (Texts{"collections.OrderedDict({'a': 1})", "collections.OrderedDict({'a': 2})"}));
}

}  // namespace
}  // namespace egca::tracer
