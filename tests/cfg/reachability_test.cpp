// Boost.Graph analyses on the CFG: reachability and dominators.
#include "egca/cfg/reachability.h"

#include <gtest/gtest.h>

#include "egca/cfg/cfg.h"

namespace egca::cfg {
namespace {

BlockId BlockOnLine(const FunctionCfg& f, int line) {
  for (BlockId b = 0; b < f.block_count(); ++b) {
    const auto& s = f.block(b).statements;
    if (!s.empty() && s.front().span.begin.line == line) return b;
  }
  ADD_FAILURE() << "no block on line " << line;
  return 0;
}

TEST(Reachability, DeadCodeAfterReturnAndExceptionOnlyHandlers) {
  StatusOr<ProgramCfg> p = ProgramCfg::Build(
      "def f(x):\n"         // 1
      "    try:\n"          // 2
      "        y = g(x)\n"  // 3
      "    except E:\n"     // 4
      "        y = 0\n"     // 5
      "    return y\n"      // 6
      "    y += 1\n");      // 7
  ASSERT_TRUE(p.ok() && p->parsed());
  const FunctionCfg& f = p->scopes()[1];
  std::vector<bool> all = ReachableBlocks(f);
  EXPECT_TRUE(all[BlockOnLine(f, 5)]);
  EXPECT_FALSE(all[BlockOnLine(f, 7)]);  // after return
  EXPECT_TRUE(all[f.exit]);
  std::vector<bool> normal =
      ReachableBlocks(f, ReachabilityOptions().set_follow_exception_edges(false));
  EXPECT_FALSE(normal[BlockOnLine(f, 4)]);  // handlers only through an exception
  EXPECT_FALSE(normal[BlockOnLine(f, 5)]);
  EXPECT_TRUE(normal[BlockOnLine(f, 6)]);
}

TEST(Reachability, Dominators) {
  StatusOr<ProgramCfg> p = ProgramCfg::Build(
      "def f(xs):\n"          // 1
      "    n = 0\n"           // 2
      "    for x in xs:\n"    // 3
      "        if x:\n"       // 4
      "            n += 1\n"  // 5
      "        else:\n"
      "            n -= 1\n"  // 7
      "    return n\n");      // 8
  ASSERT_TRUE(p.ok() && p->parsed());
  const FunctionCfg& f = p->scopes()[1];
  std::vector<int32_t> idom = ImmediateDominators(f);
  BlockId head = BlockOnLine(f, 3), cond = BlockOnLine(f, 4), then_b = BlockOnLine(f, 5),
          else_b = BlockOnLine(f, 7), ret = BlockOnLine(f, 8);
  EXPECT_EQ(idom[f.entry], -1);
  EXPECT_EQ(idom[then_b], static_cast<int32_t>(cond));
  EXPECT_EQ(idom[else_b], static_cast<int32_t>(cond));
  EXPECT_EQ(idom[ret], static_cast<int32_t>(head));  // both branches loop back to the header
  EXPECT_TRUE(Dominates(idom, head, then_b));
  EXPECT_FALSE(Dominates(idom, then_b, ret));
  EXPECT_TRUE(Dominates(idom, ret, ret));
}

}  // namespace
}  // namespace egca::cfg
