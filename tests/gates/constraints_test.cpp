// Constraint facts and checkers (I_C): what each fact counts, each checker's pass/fail with
// the exact offending span (lines 1-based, columns 0-based bytes).
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "egca/gates/constraints.h"

namespace egca::gates {
namespace {

ProgramFacts Facts(const std::string& src) {
  auto f = ComputeFacts(src);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? *f : ProgramFacts{};
}

std::string Cut(const std::string& src, const SourceSpan& s) {
  return src.substr(s.begin_byte, s.end_byte - s.begin_byte);
}

std::optional<ConstraintViolation> Check(const std::string& src, ConstraintSpec spec) {
  auto program = cfg::ProgramCfg::Build(src);
  EXPECT_TRUE(program.ok());
  auto checker = MakeConstraint(spec);
  EXPECT_TRUE(checker.ok()) << checker.status().ToString();
  return (*checker)->Violation(src, *program);
}

ConstraintSpec Spec(std::string kind, ConstraintValue value = {}) {
  return {std::move(kind), std::move(value), ""};
}

// ---- facts ---------------------------------------------------------------------------

TEST(ConstraintFacts, DirectRecursionPointsAtTheRecursiveCall) {
  const std::string src =
      "def fib(n):\n"
      "    if n < 2:\n"
      "        return n\n"
      "    return fib(n - 1) + fib(n - 2)\n"
      "\n"
      "print(fib(10))\n";
  ProgramFacts f = Facts(src);
  ASSERT_EQ(f.recursive_calls.size(), 2u) << f.Dump();
  EXPECT_TRUE(f.recursive_calls[0].direct);
  EXPECT_EQ(f.recursive_calls[0].function, "fib");
  EXPECT_EQ(Cut(src, f.recursive_calls[0].span), "fib(n - 1)");
  EXPECT_EQ(f.recursive_calls[0].span.begin.line, 4);
  EXPECT_EQ(f.recursive_calls[0].span.begin.column, 11);
  EXPECT_EQ(f.recursive_calls[0].span.end.column, 21);
  // The module-level call is not recursion.
  EXPECT_EQ(Cut(src, f.recursive_calls[1].span), "fib(n - 2)");
}

TEST(ConstraintFacts, MutualRecursionAndAcyclicHelpers) {
  const std::string src =
      "def is_even(n):\n"
      "    return True if n == 0 else is_odd(n - 1)\n"
      "def is_odd(n):\n"
      "    return False if n == 0 else is_even(n - 1)\n"
      "def helper(x):\n"
      "    return x + 1\n"
      "def main(x):\n"
      "    return helper(x) + is_even(x)\n";
  ProgramFacts f = Facts(src);
  ASSERT_EQ(f.recursive_calls.size(), 2u) << f.Dump();
  EXPECT_FALSE(f.recursive_calls[0].direct);
  EXPECT_EQ(f.recursive_calls[0].function, "is_even");
  EXPECT_EQ(f.recursive_calls[0].callee, "is_odd");
  EXPECT_EQ(Cut(src, f.recursive_calls[0].span), "is_odd(n - 1)");
  EXPECT_EQ(f.recursive_calls[1].function, "is_odd");
}

TEST(ConstraintFacts, RecursionThroughMethodsNestedDefsAndLambdas) {
  const std::string methods =
      "class Tree:\n"
      "    def depth(self, node):\n"
      "        return 0 if node is None else 1 + max(self.depth(c) for c in node)\n";
  ProgramFacts m = Facts(methods);
  ASSERT_EQ(m.recursive_calls.size(), 1u) << m.Dump();
  EXPECT_EQ(m.recursive_calls[0].function, "Tree.depth");
  EXPECT_EQ(Cut(methods, m.recursive_calls[0].span), "self.depth(c)");

  const std::string nested =
      "def solve(xs):\n"
      "    def go(i):\n"
      "        return 0 if i == len(xs) else xs[i] + go(i + 1)\n"
      "    return go(0)\n";
  ProgramFacts n = Facts(nested);
  ASSERT_EQ(n.recursive_calls.size(), 1u) << n.Dump();
  EXPECT_EQ(n.recursive_calls[0].function, "solve.<locals>.go");

  // A parameter that shadows nothing, a call of a same-named method of another object and
  // a builtin are not recursion.
  const std::string none =
      "def sort(xs):\n"
      "    xs.sort()\n"
      "    return sorted(xs)\n";
  EXPECT_TRUE(Facts(none).recursive_calls.empty()) << Facts(none).Dump();
}

TEST(ConstraintFacts, LoopDepthCountsComprehensionsAndRestartsInFunctions) {
  const std::string src =
      "def f(grid):\n"                                             // 1
      "    total = 0\n"                                            // 2
      "    for row in grid:\n"                                     // 3  depth 1
      "        total += sum([x * y for x in row for y in row])\n"  // 4  depth 2, 3
      "        while total > 10:\n"                                // 5  depth 2
      "            total -= 1\n"                                   // 6
      "        def g(v):\n"                                        // 7
      "            for k in v:\n"                                  // 8  depth 1 (new function)
      "                pass\n"                                     // 9
      "    return [c for c in 'abc']\n";                           // 10 depth 1
  ProgramFacts f = Facts(src);
  ASSERT_EQ(f.loops.size(), 6u) << f.Dump();
  EXPECT_EQ(f.max_loop_depth, 3);
  EXPECT_EQ(f.loops[0].kind, LoopKind::kFor);
  EXPECT_EQ(f.loops[0].depth, 1);
  EXPECT_EQ(f.loops[1].kind, LoopKind::kComprehension);
  EXPECT_EQ(f.loops[1].depth, 2);
  EXPECT_EQ(Cut(src, f.loops[2].span), "for y in row");
  EXPECT_EQ(f.loops[2].depth, 3);
  EXPECT_EQ(f.loops[3].kind, LoopKind::kWhile);
  EXPECT_EQ(f.loops[3].depth, 2);
  EXPECT_EQ(f.loops[4].depth, 1);
  EXPECT_EQ(f.loops[4].span.begin.line, 8);
  EXPECT_EQ(f.loops[5].depth, 1);
  ASSERT_NE(f.DeepestLoop(), nullptr);
  EXPECT_EQ(f.DeepestLoop()->span.begin.line, 4);
  EXPECT_EQ(f.DeepestLoop()->span.begin.column, 41);
}

TEST(ConstraintFacts, ImportsResolveAliasesAndFromImports) {
  const std::string src =
      "import collections as c\n"
      "import os.path\n"
      "from heapq import heappush, heappop as pop\n"
      "from bisect import *\n"
      "np = __import__('numpy')\n"
      "def f(xs):\n"
      "    q = c.deque(xs)\n"
      "    h = []\n"
      "    heappush(h, 1)\n"
      "    pop(h)\n"
      "    insort(xs, 3)\n"
      "    return os.path.join('a', 'b')\n";
  ProgramFacts f = Facts(src);
  ASSERT_EQ(f.imports.size(), 5u) << f.Dump();
  EXPECT_EQ(f.imports[0].module, "collections");
  EXPECT_EQ(f.imports[1].module, "os.path");
  EXPECT_EQ(f.imports[2].module, "heapq");
  EXPECT_EQ(f.imports[3].module, "bisect");
  EXPECT_EQ(f.imports[4].module, "numpy");
  EXPECT_EQ(Cut(src, f.imports[4].span), "__import__('numpy')");
  std::vector<std::string> names;
  for (const CallFact& call : f.calls) names.push_back(call.name);
  EXPECT_EQ(names, (std::vector<std::string>{"__import__", "collections.deque", "heapq.heappush",
                                             "heapq.heappop", "bisect.insort", "os.path.join"}));
  std::vector<std::string> structures;
  for (const StructureUse& s : f.structures) structures.push_back(DataStructureName(s.structure));
  EXPECT_EQ(structures, (std::vector<std::string>{"deque", "list", "heap", "heap"}));
  ASSERT_EQ(f.sorts.size(), 1u);
  EXPECT_EQ(f.sorts[0].how, "bisect.insort");
}

TEST(ConstraintFacts, DisplaysTellDictFromSetFromSubscript) {
  const std::string src =
      "a = {}\n"
      "b = {1, 2}\n"
      "c = {k: v for k, v in a.items()}\n"
      "d = {x for x in b}\n"
      "e = {**a}\n"
      "f = [1][0]\n"
      "g = a['k'] if a else b\n"
      "h = {lambda x: x}\n"
      "i = list(b) + [y for y in b]\n";
  ProgramFacts f = Facts(src);
  std::vector<std::string> got;
  for (const StructureUse& s : f.structures)
    got.push_back(std::string(DataStructureName(s.structure)) + " " + Cut(src, s.span));
  EXPECT_EQ(got,
            (std::vector<std::string>{"dict {}", "set {1, 2}", "dict {k: v for k, v in a.items()}",
                                      "set {x for x in b}", "dict {**a}", "list [1]",
                                      "set {lambda x: x}", "list list(b)", "list [y for y in b]"}));
}

TEST(ConstraintFacts, SortingAndCallsIgnoreStringsButSeeFStrings) {
  const std::string src =
      "def sorted_copy(xs):\n"
      "    '''sorted(xs) in a docstring is not a call'''\n"
      "    ys = list(xs)  # ys.sort() in a comment neither\n"
      "    ys.sort(reverse=True)\n"
      "    s = 'sorted(ys)'\n"
      "    return f\"{sorted(ys)!r:>10} {{sorted}}\"\n";
  ProgramFacts f = Facts(src);
  ASSERT_EQ(f.sorts.size(), 2u) << f.Dump();
  EXPECT_EQ(f.sorts[0].how, ".sort");
  EXPECT_EQ(Cut(src, f.sorts[0].span), "ys.sort(reverse=True)");
  EXPECT_EQ(f.sorts[1].how, "sorted");
  EXPECT_EQ(Cut(src, f.sorts[1].span), "sorted(ys)");
  EXPECT_EQ(f.sorts[1].span.begin.line, 6);
  EXPECT_EQ(f.sorts[1].span.begin.column, 14);
  // A program-defined `sorted` shadows the builtin.
  ProgramFacts own = Facts("def sorted(x):\n    return x\nsorted([2, 1])\n");
  EXPECT_TRUE(own.sorts.empty()) << own.Dump();
}

TEST(ConstraintFacts, StatementsSkipDocstringsAndExpressionParts) {
  const std::string src =
      "from typing import List\n"
      "def f(xs: List[int]) -> int:\n"
      "    \"\"\"Docstring.\"\"\"\n"
      "    ys = [x for x in xs if x]\n"
      "    g = lambda v: v + 1\n"
      "    return sum(g(y) for y in ys)\n";
  ProgramFacts f = Facts(src);
  // import, def, assign, assign, return.
  ASSERT_EQ(f.statements.size(), 5u) << f.Dump();
  EXPECT_EQ(f.statements[4].begin.line, 6);
}

TEST(ConstraintFacts, ProgramThatDoesNotParseIsAnErrorForTheSourceOverload) {
  auto f = ComputeFacts("def f(:\n  pass\n");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("does not parse"), std::string::npos);
}

// ---- checkers ------------------------------------------------------------------------

const std::string kNested =
    "import numpy as np\n"                     // 1
    "def pairs(xs):\n"                         // 2
    "    out = []\n"                           // 3
    "    for i in range(len(xs)):\n"           // 4
    "        for j in range(i):\n"             // 5
    "            out.append(xs[i] + xs[j])\n"  // 6
    "    out.sort()\n"                         // 7
    "    return out\n";                        // 8

TEST(ConstraintCheckers, MaxLoopDepthPointsAtTheFirstLoopTooDeep) {
  EXPECT_FALSE(Check(kNested, Spec("max_loop_depth", int64_t{2})));
  auto v = Check(kNested, Spec("max_loop_depth", int64_t{1}));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->constraint, "max_loop_depth(1)");
  ASSERT_TRUE(v->span);
  EXPECT_EQ(Cut(kNested, *v->span), "for j in range(i):");
  EXPECT_EQ(v->span->begin.line, 5);
  EXPECT_EQ(v->span->begin.column, 8);
  EXPECT_NE(v->message.find("nested 2 deep (limit 1"), std::string::npos) << v->message;
  auto zero = Check(kNested, Spec("max_loop_depth", int64_t{0}));
  ASSERT_TRUE(zero && zero->span);
  EXPECT_EQ(zero->span->begin.line, 4);
}

TEST(ConstraintCheckers, LoopsRequiredAndForbiddenByKind) {
  EXPECT_FALSE(Check(kNested, Spec("requires_loop", std::string("for"))));
  EXPECT_FALSE(Check(kNested, Spec("requires_loop", std::string("any"))));
  auto need_while = Check(kNested, Spec("requires_loop", std::string("while")));
  ASSERT_TRUE(need_while);
  EXPECT_FALSE(need_while->span);
  EXPECT_EQ(need_while->message, "no while loop");
  auto no_for = Check(kNested, Spec("forbids_loop", std::string("for")));
  ASSERT_TRUE(no_for && no_for->span);
  EXPECT_EQ(no_for->span->begin.line, 4);
  EXPECT_FALSE(Check(kNested, Spec("forbids_loop", std::string("comprehension"))));
}

TEST(ConstraintCheckers, ImportsMatchSubmodulesAndAliases) {
  auto v = Check(kNested, Spec("forbids_import", std::string("numpy")));
  ASSERT_TRUE(v && v->span);
  EXPECT_EQ(v->constraint, "forbids_import(numpy)");
  EXPECT_EQ(Cut(kNested, *v->span), "import numpy as np");
  EXPECT_EQ(v->span->begin.line, 1);
  EXPECT_EQ(v->span->begin.column, 0);
  EXPECT_FALSE(Check("import os.path\n", Spec("requires_import", std::string("os"))));
  EXPECT_FALSE(Check("import osmium\n", Spec("forbids_import", std::string("os"))));
  auto missing = Check(kNested, Spec("requires_import", std::string("heapq")));
  ASSERT_TRUE(missing);
  EXPECT_FALSE(missing->span);
}

TEST(ConstraintCheckers, SortingStructuresAndCalls) {
  auto sort = Check(kNested, Spec("forbids_sorting"));
  ASSERT_TRUE(sort && sort->span);
  EXPECT_EQ(Cut(kNested, *sort->span), "out.sort()");
  EXPECT_EQ(sort->span->begin.line, 7);
  EXPECT_EQ(sort->span->begin.column, 4);
  EXPECT_FALSE(Check(kNested, Spec("requires_sorting")));
  auto unsorted = Check("x = 1\n", Spec("requires_sorting"));
  ASSERT_TRUE(unsorted);
  EXPECT_FALSE(unsorted->span);

  const std::string heap = "import heapq as hq\nh = []\nhq.heappush(h, 3)\n";
  auto no_heap = Check(heap, Spec("forbids_structure", std::string("heap")));
  ASSERT_TRUE(no_heap && no_heap->span);
  EXPECT_EQ(Cut(heap, *no_heap->span), "hq.heappush(h, 3)");
  EXPECT_EQ(no_heap->span->begin.line, 3);
  EXPECT_FALSE(Check(heap, Spec("requires_structure", std::string("heapq"))));
  EXPECT_FALSE(Check("from collections import Counter\nc = Counter('aab')\n",
                     Spec("requires_structure", std::string("dict"))));
  EXPECT_TRUE(Check(heap, Spec("requires_structure", std::string("deque"))));

  auto eval = Check("x = eval('1 + 2')\n", Spec("forbids_call", std::string("eval")));
  ASSERT_TRUE(eval && eval->span);
  EXPECT_EQ(eval->span->begin.column, 4);
  EXPECT_EQ(eval->span->end.column, 17);
  // Exact on the resolved name: ".sort" is any method named sort, "sort" only a bare
  // call; "compile" is the builtin, not re.compile; dotted names through imports.
  EXPECT_FALSE(Check(kNested, Spec("forbids_call", std::string("sort"))));
  EXPECT_TRUE(Check(kNested, Spec("forbids_call", std::string(".sort"))));
  EXPECT_FALSE(
      Check("import re\nr = re.compile('a')\n", Spec("forbids_call", std::string("compile"))));
  EXPECT_TRUE(
      Check("c = compile('1', '<s>', 'eval')\n", Spec("forbids_call", std::string("compile"))));
  EXPECT_TRUE(Check("from math import factorial as f\nf(3)\n",
                    Spec("forbids_call", std::string("math.factorial"))));
  EXPECT_FALSE(Check(kNested, Spec("forbids_call", std::string("numpy.sort"))));
  EXPECT_TRUE(Check("import math as m\nm.factorial(3)\n",
                    Spec("forbids_call", std::string("math.factorial"))));
  EXPECT_FALSE(Check("import math\nmath.factorial(3)\n",
                     Spec("requires_call", std::string("math.factorial"))));
}

TEST(ConstraintCheckers, RecursionAndStatementBudget) {
  const std::string fact = "def fact(n):\n    return 1 if n < 2 else n * fact(n - 1)\n";
  EXPECT_FALSE(Check(fact, Spec("requires_recursion")));
  auto v = Check(fact, Spec("forbids_recursion"));
  ASSERT_TRUE(v && v->span);
  EXPECT_EQ(v->message, "fact calls itself");
  EXPECT_EQ(Cut(fact, *v->span), "fact(n - 1)");
  EXPECT_EQ(v->span->begin.line, 2);
  EXPECT_EQ(v->span->begin.column, 31);
  auto need = Check(kNested, Spec("requires_recursion"));
  ASSERT_TRUE(need);
  EXPECT_FALSE(need->span);

  // kNested has 8 statements: import, def, assign, for, for, expression, expression, return.
  EXPECT_FALSE(Check(kNested, Spec("max_statements", int64_t{8})));
  auto budget = Check(kNested, Spec("max_statements", int64_t{6}));
  ASSERT_TRUE(budget && budget->span);
  EXPECT_EQ(budget->message, "8 statements (limit 6); this is statement 7");
  EXPECT_EQ(Cut(kNested, *budget->span), "out.sort()");
}

TEST(ConstraintCheckers, ViolationToStringAndChecksOnUnparsedPrograms) {
  auto v = Check(kNested, Spec("forbids_import", std::string("numpy")));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->ToString().rfind("forbids_import(numpy): imports numpy (forbidden)", 0), 0u)
      << v->ToString();
  // A program that does not parse is SYNTAX before the CONSTRAINT gate: no violation.
  EXPECT_FALSE(Check("def f(:\n", Spec("requires_recursion")));
}

TEST(ConstraintCheckers, CheckFactsMatchesTheCheckers) {
  ProgramFacts f = Facts(kNested);
  std::vector<ConstraintSpec> specs = {Spec("max_loop_depth", int64_t{1}), Spec("requires_sorting"),
                                       Spec("forbids_import", std::string("numpy"))};
  auto got = CheckFacts(f, specs);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].constraint, "max_loop_depth(1)");
  EXPECT_EQ(got[1].constraint, "forbids_import(numpy)");
}

TEST(ConstraintFacts, ScannerEdgeCases) {
  // 1: triple-quoted, raw and escaped strings hide their text; 2: a dict display inside an
  // f-string field, a nested format-spec field; 3-4: a line continuation; 5: a non-ASCII
  // identifier (columns are bytes: "élève" is 7).
  const std::string src = R"PY(s = '''it's "sorted(x)" ''' + r'\\' + "a\"b"
t = f'{ {1: 2}[1] } {len(s)!r} {s:>{len(s)}}'
u = (len(s) +\
     max(1, 2))
élève = sorted(s)
)PY";
  ProgramFacts f = Facts(src);
  std::vector<std::string> calls;
  for (const CallFact& c : f.calls)
    calls.push_back(c.name + "@" + std::to_string(c.span.begin.line));
  EXPECT_EQ(calls, (std::vector<std::string>{"len@2", "len@2", "len@3", "max@4", "sorted@5"}))
      << f.Dump();
  ASSERT_EQ(f.sorts.size(), 1u);
  EXPECT_EQ(f.sorts[0].span.begin.line, 5);
  EXPECT_EQ(f.sorts[0].span.begin.column, 10);
  bool dict_in_field = false;
  for (const StructureUse& s : f.structures)
    dict_in_field |= s.structure == DataStructure::kDict && s.span.begin.line == 2;
  EXPECT_TRUE(dict_in_field) << f.Dump();
}

TEST(ConstraintCheckers, ThreadSafeAndDeterministic) {
  // Checkers shared by threads that check different programs in an interleaved order give
  // what one thread gives (the per-thread facts memo must never leak across programs).
  std::vector<std::string> programs = {kNested, "def f(n):\n    return f(n - 1) if n else 0\n",
                                       "import heapq\nh = []\nheapq.heappush(h, 1)\n",
                                       "x = sorted([3, 1, 2])\n"};
  std::vector<ConstraintSpec> specs = {Spec("max_loop_depth", int64_t{1}),
                                       Spec("forbids_recursion"),
                                       Spec("forbids_structure", std::string("heap")),
                                       Spec("forbids_sorting"), Spec("max_statements", int64_t{2})};
  auto set = MakeConstraintSet(specs);
  ASSERT_TRUE(set.ok());
  std::vector<cfg::ProgramCfg> cfgs;
  for (const std::string& p : programs) cfgs.push_back(*cfg::ProgramCfg::Build(p));
  auto run = [&](size_t start) {
    std::vector<std::string> out(programs.size());
    for (size_t k = 0; k < 200; ++k) {
      size_t i = (start + k) % programs.size();
      std::string line;
      for (const auto& c : *set)
        if (auto v = c->Violation(programs[i], cfgs[i])) line += v->ToString() + ";";
      if (k < programs.size()) {
        out[i] = line;
      } else if (out[i] != line) {
        return std::vector<std::string>{"mismatch"};
      }
    }
    return out;
  };
  std::vector<std::string> expected = run(0);
  ASSERT_EQ(expected.size(), programs.size());
  EXPECT_EQ(expected[1].find("forbids_recursion: f calls itself"), 0u) << expected[1];
  EXPECT_NE(expected[2].find("forbids_structure(heap)"), std::string::npos) << expected[2];
  EXPECT_EQ(expected[3], "forbids_sorting: sorts with sorted (forbidden) [1:4-1:21];");
  std::vector<std::vector<std::string>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) threads.emplace_back([&, t] { got[t] = run(t); });
  for (std::thread& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, expected);
}

TEST(ConstraintSpecs, ValidationNamesWhatIsWrong) {
  EXPECT_TRUE(ValidateConstraintSpec(Spec("requires_recursion")).ok());
  auto msg = [](const ConstraintSpec& s) { return ValidateConstraintSpec(s).message(); };
  EXPECT_EQ(msg(Spec("max_depth", int64_t{1})), "unknown kind 'max_depth'");
  EXPECT_EQ(msg(Spec("requires_recursion", int64_t{1})), "requires_recursion takes no value");
  EXPECT_NE(msg(Spec("max_loop_depth", int64_t{-1})).find(">= 0"), std::string::npos);
  EXPECT_NE(msg(Spec("max_statements", int64_t{0})).find(">= 1"), std::string::npos);
  EXPECT_NE(msg(Spec("max_loop_depth", std::string("2"))).find("integer"), std::string::npos);
  EXPECT_FALSE(ValidateConstraintSpec(Spec("requires_loop", std::string("until"))).ok());
  EXPECT_FALSE(ValidateConstraintSpec(Spec("forbids_structure", std::string("tree"))).ok());
  EXPECT_FALSE(ValidateConstraintSpec(Spec("forbids_import", std::string("os..path"))).ok());
  EXPECT_FALSE(ValidateConstraintSpec(Spec("forbids_import", std::string(".x"))).ok());
  EXPECT_TRUE(ValidateConstraintSpec(Spec("forbids_call", std::string(".sort"))).ok());
  EXPECT_FALSE(MakeConstraint(Spec("forbids_call", std::string("eval()"))).ok());
  auto set = MakeConstraintSet({Spec("forbids_sorting"), Spec("nope")});
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().message(), "entry 1: unknown kind 'nope'");
  EXPECT_EQ(ConstraintKinds().size(), 14u);
}

TEST(ConstraintSpecs, PromptSuffixDescribesEverySpec) {
  EXPECT_EQ(PromptSuffix({}), "");
  EXPECT_EQ(PromptSuffix({Spec("max_loop_depth", int64_t{1}),
                          Spec("forbids_import", std::string("numpy")),
                          Spec("forbids_loop", std::string("while"))}),
            "\nConstraints:\n- Nest loops (comprehensions included) at most 1 deep.\n"
            "- Do not import numpy.\n- Do not use while loops.\n");
  for (const std::string& kind : ConstraintKinds()) {
    ConstraintSpec s{kind, {}, ""};
    if (!ValidateConstraintSpec(s).ok()) s.value = int64_t{2};
    if (!ValidateConstraintSpec(s).ok()) s.value = std::string("for");
    if (!ValidateConstraintSpec(s).ok()) s.value = std::string("heap");
    ASSERT_TRUE(ValidateConstraintSpec(s).ok()) << kind;
    EXPECT_EQ(DescribeConstraint(s).back(), '.') << kind;
  }
}

}  // namespace
}  // namespace egca::gates
