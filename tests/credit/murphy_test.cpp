#include "egca/credit/murphy.h"

#include <cmath>

#include <gtest/gtest.h>

namespace egca::credit {
namespace {

// Two turns, G = 4 per group:
//   turn 1: n0 r=0.5, n1 r=1 (solved), n2 r=0, n3 r=0.25
//   children of n0: n4..n7  r = 1, 0.5, 0, 0
//   children of n2: n8..n11 r = 0, 0, 0.25, 0
//   children of n3: n12..n15 r = 0.5 x 4
MurphyTree HandTree() {
  MurphyTree t;
  t.task = "write f";
  for (double r : {0.5, 1.0, 0.0, 0.25}) t.AddResponse(-1, r, "turn-1 code", r < 1 ? "failed" : "");
  for (double r : {1.0, 0.5, 0.0, 0.0}) t.AddResponse(0, r);
  for (double r : {0.0, 0.0, 0.25, 0.0}) t.AddResponse(2, r);
  for (int k = 0; k < 4; ++k) t.AddResponse(3, 0.5);
  return t;
}

TEST(MurphyTree, BuilderDerivesTurnsAndGroups) {
  const MurphyTree t = HandTree();
  EXPECT_TRUE(ValidateTree(t).ok());
  EXPECT_EQ(t.num_turns(), 2);
  EXPECT_EQ(t.root_group, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(t.nodes[2].children, (std::vector<int>{8, 9, 10, 11}));
  EXPECT_EQ(t.nodes[9].turn, 2);
  EXPECT_EQ(t.nodes[9].parent, 2);
  const TreeSizes s = ComputeTreeSizes(t);
  EXPECT_EQ(s.generated_per_turn, (std::vector<int>{4, 12}));
  EXPECT_EQ(s.groups_generated, 4);  // prompt + 3 expanded failures
}

TEST(MurphyTree, ValidateRejectsInconsistentTrees) {
  MurphyTree t = HandTree();
  t.nodes[1].children.push_back(4);  // solved node expanded (and n4 listed twice)
  EXPECT_FALSE(ValidateTree(t).ok());

  t = HandTree();
  t.nodes[5].reward = 1.5;
  Status s = ValidateTree(t);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("node 5"), std::string::npos);

  t = HandTree();
  t.nodes[6].turn = 3;
  EXPECT_FALSE(ValidateTree(t).ok());

  t = HandTree();
  t.nodes[1].children = {};
  t.AddResponse(1, 0.0);  // refinement of a solved node
  EXPECT_FALSE(ValidateTree(t).ok());

  t = HandTree();
  t.nodes[0].retained = false;  // pruned parent with retained children
  EXPECT_FALSE(ValidateTree(t).ok());
}

TEST(Murphy, MaRSBacksUpBestDescendant) {
  const std::vector<double> r = BackupRewards(HandTree(), {BackupStrategy::kMaRS, 1.0});
  EXPECT_DOUBLE_EQ(r[0], 1.0);   // max(0.5, max(1, .5, 0, 0))
  EXPECT_DOUBLE_EQ(r[1], 1.0);   // solved leaf keeps r
  EXPECT_DOUBLE_EQ(r[2], 0.25);  // max(0, max(0, 0, .25, 0))
  EXPECT_DOUBLE_EQ(r[3], 0.5);   // max(0.25, 0.5)
  for (int id = 4; id < 16; ++id) EXPECT_DOUBLE_EQ(r[id], HandTree().nodes[id].reward);
}

TEST(Murphy, MeRSAveragesDiscountedChildren) {
  const std::vector<double> r = BackupRewards(HandTree(), {BackupStrategy::kMeRS, 0.5});
  EXPECT_DOUBLE_EQ(r[0], 0.34375);   // (0.5 + 0.5 * mean(1, .5, 0, 0) = 0.5 * 0.375) / 2
  EXPECT_DOUBLE_EQ(r[1], 1.0);       // solved: N = 1, keeps r
  EXPECT_DOUBLE_EQ(r[2], 0.015625);  // (0 + 0.5 * 0.0625) / 2
  EXPECT_DOUBLE_EQ(r[3], 0.25);      // (0.25 + 0.5 * 0.5) / 2
  EXPECT_DOUBLE_EQ(r[4], 1.0);       // leaf
  // gamma = 1 on the same tree: n0 = (0.5 + 0.375) / 2 = 0.4375
  EXPECT_DOUBLE_EQ(BackupRewards(HandTree(), {BackupStrategy::kMeRS, 1.0})[0], 0.4375);
}

TEST(Murphy, ThreeTurnBackupRecurses) {
  // n0 (r .25) -> n1 (r .5) -> n2 (r 1), n3 (r 0);  n0 -> n4 (r 0), a leaf.
  MurphyTree t;
  t.AddResponse(-1, 0.25);  // n0
  t.AddResponse(0, 0.5);    // n1
  t.AddResponse(1, 1.0);    // n2 (turn 3)
  t.AddResponse(1, 0.0);    // n3 (turn 3)
  t.AddResponse(0, 0.0);    // n4
  ASSERT_TRUE(ValidateTree(t).ok());
  EXPECT_EQ(t.num_turns(), 3);
  // MaRS: n1 = max(.5, 1, 0) = 1; n0 = max(.25, n1 = 1, n4 = 0) = 1.
  const std::vector<double> mars = BackupRewards(t, {BackupStrategy::kMaRS, 1.0});
  EXPECT_DOUBLE_EQ(mars[1], 1.0);
  EXPECT_DOUBLE_EQ(mars[0], 1.0);
  // MeRS, gamma .5: n1 = (.5 + .5 * mean(1, 0)) / 2 = (.5 + .25) / 2 = .375;
  // n0 = (.25 + .5 * mean(.375, 0)) / 2 = (.25 + .09375) / 2 = .171875.
  const std::vector<double> mers = BackupRewards(t, {BackupStrategy::kMeRS, 0.5});
  EXPECT_DOUBLE_EQ(mers[1], 0.375);
  EXPECT_DOUBLE_EQ(mers[0], 0.171875);
  // GRPO-MT: paths n0>n1>n2, n0>n1>n3, n0>n4 with final rewards 1, 0, 0.
  const std::vector<MtTrajectory> tr = GrpoMtTrajectories(t);
  ASSERT_EQ(tr.size(), 3u);
  EXPECT_EQ(tr[0].path, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(tr[2].path, (std::vector<int>{0, 4}));
}

TEST(Murphy, NodeWiseGrpoUsesCreditedRewardsPerGroup) {
  const MurphyTree t = HandTree();
  const std::vector<double> r = BackupRewards(t, {BackupStrategy::kMaRS, 1.0});
  const NodeAdvantages a = ComputeNodeAdvantages(t, r, {AdvantageNormalization::kMeanStd, 0.0});
  ASSERT_EQ(a.groups.size(), 4u);
  // Turn-1 group on R~ = 1, 1, .25, .5: mean 2.75/4 = 0.6875; squared deviations
  // .09765625 + .09765625 + .19140625 + .03515625 = .421875; var = .10546875;
  // std = 0.3247595264; A = dev / std.
  EXPECT_NEAR(a.groups[0].stats.mean, 0.6875, 1e-15);
  EXPECT_NEAR(a.advantage[0], 0.3125 / std::sqrt(0.10546875), 1e-12);  // 0.96225
  EXPECT_NEAR(a.advantage[1], 0.3125 / std::sqrt(0.10546875), 1e-12);
  EXPECT_NEAR(a.advantage[2], -0.4375 / std::sqrt(0.10546875), 1e-12);  // -1.34715
  EXPECT_NEAR(a.advantage[3], -0.1875 / std::sqrt(0.10546875), 1e-12);  // -0.57735
  // Group of n0 (leaves, R~ = r = 1, .5, 0, 0): mean .375, var .6875/4 = .171875.
  EXPECT_EQ(a.groups[1].parent, 0);
  EXPECT_NEAR(a.advantage[4], 0.625 / std::sqrt(0.171875), 1e-12);   // 1.50756
  EXPECT_NEAR(a.advantage[7], -0.375 / std::sqrt(0.171875), 1e-12);  // -0.90453
  // Group of n3: all 0.5 -> zeros, no NaN.
  for (int id = 12; id < 16; ++id) EXPECT_EQ(a.advantage[id], 0.0);
}

TEST(Murphy, IntraPKeepsLargestVarianceContributions) {
  const MurphyTree t = Prune(HandTree(), {PruneStrategy::kIntraGroup, 2, true});
  ASSERT_TRUE(ValidateTree(t).ok());
  // Turn-1 r = .5, 1, 0, .25, mean .4375: (r - mean)^2 = .0039, .3164, .1914, .0352
  // -> keep n1 and n2; n0, n3 go with their children.
  EXPECT_FALSE(t.nodes[0].retained);
  EXPECT_TRUE(t.nodes[1].retained);
  EXPECT_TRUE(t.nodes[2].retained);
  EXPECT_FALSE(t.nodes[3].retained);
  for (int id : {4, 5, 6, 7, 12, 13, 14, 15}) EXPECT_FALSE(t.nodes[id].retained) << id;
  // Group of n2: r = 0, 0, .25, 0, mean .0625: scores .0039 x3 and .0352 for n10;
  // keep n10, then the tie among n8, n9, n11 goes to the first generated, n8.
  EXPECT_TRUE(t.nodes[8].retained);
  EXPECT_FALSE(t.nodes[9].retained);
  EXPECT_TRUE(t.nodes[10].retained);
  EXPECT_FALSE(t.nodes[11].retained);
  const TreeSizes s = ComputeTreeSizes(t);
  EXPECT_EQ(s.retained_per_turn, (std::vector<int>{2, 2}));
  EXPECT_EQ(s.retained, 4);
  EXPECT_EQ(s.groups_retained, 2);
}

TEST(Murphy, IntraPCanLeaveTheRootGroupAlone) {
  const MurphyTree t = Prune(HandTree(), {PruneStrategy::kIntraGroup, 1, false});
  const TreeSizes s = ComputeTreeSizes(t);
  EXPECT_EQ(s.retained_per_turn, (std::vector<int>{4, 3}));  // one child per expanded group
  EXPECT_TRUE(t.nodes[4].retained);   // n0's group: r=1 is farthest from mean .375
  EXPECT_TRUE(t.nodes[10].retained);  // n2's group: r=.25
  EXPECT_TRUE(t.nodes[12].retained);  // n3's group: all tie -> first
}

TEST(Murphy, InterPKeepsHighestVarianceGroups) {
  // Child-group variances: n0 .171875, n2 (.046875 / 4) = .01171875, n3 0 -> keep n0's.
  const MurphyTree t = Prune(HandTree(), {PruneStrategy::kInterGroup, 1, true});
  ASSERT_TRUE(ValidateTree(t).ok());
  for (int id = 0; id < 8; ++id) EXPECT_TRUE(t.nodes[id].retained) << id;
  for (int id = 8; id < 16; ++id) EXPECT_FALSE(t.nodes[id].retained) << id;
  const TreeSizes s = ComputeTreeSizes(t);
  EXPECT_EQ(s.retained, 8);
  EXPECT_EQ(s.groups_retained, 2);
  // Backup then sees n2 and n3 as leaves: MaRS keeps their own r.
  const std::vector<double> r = BackupRewards(t, {BackupStrategy::kMaRS, 1.0});
  EXPECT_DOUBLE_EQ(r[2], 0.0);
  EXPECT_DOUBLE_EQ(r[3], 0.25);
  EXPECT_TRUE(std::isnan(r[9]));
  // InterP b = 2: n2 (.0117) beats n3 (0).
  const MurphyTree t2 = Prune(HandTree(), {PruneStrategy::kInterGroup, 2, true});
  EXPECT_TRUE(t2.nodes[8].retained);
  EXPECT_FALSE(t2.nodes[12].retained);
}

TEST(Murphy, BudgetsLargerThanTheTreeKeepEverything) {
  for (PruneStrategy s : {PruneStrategy::kIntraGroup, PruneStrategy::kInterGroup}) {
    const MurphyTree t = Prune(HandTree(), {s, 100, true});
    EXPECT_EQ(ComputeTreeSizes(t).retained, 16) << PruneStrategyName(s);
  }
  // Budget 0 drops everything it governs.
  EXPECT_EQ(ComputeTreeSizes(Prune(HandTree(), {PruneStrategy::kIntraGroup, 0, true})).retained, 0);
  EXPECT_EQ(ComputeTreeSizes(Prune(HandTree(), {PruneStrategy::kInterGroup, 0, true})).retained, 4);
}

TEST(Murphy, PaperRetainedCounts) {
  // Murphy's setting: 8 turn-1 responses, all failing, 8 refinements each = 72 nodes.
  MurphyTree t;
  for (int i = 0; i < 8; ++i) t.AddResponse(-1, 0.125 * (i % 4));
  for (int p = 0; p < 8; ++p) {
    for (int k = 0; k < 8; ++k) t.AddResponse(p, 0.25 * ((p + k) % 5));
  }
  ASSERT_EQ(ComputeTreeSizes(t).generated, 72);
  // InterP, b = 4 groups: 8 + 4 x 8 = 40.
  EXPECT_EQ(ComputeTreeSizes(Prune(t, {PruneStrategy::kInterGroup, 4, true})).retained, 40);
  // IntraP, b = 4 on the turn-1 group only: 4 + 4 x 8 = 36.
  PruneOptions intra{PruneStrategy::kIntraGroup, 4, true};
  intra.intra_last_turn = 1;
  EXPECT_EQ(ComputeTreeSizes(Prune(t, intra)).retained, 36);
  // IntraP, b = 4 on every group: 4 + 4 x 4 = 20.
  EXPECT_EQ(ComputeTreeSizes(Prune(t, {PruneStrategy::kIntraGroup, 4, true})).retained, 20);
}

TEST(Murphy, EveryNodeFailingGivesZeroCreditWithoutNaN) {
  MurphyTree t;
  for (int i = 0; i < 4; ++i) t.AddResponse(-1, 0.0);
  for (int p = 0; p < 4; ++p) {
    for (int k = 0; k < 4; ++k) t.AddResponse(p, 0.0);
  }
  ASSERT_TRUE(ValidateTree(t).ok());
  for (BackupStrategy b : {BackupStrategy::kMaRS, BackupStrategy::kMeRS}) {
    const std::vector<double> r = BackupRewards(t, {b, 0.9});
    for (double x : r) EXPECT_EQ(x, 0.0);
    const NodeAdvantages a = ComputeNodeAdvantages(t, r);
    EXPECT_EQ(a.groups.size(), 5u);
    for (double x : a.advantage) EXPECT_EQ(x, 0.0);
  }
  for (const MtTrajectory& tr : GrpoMtTrajectories(t)) EXPECT_EQ(tr.advantage, 0.0);
  // InterP on all-zero-variance groups still keeps exactly b, the lowest parent ids.
  const MurphyTree p = Prune(t, {PruneStrategy::kInterGroup, 2, true});
  EXPECT_TRUE(p.nodes[4].retained);    // child of n0
  EXPECT_TRUE(p.nodes[8].retained);    // child of n1
  EXPECT_FALSE(p.nodes[12].retained);  // child of n2
}

TEST(Murphy, SingleResponseGroups) {
  // G = 1 at both turns: every advantage is 0, never NaN.
  MurphyTree t;
  t.AddResponse(-1, 0.5);
  t.AddResponse(0, 1.0);
  const std::vector<double> r = BackupRewards(t, {BackupStrategy::kMaRS, 1.0});
  EXPECT_DOUBLE_EQ(r[0], 1.0);
  const NodeAdvantages a = ComputeNodeAdvantages(t, r);
  EXPECT_EQ(a.advantage[0], 0.0);
  EXPECT_EQ(a.advantage[1], 0.0);
}

TEST(Murphy, GrpoMtBroadcastsTerminalRewardsAlongPaths) {
  const std::vector<MtTrajectory> tr =
      GrpoMtTrajectories(HandTree(), {AdvantageNormalization::kMeanCentered, 0.0});
  // Terminals: n4..n7 under n0, n1, n8..n11 under n2, n12..n15 under n3 = 13 trajectories,
  // final rewards 1 .5 0 0 | 1 | 0 0 .25 0 | .5 .5 .5 .5, sum 4.75, mean 4.75/13 = 0.365385.
  ASSERT_EQ(tr.size(), 13u);
  EXPECT_EQ(tr[0].path, (std::vector<int>{0, 4}));
  EXPECT_EQ(tr[4].path, (std::vector<int>{1}));
  EXPECT_EQ(tr[7].path, (std::vector<int>{2, 10}));
  EXPECT_NEAR(tr[0].advantage, 1.0 - 4.75 / 13.0, 1e-12);   // 0.634615
  EXPECT_NEAR(tr[7].advantage, 0.25 - 4.75 / 13.0, 1e-12);  // -0.115385
  EXPECT_DOUBLE_EQ(tr[7].final_reward, 0.25);
}

}  // namespace
}  // namespace egca::credit
