// Murphy: feedback-conditioned rollout trees with retrospective credit (Ekbote et al.).
//
// A tree holds every program generated for one task. The turn-1 group is the G responses to
// the original prompt. A response that fails (reward < max_reward) may be expanded: the
// policy is re-prompted with the task, that response and its executor feedback, and the
// responses to that feedback-conditioned prompt form the node's child group. Responses at
// max_reward are solved and terminal.
//
// Pipeline (all pure functions over a MurphyTree):
//   Prune (optional, after rewards are known)  ->  BackupRewards (MaRS or MeRS)
//   ->  NodeAdvantages (GRPO within every retained group, on the backed-up rewards)
// plus the GRPO-MT baseline (GrpoMtTrajectories) and text dumps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "egca/core/status.h"
#include "egca/credit/grpo.h"

namespace egca::credit {

// One generated program. Node ids are indices into MurphyTree::nodes.
struct MurphyNode {
  int id = 0;
  int parent = -1;         // -1: a response to the original prompt (turn 1)
  int turn = 1;            // 1-based; a child's turn is its parent's + 1
  std::string prompt;      // the prompt it was generated from (may be left empty)
  std::string completion;  // the generated text
  std::string feedback;    // executor feedback on it (failing tests, traceback, ...)
  double reward = 0.0;     // immediate reward r: fraction of tests passed, in [0, max_reward]
  std::optional<int64_t> token_count;  // completion tokens, when the trainer knows them
  std::vector<int> children;           // the child group generated from this node's feedback
  bool retained = true;                // false once pruning dropped it (or an ancestor)
};

struct MurphyTree {
  std::string task;  // the original prompt (informational)
  double max_reward = 1.0;
  std::vector<MurphyNode> nodes;
  std::vector<int> root_group;  // ids of the turn-1 responses

  // Appends a response: to the original prompt when parent = -1, else to the feedback-
  // conditioned prompt of node `parent`. Returns its id. Turn and group membership are
  // derived from `parent`. Precondition: parent is -1 or an existing id.
  int AddResponse(int parent, double reward, std::string completion = {}, std::string feedback = {},
                  std::string prompt = {}, std::optional<int64_t> token_count = std::nullopt);

  bool IsSolved(const MurphyNode& node) const;
  int num_turns() const;  // deepest turn (0 for an empty tree)
};

// Checks ids, parent/child links, turns, rewards finite and in [0, max_reward], solved
// nodes unexpanded, pruned nodes' descendants pruned. The error names the node.
Status ValidateTree(const MurphyTree& tree);

// ---- Pruning (applied after rewards are known, before backup) ---------------------------

enum class PruneStrategy {
  kNone,
  kIntraGroup,  // IntraP: in each group keep the `budget` children with the largest
                // (r_i - mean)^2, dropping the rest with their descendants
  kInterGroup,  // InterP: per turn, among the child groups of failed nodes, keep the
                // `budget` groups with the largest within-group reward variance
};

const char* PruneStrategyName(PruneStrategy strategy);

struct PruneOptions {
  PruneStrategy strategy = PruneStrategy::kNone;
  int budget = 0;  // b: children per group (IntraP) or groups per turn (InterP); >= 0
  // IntraP also prunes the turn-1 group (the paper prunes every response group).
  bool intra_include_root_group = true;
  // IntraP prunes only groups whose members are at turn <= intra_last_turn (0 = every
  // turn). Murphy's reported 72 -> 36 (8 turn-1 responses, 8 refinements of each) is
  // b = 4 with intra_last_turn = 1: 4 + 4 x 8.
  int intra_last_turn = 0;
};

// Ties break deterministically: higher score first, then lower position in the group
// (IntraP) or lower parent id (InterP). Groups are visited top-down, so a group inside a
// dropped subtree is never scored. Returns a copy with `retained` updated; nothing is erased.
// Precondition (for this and every function below): ValidateTree(tree).ok().
MurphyTree Prune(const MurphyTree& tree, const PruneOptions& options);

// Generated vs retained sizes.
struct TreeSizes {
  std::vector<int> generated_per_turn;  // [num_turns], index 0 = turn 1
  std::vector<int> retained_per_turn;
  int generated = 0;
  int retained = 0;
  int groups_generated = 0;      // root group + every expanded node's child group
  int groups_retained = 0;       // groups with at least one retained member under a retained parent
  std::string ToString() const;  // "turn 1: 8 -> 4\n..." plus totals
};

TreeSizes ComputeTreeSizes(const MurphyTree& tree);

// ---- Retrospective credit -------------------------------------------------------------

enum class BackupStrategy {
  kNone,  // R~ = r (single-turn GRPO on every group)
  kMaRS,  // R~_v = max(r_v, max_c R~_c)
  kMeRS,  // R~_v = (r_v + gamma * mean_c R~_c) / 2 for unsolved nodes with children
};

const char* BackupStrategyName(BackupStrategy strategy);

struct BackupOptions {
  BackupStrategy strategy = BackupStrategy::kMaRS;
  double gamma = 1.0;  // MeRS discount
};

// Credit-adjusted rewards R~ indexed by node id, over the retained tree only (pruned children
// do not take part; a node whose children were all pruned is a leaf and keeps r).
// Pruned nodes get NaN.
std::vector<double> BackupRewards(const MurphyTree& tree, const BackupOptions& options);

// One response group of the retained tree: the turn-1 group or a node's child group.
struct MurphyGroup {
  int parent = -1;  // -1: the original prompt
  int turn = 1;
  std::vector<int> members;  // retained members, in generation order
  GroupStats stats;          // of the rewards the advantages were computed from
};

struct NodeAdvantages {
  std::vector<double> advantage;    // by node id; NaN for pruned nodes
  std::vector<MurphyGroup> groups;  // every retained group, top-down, parents in id order
};

// Node-wise GRPO (Murphy eq. 5): advantages normalized within each retained group using
// `credited` (from BackupRewards; pass each node's r for plain per-group GRPO), which must
// have one entry per node. The Murphy loss sums the GRPO loss of every group listed.
NodeAdvantages ComputeNodeAdvantages(const MurphyTree& tree, const std::vector<double>& credited,
                                     const GroupAdvantageOptions& options = {});

// ---- GRPO-MT baseline ----------------------------------------------------------------

// A root-to-terminal path of the retained tree; each generation on it is trained with the
// trajectory's advantage (an internal node lies on several trajectories).
struct MtTrajectory {
  std::vector<int> path;  // node ids, turn 1 first, terminal last
  double final_reward = 0.0;
  double advantage = 0.0;
};

// Every terminated trajectory gets its terminal node's reward, normalized across all
// terminated trajectories of the prompt. Order: depth-first, children in generation order.
std::vector<MtTrajectory> GrpoMtTrajectories(const MurphyTree& tree,
                                             const GroupAdvantageOptions& options = {});

// ---- Dumps -----------------------------------------------------------------------------

struct MurphyDumpOptions {
  const std::vector<double>* credited = nullptr;  // Borrowed; adds "R~=" columns
  const NodeAdvantages* advantages = nullptr;     // Borrowed; adds "A=" columns
  bool show_pruned = true;                        // list dropped nodes, marked
  int feedback_chars = 40;                        // feedback excerpt length (0 = none)
};

// Deterministic indented dump: one line per node under its group, numbers with 4 decimals.
std::string DumpMurphyTree(const MurphyTree& tree, const MurphyDumpOptions& options = {});

}  // namespace egca::credit
