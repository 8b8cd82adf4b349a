// CfgBuilder through ProgramCfg::Build: graph shape, successor order, spans, scopes,
// syntax errors, limits.
#include <gtest/gtest.h>

#include <string>

#include "egca/cfg/cfg.h"

namespace egca::cfg {
namespace {

ProgramCfg MustBuild(const std::string& src) {
  StatusOr<ProgramCfg> p = ProgramCfg::Build(src);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return std::move(p).value();
}

std::string Text(const ProgramCfg& p, const SourceSpan& s) {
  return std::string(p.source().substr(s.begin_byte, s.end_byte - s.begin_byte));
}

// Block whose first statement is of `kind`.
BlockId FindBlock(const FunctionCfg& f, StmtKind kind) {
  for (BlockId b = 0; b < f.block_count(); ++b) {
    if (!f.block(b).statements.empty() && f.block(b).statements.front().kind == kind) return b;
  }
  ADD_FAILURE() << "no block starting with " << StmtKindName(kind);
  return 0;
}

TEST(CfgBuilder, EveryScopeHasOneEntryAndOneExit) {
  ProgramCfg p = MustBuild(
      "def f(x):\n    if x:\n        return [y for y in x]\n    return (lambda: 1)()\n"
      "class C:\n    def m(self):\n        pass\n");
  ASSERT_EQ(p.scopes().size(), 6u);  // module, f, <listcomp>, <lambda>, C, m
  for (const FunctionCfg& f : p.scopes()) {
    int entries = 0, exits = 0;
    for (BlockId b = 0; b < f.block_count(); ++b) {
      entries += f.block(b).kind == BlockKind::kEntry;
      exits += f.block(b).kind == BlockKind::kExit;
    }
    EXPECT_EQ(entries, 1) << f.name;
    EXPECT_EQ(exits, 1) << f.name;
    EXPECT_EQ(f.entry, 0u);
    EXPECT_EQ(f.exit, f.block_count() - 1);
    EXPECT_TRUE(f.Predecessors(f.entry).empty());
    EXPECT_TRUE(f.Successors(f.exit).empty());
    EXPECT_TRUE(f.block(f.entry).statements.empty());
  }
}

TEST(CfgBuilder, IfSuccessorsAreTrueThenFalse) {
  ProgramCfg p = MustBuild("def f(x):\n    if x > 0:\n        x = 1\n    return x\n");
  const FunctionCfg& f = p.scopes()[1];
  BlockId cond = FindBlock(f, StmtKind::kIf);
  EXPECT_EQ(f.block(cond).terminator, Terminator::kIf);
  std::vector<Successor> s = f.Successors(cond);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].kind, EdgeKind::kTrue);
  EXPECT_EQ(f.block(s[0].block).statements.front().kind, StmtKind::kAssign);
  EXPECT_EQ(s[1].kind, EdgeKind::kFalse);
  EXPECT_EQ(f.block(s[1].block).statements.front().kind, StmtKind::kReturn);
}

TEST(CfgBuilder, LoopBackBreakContinueAndElse) {
  ProgramCfg p = MustBuild(
      "def f(xs):\n    for x in xs:\n        if x:\n            break\n        continue\n"
      "    else:\n        x = 0\n    return x\n");
  const FunctionCfg& f = p.scopes()[1];
  BlockId header = FindBlock(f, StmtKind::kFor);
  BlockId brk = FindBlock(f, StmtKind::kBreak);
  BlockId cont = FindBlock(f, StmtKind::kContinue);
  BlockId els = FindBlock(f, StmtKind::kAssign);
  BlockId ret = FindBlock(f, StmtKind::kReturn);
  std::vector<Successor> hs = f.Successors(header);
  ASSERT_EQ(hs.size(), 2u);
  EXPECT_EQ(hs[1].block, els);  // exhausted -> else
  EXPECT_EQ(hs[1].kind, EdgeKind::kFalse);
  ASSERT_EQ(f.Successors(brk).size(), 1u);
  EXPECT_EQ(f.Successors(brk)[0].block, ret);  // break skips the else
  EXPECT_EQ(f.Successors(brk)[0].kind, EdgeKind::kBreak);
  EXPECT_EQ(f.Successors(cont)[0].block, header);
  EXPECT_EQ(f.Successors(cont)[0].kind, EdgeKind::kContinue);
  EXPECT_EQ(f.block(FindBlock(f, StmtKind::kIf)).loop_depth, 1);
  EXPECT_EQ(f.block(header).loop_depth, 0);
}

TEST(CfgBuilder, ReturnInsideTryRunsFinallyThenLeaves) {
  ProgramCfg p =
      MustBuild("def f(h):\n    try:\n        return h.read()\n    finally:\n        h.close()\n");
  const FunctionCfg& f = p.scopes()[1];
  BlockId ret = FindBlock(f, StmtKind::kReturn);
  BlockId fin = FindBlock(f, StmtKind::kFinally);
  std::vector<Successor> rs = f.Successors(ret);
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].block, fin);
  EXPECT_EQ(rs[0].kind, EdgeKind::kReturn);
  EXPECT_EQ(rs[1].kind, EdgeKind::kException);  // exception edge always last
  EXPECT_EQ(f.block(fin).terminator, Terminator::kFinallyExit);
  std::vector<Successor> fs = f.Successors(fin);
  ASSERT_EQ(fs.size(), 2u);  // not reached normally: only return and exception go on
  EXPECT_EQ(fs[0].block, f.exit);
  EXPECT_EQ(fs[0].kind, EdgeKind::kReturn);
  EXPECT_EQ(fs[1].block, f.exit);
  EXPECT_EQ(fs[1].kind, EdgeKind::kException);
}

TEST(CfgBuilder, ExceptionEdgesOnlyInsideTry) {
  ProgramCfg p = MustBuild(
      "def f(x):\n    y = g(x)\n    try:\n        z = g(y)\n    except E:\n        z = 0\n"
      "    return z\n");
  const FunctionCfg& f = p.scopes()[1];
  for (BlockId b = 0; b < f.block_count(); ++b) {
    for (const Successor& s : f.Successors(b)) {
      if (s.kind != EdgeKind::kException) continue;
      EXPECT_EQ(f.block(b).statements.front().kind, StmtKind::kAssign);
      EXPECT_EQ(Text(p, f.block(b).statements.front().span), "z = g(y)");
      EXPECT_EQ(f.block(s.block).statements.front().kind, StmtKind::kExcept);
    }
  }
}

TEST(CfgBuilder, HeaderSpansExcludeBodies) {
  ProgramCfg p = MustBuild(
      "async def f(a, b=1) -> int:  # comment\n    while a < b:\n        a += 1\n"
      "    with open('x') as h:\n        pass\n    return a\n");
  EXPECT_EQ(Text(p, p.module().block(1).statements[0].span), "async def f(a, b=1) -> int:");
  const FunctionCfg& f = p.scopes()[1];
  EXPECT_TRUE(f.is_async);
  EXPECT_EQ(Text(p, f.block(FindBlock(f, StmtKind::kWhile)).statements[0].span), "while a < b:");
  const Statement& w = f.block(FindBlock(f, StmtKind::kAugAssign)).statements[0];
  EXPECT_EQ(Text(p, w.span), "a += 1");
  EXPECT_EQ(w.span.begin.line, 3);
  EXPECT_EQ(w.span.begin.column, 8);
  EXPECT_EQ(w.span.end.column, 14);
}

TEST(CfgBuilder, ColumnsAreUtf8Bytes) {
  ProgramCfg p = MustBuild("s = 'é'; t = 1\n");
  const auto& stmts = p.module().block(1).statements;
  ASSERT_EQ(stmts.size(), 2u);
  EXPECT_EQ(stmts[1].span.begin.column, 10);  // 'é' is two bytes
  EXPECT_EQ(Text(p, stmts[1].span), "t = 1");
}

TEST(CfgBuilder, ScopesFollowCPythonNamesAndFirstLines) {
  // Expected values printed by CPython 3.11 (co_name, co_qualname, co_firstlineno).
  ProgramCfg p = MustBuild(
      "\n@dec\n@dec2(lambda: 1)\ndef f(x):\n    return [y for y in x]\n\nclass C:\n"
      "    @staticmethod\n    def m(): pass\n");
  struct Want {
    const char* name;
    const char* qualname;
    int32_t first_line;
  };
  std::vector<Want> want = {{"<module>", "<module>", 1},
                            {"<lambda>", "<lambda>", 3},
                            {"f", "f", 2},
                            {"<listcomp>", "f.<locals>.<listcomp>", 5},
                            {"C", "C", 7},
                            {"m", "C.m", 8}};
  ASSERT_EQ(p.scopes().size(), want.size());
  // Our order is by definition start; CPython's co_consts order differs, so look up.
  for (const Want& w : want) {
    int32_t i = p.FindScope(w.name, w.first_line);
    ASSERT_GE(i, 0) << w.name;
    EXPECT_EQ(p.scopes()[i].qualified_name, w.qualname);
  }
  EXPECT_EQ(p.FindScope("f", 4), -1);  // the def line is not co_firstlineno when decorated
  EXPECT_EQ(p.scopes()[p.FindScopeByName("C.m")].parent, p.FindScopeByName("C"));
}

TEST(CfgBuilder, ScopeAtFindsInnermost) {
  std::string src = "def f():\n    g = lambda: 0\n    return g\n";
  ProgramCfg p = MustBuild(src);
  EXPECT_EQ(p.ScopeAt(0), 1);  // "def"
  EXPECT_EQ(p.scopes()[p.ScopeAt(static_cast<uint32_t>(src.find("0")))].name, "<lambda>");
  EXPECT_EQ(p.scopes()[p.ScopeAt(static_cast<uint32_t>(src.find("return")))].name, "f");
  EXPECT_EQ(p.ScopeAt(static_cast<uint32_t>(src.size())), 0);
}

TEST(CfgBuilder, ComprehensionFirstIterableBelongsToEnclosingScope) {
  ProgramCfg p =
      MustBuild("def f(xs):\n    return [y for y in (lambda: xs)() for z in (lambda: y)()]\n");
  int32_t comp = p.FindScopeByName("<listcomp>");
  ASSERT_GE(comp, 0);
  // The lambda in the first iterable is f's; the one in the second clause the listcomp's.
  std::string src(p.source());
  int32_t first_lambda = p.ScopeAt(static_cast<uint32_t>(src.find(": xs")));
  int32_t second_lambda = p.ScopeAt(static_cast<uint32_t>(src.find(": y")));
  EXPECT_EQ(p.scopes()[first_lambda].name, "<lambda>");
  EXPECT_EQ(p.scopes()[second_lambda].name, "<lambda>");
  EXPECT_EQ(p.scopes()[first_lambda].parent, 1);
  EXPECT_EQ(p.scopes()[second_lambda].parent, comp);
  EXPECT_EQ(p.scopes()[first_lambda].qualified_name, "f.<locals>.<lambda>");
  EXPECT_EQ(p.scopes()[second_lambda].qualified_name,
            "f.<locals>.<listcomp>.<lambda>");  // as CPython 3.11
  const Statement& ret = p.scopes()[1].block(1).statements[0];
  EXPECT_EQ(ret.child_scopes, (std::vector<int32_t>{comp, first_lambda}));
}

TEST(CfgBuilder, YieldSplitsBlocksAndMarksGenerator) {
  ProgramCfg p = MustBuild("def g():\n    a = 1\n    yield a\n    b = 2\n");
  const FunctionCfg& f = p.scopes()[1];
  EXPECT_TRUE(f.is_generator);
  BlockId y = FindBlock(f, StmtKind::kAssign);
  EXPECT_EQ(f.block(y).terminator, Terminator::kYield);
  std::vector<Successor> s = f.Successors(y);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].kind, EdgeKind::kNormal);
  EXPECT_EQ(s[1].kind, EdgeKind::kException);
  EXPECT_EQ(Text(p, f.block(s[0].block).statements[0].span), "b = 2");
}

TEST(CfgBuilder, SyntaxErrorsAreResultsNotErrors) {
  struct Case {
    const char* src;
    const char* message_part;
    int32_t line;
  };
  for (const Case& c : std::vector<Case>{
           {"def f(:\n    pass\n", "", 1},
           {"x = (1,\n", "", 1},
           {"return 1\n", "'return' outside function", 1},
           {"def f():\n    continue\n", "'continue' not properly in loop", 2},
           {"class C:\n    yield 1\n", "'yield' outside function", 2},
           {"def f():\n  x = 1\n   y = 2\n", "indent", 3},
           {"  x = 1\n", "unexpected indent", 1},
           {"x = 1\nfrom __future__ import annotations\n", "__future__", 2},
           {"def f():\n    await g()\n", "'await' outside async function", 2},
           {"nonlocal x\n", "nonlocal", 1},
           {"for x in y:\n", "expected an indented block", 1},
       }) {
    SCOPED_TRACE(c.src);
    StatusOr<ProgramCfg> p = ProgramCfg::Build(c.src);
    ASSERT_TRUE(p.ok());
    ASSERT_FALSE(p->parsed());
    EXPECT_TRUE(p->scopes().empty());
    EXPECT_NE(p->syntax_error()->message.find(c.message_part), std::string::npos)
        << p->syntax_error()->message;
    EXPECT_LE(p->syntax_error()->span.begin.line, c.line + 1);
    EXPECT_GE(p->syntax_error()->span.begin.line, 1);
  }
  StatusOr<std::optional<SyntaxError>> quick = ProgramCfg::CheckSyntax("def f(:\n");
  ASSERT_TRUE(quick.ok());
  EXPECT_TRUE(quick->has_value());
  EXPECT_FALSE(ProgramCfg::CheckSyntax("x = 1\n")->has_value());
}

TEST(CfgBuilder, ValidEdgeCasesParse) {
  for (const char* src :
       {"", "\n\n# only a comment\n", "x = 1; y = 2\r\nz = 3\r\n", "if x: pass\nelse: y = 1\n",
        "def f():\n    '''doc'''\n", "from __future__ import annotations\nimport os\n",
        "def f():\n\tif x:\n\t\treturn 1\n\treturn 2\n"}) {
    SCOPED_TRACE(src);
    StatusOr<ProgramCfg> p = ProgramCfg::Build(src);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(p->parsed()) << p->syntax_error()->message;
  }
}

TEST(CfgBuilder, Python312SyntaxIsReportedUnsupported) {
  ProgramCfg p = MustBuild("type Point = tuple[int, int]\ndef f[T](x: T) -> T:\n    return x\n");
  EXPECT_TRUE(p.parsed());
  EXPECT_EQ(p.unsupported().size(), 2u);
  EXPECT_EQ(p.module().block(1).statements[0].kind, StmtKind::kOther);
}

TEST(CfgBuilder, NestingLimitIsUnimplementedNotACrash) {
  std::string src;
  for (int i = 0; i < 60; ++i) src += std::string(i, ' ') + "if x:\n";
  src += std::string(60, ' ') + "pass\n";
  StatusOr<ProgramCfg> p = ProgramCfg::Build(src, BuildOptions().set_max_nesting_depth(40));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(p.status().message().find("max_nesting_depth"), std::string::npos);
  StatusOr<ProgramCfg> q = ProgramCfg::Build(src);
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->parsed());
  // Much deeper input: tree-sitter itself gives up with an ERROR node; still no crash.
  std::string deep;
  for (int i = 0; i < 400; ++i) deep += std::string(i, ' ') + "if x:\n";
  deep += std::string(400, ' ') + "pass\n";
  StatusOr<ProgramCfg> r = ProgramCfg::Build(deep);
  EXPECT_TRUE(!r.ok() || !r->parsed() || r->scopes().size() == 1);
}

TEST(CfgBuilder, DeepExpressionsDoNotRecurse) {
  std::string src = "x = " + std::string(5000, '(') + "1" + std::string(5000, ')') + "\n";
  StatusOr<ProgramCfg> p = ProgramCfg::Build(src);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->parsed());
  std::string lambdas = "f = ";
  for (int i = 0; i < 100; ++i) lambdas += "lambda: ";
  lambdas += "0\n";
  StatusOr<ProgramCfg> q = ProgramCfg::Build(lambdas);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->scopes().size(), 101u);
}

TEST(CfgBuilder, DumpIsDeterministic) {
  const char* src = "def f(x):\n    try:\n        x()\n    except E:\n        pass\n";
  EXPECT_EQ(MustBuild(src).Dump(), MustBuild(src).Dump());
}

}  // namespace
}  // namespace egca::cfg
