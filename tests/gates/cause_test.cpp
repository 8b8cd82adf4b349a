// The cause span of a run-time error (gates/cause.h, issue 37): binding sites of the name a
// name error is about, through the use.
#include "egca/gates/cause.h"

#include <string>

#include <gtest/gtest.h>

namespace egca::gates {
namespace {

using cfg::StmtKind;

// The span of the `n`-th (1-based) line of `src`, without its newline.
SourceSpan LineOf(const std::string& src, int n) { return LineIndex(src).LineSpan(n); }

ErrorCause Cause(const std::string& src, const std::string& kind, const std::string& message,
                 int raising_line) {
  StatusOr<cfg::ProgramCfg> program = cfg::ProgramCfg::Build(src);
  EXPECT_TRUE(program.ok());
  // The router's error span is the statement that raised: here a whole simple statement,
  // so the line without its indentation.
  SourceSpan line = LineOf(src, raising_line);
  const size_t first = src.find_first_not_of(' ', line.begin_byte);
  line = LineIndex(src).SpanFromBytes(static_cast<uint32_t>(first), line.end_byte);
  return CauseOfError(*program, src, kind, message, line);
}

TEST(ErrorName, FromTheMessagesCPythonWrites) {
  EXPECT_EQ(ErrorName("NameError", "name 'total' is not defined"), "total");
  EXPECT_EQ(ErrorName("UnboundLocalError",
                      "cannot access local variable 'n' where it is not associated with a value"),
            "n");
  EXPECT_EQ(ErrorName("UnboundLocalError", "local variable 'n' referenced before assignment"), "n");
  bool on_module = false;
  EXPECT_EQ(ErrorName("AttributeError", "module 'math' has no attribute 'sqroot'", &on_module),
            "math");
  EXPECT_TRUE(on_module);
  EXPECT_EQ(ErrorName("AttributeError", "'Solver' object has no attribute 'memo'", &on_module),
            "memo");
  EXPECT_FALSE(on_module);
  EXPECT_FALSE(ErrorName("ZeroDivisionError", "division by zero").has_value());
  EXPECT_FALSE(ErrorName("NameError", "no quotes here").has_value());
}

TEST(StatementBinds, TargetsNotUses) {
  EXPECT_TRUE(StatementBinds(StmtKind::kAssign, "a, (b, c) = v", "c"));
  EXPECT_TRUE(StatementBinds(StmtKind::kAssign, "x = y = 0", "y"));
  EXPECT_FALSE(StatementBinds(StmtKind::kAssign, "x = y = 0", "z"));
  EXPECT_FALSE(StatementBinds(StmtKind::kAssign, "x[i] = v", "x"));
  EXPECT_FALSE(StatementBinds(StmtKind::kAssign, "x[i] = v", "i"));
  EXPECT_FALSE(StatementBinds(StmtKind::kAssign, "x = total", "total"));  // a use
  EXPECT_FALSE(StatementBinds(StmtKind::kAssign, "f = lambda total=1: total", "total"));
  EXPECT_FALSE(StatementBinds(StmtKind::kAssign, "s = 'total = 1'", "total"));
  EXPECT_TRUE(StatementBinds(StmtKind::kAugAssign, "total += x", "total"));
  EXPECT_FALSE(StatementBinds(StmtKind::kAugAssign, "total += x", "x"));
  EXPECT_TRUE(StatementBinds(StmtKind::kAnnAssign, "n: int = 0", "n"));
  EXPECT_TRUE(StatementBinds(StmtKind::kFor, "for i, (k, v) in enumerate(d.items()):", "v"));
  EXPECT_FALSE(StatementBinds(StmtKind::kFor, "for i in xs:", "xs"));
  EXPECT_TRUE(StatementBinds(StmtKind::kFunctionDef, "def f(a, b=2, *rest, **kw):", "rest"));
  EXPECT_TRUE(StatementBinds(StmtKind::kFunctionDef, "def f(a, b=2, *rest, **kw):", "f"));
  EXPECT_FALSE(StatementBinds(StmtKind::kFunctionDef, "def f(a, b=c):", "c"));
  EXPECT_TRUE(StatementBinds(StmtKind::kClassDef, "class Solver(Base):", "Solver"));
  EXPECT_TRUE(StatementBinds(StmtKind::kImport, "import numpy as np, sys", "np"));
  EXPECT_TRUE(StatementBinds(StmtKind::kImport, "import os.path", "os"));
  EXPECT_TRUE(StatementBinds(StmtKind::kImport, "from math import sqrt as root, pi", "pi"));
  EXPECT_FALSE(StatementBinds(StmtKind::kImport, "from math import sqrt as root", "sqrt"));
  EXPECT_TRUE(StatementBinds(StmtKind::kWith, "with open(p) as fh:", "fh"));
  EXPECT_TRUE(StatementBinds(StmtKind::kExcept, "except ValueError as err:", "err"));
  EXPECT_TRUE(StatementBinds(StmtKind::kIf, "if (m := len(xs)) > 2:", "m"));
  EXPECT_TRUE(StatementBinds(StmtKind::kAssign, "self.memo = {}", "memo", true));
  EXPECT_FALSE(StatementBinds(StmtKind::kAssign, "self.memo[k] = v", "memo", true));
  EXPECT_FALSE(StatementBinds(StmtKind::kAssign, "memo = {}", "memo", true));
}

TEST(CauseOfError, NameErrorSpansFromTheBindingsToTheUse) {
  // UnboundLocalError: `total` is bound on line 5 and used before that, on line 4.
  const std::string src =
      "def f(xs):\n"           // 1
      "    n = 0\n"            // 2
      "    for x in xs:\n"     // 3
      "        n += total\n"   // 4  raises: total used before it is bound
      "        total = x\n"    // 5
      "    return n\n";        // 6
  ErrorCause c = Cause(src, "UnboundLocalError",
                       "cannot access local variable 'total' where it is not associated with a value", 4);
  EXPECT_TRUE(c.name_error);
  EXPECT_EQ(c.name, "total");
  ASSERT_EQ(c.bindings.size(), 1u);
  EXPECT_EQ(c.bindings[0].begin.line, 5);
  EXPECT_EQ(c.span.begin.line, 4);  // the use ...
  EXPECT_EQ(c.span.end.line, 5);    // ... through the binding
}

TEST(CauseOfError, NameBoundNowhereSpansFromTheScopeHeader) {
  // v1's typical NameError: the parameter was renamed, the body uses the reference's name.
  const std::string src =
      "def other(xs):\n"            // 1  another scope binds xs: not searched
      "    return xs\n"             // 2
      "def any_items(seq):\n"       // 3
      "    seen = 0\n"              // 4
      "    for elem in xs:\n"       // 5  raises NameError: xs
      "        seen += 1\n"         // 6
      "    return seen > 0\n";      // 7
  StatusOr<cfg::ProgramCfg> program = cfg::ProgramCfg::Build(src);
  ASSERT_TRUE(program.ok());
  // The router's span of a raising `for` is its header statement.
  const size_t b = src.find("for elem");
  const size_t e = src.find(":\n", b) + 1;
  SourceSpan use = LineIndex(src).SpanFromBytes(static_cast<uint32_t>(b), static_cast<uint32_t>(e));
  ErrorCause c = CauseOfError(*program, src, "NameError", "name 'xs' is not defined", use);
  EXPECT_TRUE(c.name_error);
  EXPECT_TRUE(c.bindings.empty());
  EXPECT_EQ(c.span.begin.line, 3);  // def any_items(seq):
  EXPECT_EQ(c.span.end.line, 5);
}

TEST(CauseOfError, ModuleLevelBindingAndEnclosingScope) {
  const std::string src =
      "limit = 3\n"                  // 1
      "def f(xs):\n"                 // 2
      "    return [x for x in xs if x < limt]\n"  // 3 raises NameError: limt (bound nowhere)
      "def g(xs):\n"                 // 4
      "    return len(xs) > limit\n"; // 5
  ErrorCause typo = Cause(src, "NameError", "name 'limt' is not defined", 3);
  EXPECT_TRUE(typo.bindings.empty());
  EXPECT_EQ(typo.span.begin.line, 2);  // the function around the comprehension: its header
  EXPECT_EQ(typo.span.end.line, 3);
  // A use in g of a module-level name found through the scope chain.
  ErrorCause chain = Cause(src, "NameError", "name 'limit' is not defined", 5);
  ASSERT_EQ(chain.bindings.size(), 1u);
  EXPECT_EQ(chain.bindings[0].begin.line, 1);
  EXPECT_EQ(chain.span.begin.line, 1);
  EXPECT_EQ(chain.span.end.line, 5);
}

TEST(CauseOfError, SelfAttributeAndModuleAttribute) {
  const std::string src =
      "import math\n"                    // 1
      "class S:\n"                       // 2
      "    def reset(self):\n"           // 3
      "        self.seen = set()\n"      // 4
      "    def add(self, x):\n"          // 5
      "        self.sen.add(x)\n"        // 6  AttributeError: 'S' object has no attribute 'sen'
      "    def put(self, x):\n"          // 7
      "        self.seen.add(x)\n"       // 8  AttributeError when reset() was not called
      "    def root(self, x):\n"         // 9
      "        return math.sqroot(x)\n"; // 10 AttributeError: module 'math' has no attribute 'sqroot'
  ErrorCause self = Cause(src, "AttributeError", "'S' object has no attribute 'sen'", 6);
  EXPECT_TRUE(self.name_error);
  EXPECT_EQ(self.name, "sen");
  EXPECT_TRUE(self.bindings.empty());
  EXPECT_EQ(self.span.begin.line, 5);  // the method's header through the use
  EXPECT_EQ(self.span.end.line, 6);
  ErrorCause seen = Cause(src, "AttributeError", "'S' object has no attribute 'seen'", 8);
  ASSERT_EQ(seen.bindings.size(), 1u);  // self.seen = set() in another method
  EXPECT_EQ(seen.bindings[0].begin.line, 4);
  EXPECT_EQ(seen.span.begin.line, 4);
  EXPECT_EQ(seen.span.end.line, 8);
  ErrorCause mod = Cause(src, "AttributeError", "module 'math' has no attribute 'sqroot'", 10);
  EXPECT_EQ(mod.name, "math");
  ASSERT_EQ(mod.bindings.size(), 1u);  // import math
  EXPECT_EQ(mod.span.begin.line, 1);
  EXPECT_EQ(mod.span.end.line, 10);
}

TEST(CauseOfError, OtherExceptionsAreTheRaisingStatement) {
  const std::string src =
      "def f(xs):\n"
      "    total = 0\n"
      "    return total / len(xs)\n";
  ErrorCause c = Cause(src, "ZeroDivisionError", "division by zero", 3);
  EXPECT_FALSE(c.name_error);
  EXPECT_EQ(c.span.begin.line, 3);
  EXPECT_EQ(c.span.end.line, 3);
  // An attribute missing on an object that is not self: not a naming slip.
  ErrorCause other = Cause("def f(xs):\n    return xs.size\n", "AttributeError",
                           "'list' object has no attribute 'size'", 2);
  EXPECT_FALSE(other.name_error);
  EXPECT_EQ(other.span.begin.line, 2);
}

}  // namespace
}  // namespace egca::gates
