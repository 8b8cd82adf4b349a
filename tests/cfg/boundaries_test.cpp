// Execution boundaries B(y) and the lookups the divergence engine uses to map tracer
// events (line, (line, column), position-table byte spans) onto them.
#include "egca/cfg/boundaries.h"

#include <gtest/gtest.h>

#include "egca/cfg/cfg.h"
#include "egca/core/span.h"

namespace egca::cfg {
namespace {

constexpr const char* kSource =
    "def f(xs):\n"                    // 1
    "    \"\"\"Doc.\"\"\"\n"          // 2
    "    total = 0\n"                 // 3
    "    for x in xs:\n"              // 4
    "        if x > 0: total += x\n"  // 5
    "        y = (x +\n"              // 6
    "             1)\n"               // 7
    "    a = 1; b = 2\n"              // 8
    "    return total\n";             // 9

class BoundariesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<ProgramCfg> p = ProgramCfg::Build(kSource);
    ASSERT_TRUE(p.ok());
    program_ = std::move(p).value();
    scope_ = program_.FindScope("f", 1);
    ASSERT_GE(scope_, 0);
  }
  const FunctionCfg& f() const { return program_.scopes()[scope_]; }
  ProgramCfg program_;
  int32_t scope_ = -1;
};

TEST_F(BoundariesTest, BlocksInSourceOrderWithContiguousSpans) {
  BoundaryMap m = BoundaryMap::Compute(f());
  // total=0 | for | if | total+=x | y=(x+1) | a=1;b=2;return
  ASSERT_EQ(m.size(), 6u);
  const auto& b = m.boundaries();
  EXPECT_EQ(b[0].span.begin.line, 3);  // the docstring is not a boundary
  EXPECT_EQ(b[0].statement_count, 1);
  EXPECT_EQ(b[1].span.begin.line, 4);
  EXPECT_EQ(b[2].span.ToString(), "5:8-5:17");   // "if x > 0:"
  EXPECT_EQ(b[3].span.ToString(), "5:18-5:28");  // "total += x"
  EXPECT_EQ(b[4].span.ToString(), "6:8-7:15");
  EXPECT_EQ(b[5].span.ToString(), "8:4-9:16");
  EXPECT_EQ(b[5].statement_count, 3);
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(b[i].index, static_cast<int32_t>(i));
    if (i > 0) {
      EXPECT_LE(b[i - 1].span.end_byte, b[i].span.begin_byte);
    }
  }
}

TEST_F(BoundariesTest, LineLookup) {
  BoundaryMap m = BoundaryMap::Compute(f());
  EXPECT_EQ(m.FindLine(3), 0);
  EXPECT_EQ(m.FindLine(4), 1);
  EXPECT_EQ(m.FindLine(5), 2);  // first boundary starting on the line
  EXPECT_EQ(m.FindAllOnLine(5), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(m.FindLine(7), 4);  // continuation line of a multi-line statement
  EXPECT_EQ(m.FindLine(9), 5);
  EXPECT_FALSE(m.FindLine(2).has_value());  // docstring only
  EXPECT_FALSE(m.FindLine(1).has_value());  // the def line belongs to the module scope
  EXPECT_FALSE(m.FindLine(42).has_value());
}

TEST_F(BoundariesTest, PointAndByteLookup) {
  BoundaryMap m = BoundaryMap::Compute(f());
  EXPECT_EQ(m.FindPoint({5, 12}), 2);              // inside "if x > 0:"
  EXPECT_EQ(m.FindPoint({5, 20}), 3);              // inside "total += x"
  EXPECT_FALSE(m.FindPoint({5, 17}).has_value());  // the space between them
  LineIndex lines(kSource);
  // A position-table span of "x > 0" and of "x + 1" (across lines).
  EXPECT_EQ(m.FindBytes(lines.Offset({5, 11}), lines.Offset({5, 16})), 2);
  EXPECT_EQ(m.FindBytes(lines.Offset({6, 13}), lines.Offset({7, 14})), 4);
  // A span reaching past a boundary falls back to the first one overlapping it.
  EXPECT_EQ(m.FindBytes(lines.Offset({5, 11}), lines.Offset({5, 22})), 2);
}

TEST_F(BoundariesTest, StatementGranularity) {
  BoundaryMap m =
      BoundaryMap::Compute(f(), BoundaryOptions().set_granularity(BoundaryGranularity::kStatement));
  ASSERT_EQ(m.size(), 8u);
  // total=0, for, if, total+=x, y=..., a=1, b=2, return
  EXPECT_EQ(m.FindPoint({8, 11}), 6);  // "b = 2"
  EXPECT_EQ(m.boundaries()[6].span.ToString(), "8:11-8:16");
  EXPECT_EQ(m.FindLine(8), 5);  // "a = 1", first on the line
  EXPECT_EQ(m.boundaries()[5].block, m.boundaries()[6].block);
  EXPECT_EQ(m.boundaries()[5].first_statement + 1, m.boundaries()[6].first_statement);
  BoundaryMap with_doc =
      BoundaryMap::Compute(f(), BoundaryOptions()
                                    .set_granularity(BoundaryGranularity::kStatement)
                                    .set_include_docstrings(true));
  EXPECT_EQ(with_doc.size(), 9u);
  EXPECT_EQ(with_doc.FindLine(2), 0);
}

TEST_F(BoundariesTest, DumpNamesBlocksAndSpans) {
  EXPECT_EQ(BoundaryMap::Compute(f()).Dump(),
            "b1 B1 3:4-3:13 (1 statement)\n"
            "b2 B2 4:4-4:16 (1 statement)\n"
            "b3 B3 5:8-5:17 (1 statement)\n"
            "b4 B4 5:18-5:28 (1 statement)\n"
            "b5 B5 6:8-7:15 (1 statement)\n"
            "b6 B6 8:4-9:16 (3 statements)\n");
}

TEST(ProgramBoundaries, ResolvesTracerEvents) {
  // Two lambdas on one line share (co_name, co_firstlineno); columns tell them apart.
  const char* src =
      "def f(xs):\n"
      "    return [x * 2 for x in xs]\n"
      "g = (lambda a: a + 1, lambda b: b - 1)\n";
  StatusOr<ProgramCfg> p = ProgramCfg::Build(src);
  ASSERT_TRUE(p.ok() && p->parsed());
  ProgramBoundaries pb = ProgramBoundaries::Compute(*p);
  ASSERT_EQ(pb.scope_count(), p->scopes().size());
  // "line" event in f at line 2.
  EXPECT_EQ(pb.Resolve("f", 1, 2), (BoundaryRef{p->FindScope("f", 1), 0}));
  // The listcomp's element "x * 2" (its element block comes last in clause order).
  std::optional<BoundaryRef> e = pb.Resolve("<listcomp>", 2, 2, 12);
  ASSERT_TRUE(e.has_value());
  const FunctionCfg& comp = p->scopes()[e->scope];
  EXPECT_EQ(comp.name, "<listcomp>");
  const Boundary& bd = pb.scope(e->scope).boundaries()[e->boundary];
  EXPECT_EQ(comp.block(bd.block).statements[bd.first_statement].kind,
            StmtKind::kComprehensionElement);
  // Second lambda, by column.
  std::optional<BoundaryRef> l2 = pb.Resolve("<lambda>", 3, 3, 32);
  ASSERT_TRUE(l2.has_value());
  EXPECT_EQ(p->scopes()[l2->scope].span.begin.column, 22);
  std::optional<BoundaryRef> l1 = pb.Resolve("<lambda>", 3, 3, 15);
  ASSERT_TRUE(l1.has_value());
  EXPECT_NE(l1->scope, l2->scope);
  EXPECT_FALSE(pb.Resolve("nope", 1, 2).has_value());
  EXPECT_FALSE(pb.Resolve("f", 1, 3).has_value());
}

}  // namespace
}  // namespace egca::cfg
