#include "egca/credit/murphy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <string>

namespace egca::credit {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string NodeName(int id) { return "node " + std::to_string(id); }

void DropSubtree(MurphyTree* tree, int id) {
  std::vector<int> stack = {id};
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    tree->nodes[v].retained = false;
    for (int c : tree->nodes[v].children) stack.push_back(c);
  }
}

std::vector<int> RetainedMembers(const MurphyTree& tree, const std::vector<int>& group) {
  std::vector<int> out;
  for (int id : group) {
    if (tree.nodes[id].retained) out.push_back(id);
  }
  return out;
}

std::vector<double> RewardsOf(const MurphyTree& tree, const std::vector<int>& ids) {
  std::vector<double> out;
  out.reserve(ids.size());
  for (int id : ids) out.push_back(tree.nodes[id].reward);
  return out;
}

// IntraP on one group: keeps the `budget` members with the largest (r_i - mean)^2.
void PruneGroupIntra(MurphyTree* tree, const std::vector<int>& group, int budget) {
  const std::vector<int> members = RetainedMembers(*tree, group);
  if (static_cast<int>(members.size()) <= budget) return;
  const GroupStats stats = ComputeGroupStats(RewardsOf(*tree, members));
  std::vector<size_t> order(members.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<double> score(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    const double d = tree->nodes[members[i]].reward - stats.mean;
    score[i] = d * d;
  }
  // stable_sort keeps generation order among equal scores: the deterministic tie-break.
  std::stable_sort(order.begin(), order.end(),
                   [&score](size_t a, size_t b) { return score[a] > score[b]; });
  for (size_t k = static_cast<size_t>(budget); k < order.size(); ++k) {
    DropSubtree(tree, members[order[k]]);
  }
}

// Ids of retained nodes of `turn` in id order.
std::vector<int> RetainedAtTurn(const MurphyTree& tree, int turn) {
  std::vector<int> out;
  for (const MurphyNode& n : tree.nodes) {
    if (n.turn == turn && n.retained) out.push_back(n.id);
  }
  return out;
}

std::string Excerpt(const std::string& text, int max_chars) {
  size_t cut = std::min(text.size(), static_cast<size_t>(std::max(max_chars, 0)));
  // Never split a UTF-8 sequence: back off to a lead byte.
  while (cut > 0 && cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  std::string out;
  for (size_t i = 0; i < cut; ++i) {
    const char c = text[i];
    if (c == '\n') {
      out += "\\n";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  if (cut < text.size()) out += "...";
  return out;
}

}  // namespace

int MurphyTree::AddResponse(int parent, double reward, std::string completion, std::string feedback,
                            std::string prompt, std::optional<int64_t> token_count) {
  MurphyNode node;
  node.id = static_cast<int>(nodes.size());
  node.parent = parent;
  node.reward = reward;
  node.completion = std::move(completion);
  node.feedback = std::move(feedback);
  node.prompt = std::move(prompt);
  node.token_count = token_count;
  if (parent < 0) {
    node.parent = -1;
    node.turn = 1;
    root_group.push_back(node.id);
  } else {
    node.turn = nodes[parent].turn + 1;
    nodes[parent].children.push_back(node.id);
  }
  nodes.push_back(std::move(node));
  return nodes.back().id;
}

bool MurphyTree::IsSolved(const MurphyNode& node) const { return node.reward >= max_reward; }

int MurphyTree::num_turns() const {
  int turns = 0;
  for (const MurphyNode& n : nodes) turns = std::max(turns, n.turn);
  return turns;
}

Status ValidateTree(const MurphyTree& tree) {
  const int n = static_cast<int>(tree.nodes.size());
  if (!std::isfinite(tree.max_reward) || tree.max_reward <= 0.0) {
    return InvalidArgument("murphy tree: max_reward must be finite and > 0");
  }
  std::vector<int> owner(n, -2);  // group that lists the node: -1 root, else parent id
  for (int id : tree.root_group) {
    if (id < 0 || id >= n)
      return InvalidArgument("murphy tree: root group lists unknown id " + std::to_string(id));
    if (owner[id] != -2)
      return InvalidArgument("murphy tree: " + NodeName(id) + " is listed twice");
    owner[id] = -1;
  }
  for (const MurphyNode& node : tree.nodes) {
    for (int c : node.children) {
      if (c < 0 || c >= n) {
        return InvalidArgument("murphy tree: " + NodeName(node.id) + " has unknown child " +
                               std::to_string(c));
      }
      if (owner[c] != -2)
        return InvalidArgument("murphy tree: " + NodeName(c) + " is listed twice");
      owner[c] = node.id;
    }
  }
  for (int i = 0; i < n; ++i) {
    const MurphyNode& node = tree.nodes[i];
    const std::string name = NodeName(i);
    if (node.id != i)
      return InvalidArgument("murphy tree: " + name + " has id " + std::to_string(node.id));
    if (owner[i] != node.parent) {
      return InvalidArgument("murphy tree: " + name + " has parent " + std::to_string(node.parent) +
                             " but is listed in the group of " + std::to_string(owner[i]));
    }
    const int expected_turn = node.parent < 0 ? 1 : tree.nodes[node.parent].turn + 1;
    if (node.turn != expected_turn) {
      return InvalidArgument("murphy tree: " + name + " is at turn " + std::to_string(node.turn) +
                             ", expected " + std::to_string(expected_turn));
    }
    if (!std::isfinite(node.reward) || node.reward < 0.0 || node.reward > tree.max_reward) {
      return InvalidArgument("murphy tree: " + name + " has reward " + std::to_string(node.reward) +
                             " outside [0, max_reward]");
    }
    if (tree.IsSolved(node) && !node.children.empty()) {
      return InvalidArgument("murphy tree: " + name + " is solved but was expanded");
    }
    if (!node.retained) {
      for (int c : node.children) {
        if (tree.nodes[c].retained) {
          return InvalidArgument("murphy tree: " + name + " is pruned but its child " +
                                 std::to_string(c) + " is retained");
        }
      }
    }
  }
  return Status::Ok();
}

const char* PruneStrategyName(PruneStrategy strategy) {
  switch (strategy) {
    case PruneStrategy::kNone:
      return "none";
    case PruneStrategy::kIntraGroup:
      return "intra";
    case PruneStrategy::kInterGroup:
      return "inter";
  }
  return "?";
}

MurphyTree Prune(const MurphyTree& input, const PruneOptions& options) {
  MurphyTree tree = input;
  const int budget = std::max(options.budget, 0);
  switch (options.strategy) {
    case PruneStrategy::kNone:
      break;
    case PruneStrategy::kIntraGroup: {
      const int last = options.intra_last_turn > 0 ? options.intra_last_turn : tree.num_turns();
      if (options.intra_include_root_group) PruneGroupIntra(&tree, tree.root_group, budget);
      // Turn by turn, so a group under a node dropped at an earlier turn is never scored.
      // Children of turn-t nodes are at turn t + 1.
      for (int turn = 1; turn < tree.num_turns() && turn + 1 <= last; ++turn) {
        for (int id : RetainedAtTurn(tree, turn)) {
          PruneGroupIntra(&tree, tree.nodes[id].children, budget);
        }
      }
      break;
    }
    case PruneStrategy::kInterGroup: {
      for (int turn = 1; turn < tree.num_turns(); ++turn) {
        std::vector<int> parents;  // failed retained nodes at `turn` with a retained child group
        std::vector<double> variance;
        for (int id : RetainedAtTurn(tree, turn)) {
          const MurphyNode& node = tree.nodes[id];
          if (tree.IsSolved(node)) continue;
          const std::vector<int> members = RetainedMembers(tree, node.children);
          if (members.empty()) continue;
          const GroupStats stats = ComputeGroupStats(RewardsOf(tree, members));
          parents.push_back(id);
          variance.push_back(stats.std * stats.std);
        }
        if (static_cast<int>(parents.size()) <= budget) continue;
        std::vector<size_t> order(parents.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&variance](size_t a, size_t b) { return variance[a] > variance[b]; });
        for (size_t k = static_cast<size_t>(budget); k < order.size(); ++k) {
          for (int c : tree.nodes[parents[order[k]]].children) DropSubtree(&tree, c);
        }
      }
      break;
    }
  }
  return tree;
}

std::string TreeSizes::ToString() const {
  std::string out;
  for (size_t t = 0; t < generated_per_turn.size(); ++t) {
    out += "turn " + std::to_string(t + 1) + ": generated " +
           std::to_string(generated_per_turn[t]) + ", retained " +
           std::to_string(retained_per_turn[t]) + "\n";
  }
  out += "total: generated " + std::to_string(generated) + ", retained " +
         std::to_string(retained) + "\n";
  out += "groups: generated " + std::to_string(groups_generated) + ", retained " +
         std::to_string(groups_retained) + "\n";
  return out;
}

TreeSizes ComputeTreeSizes(const MurphyTree& tree) {
  TreeSizes sizes;
  const int turns = tree.num_turns();
  sizes.generated_per_turn.assign(turns, 0);
  sizes.retained_per_turn.assign(turns, 0);
  for (const MurphyNode& n : tree.nodes) {
    ++sizes.generated_per_turn[n.turn - 1];
    ++sizes.generated;
    if (n.retained) {
      ++sizes.retained_per_turn[n.turn - 1];
      ++sizes.retained;
    }
  }
  if (!tree.root_group.empty()) {
    ++sizes.groups_generated;
    if (!RetainedMembers(tree, tree.root_group).empty()) ++sizes.groups_retained;
  }
  for (const MurphyNode& n : tree.nodes) {
    if (n.children.empty()) continue;
    ++sizes.groups_generated;
    if (n.retained && !RetainedMembers(tree, n.children).empty()) ++sizes.groups_retained;
  }
  return sizes;
}

const char* BackupStrategyName(BackupStrategy strategy) {
  switch (strategy) {
    case BackupStrategy::kNone:
      return "none";
    case BackupStrategy::kMaRS:
      return "MaRS";
    case BackupStrategy::kMeRS:
      return "MeRS";
  }
  return "?";
}

std::vector<double> BackupRewards(const MurphyTree& tree, const BackupOptions& options) {
  std::vector<double> credited(tree.nodes.size(), kNaN);
  // Children are one turn deeper than their parent: deepest turn first is a post-order.
  std::vector<int> order;
  for (const MurphyNode& n : tree.nodes) {
    if (n.retained) order.push_back(n.id);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&tree](int a, int b) { return tree.nodes[a].turn > tree.nodes[b].turn; });
  for (int id : order) {
    const MurphyNode& node = tree.nodes[id];
    double best = -std::numeric_limits<double>::infinity();
    double sum = 0.0;
    int count = 0;
    for (int c : node.children) {
      if (!tree.nodes[c].retained) continue;
      best = std::max(best, credited[c]);
      sum += credited[c];
      ++count;
    }
    double value = node.reward;
    if (count > 0) {
      switch (options.strategy) {
        case BackupStrategy::kNone:
          break;
        case BackupStrategy::kMaRS:
          value = std::max(node.reward, best);
          break;
        case BackupStrategy::kMeRS:
          // N_v = 2 reward components: the node's own and its children's discounted mean.
          // Solved nodes are never expanded (ValidateTree), so they keep r with N_v = 1.
          if (!tree.IsSolved(node)) value = (node.reward + options.gamma * (sum / count)) / 2.0;
          break;
      }
    }
    credited[id] = value;
  }
  return credited;
}

NodeAdvantages ComputeNodeAdvantages(const MurphyTree& tree, const std::vector<double>& credited,
                                     const GroupAdvantageOptions& options) {
  NodeAdvantages out;
  out.advantage.assign(tree.nodes.size(), kNaN);
  auto add_group = [&](int parent, int turn, const std::vector<int>& group) {
    MurphyGroup g;
    g.parent = parent;
    g.turn = turn;
    g.members = RetainedMembers(tree, group);
    if (g.members.empty()) return;
    std::vector<double> values;
    values.reserve(g.members.size());
    for (int id : g.members) values.push_back(credited[id]);
    g.stats = ComputeGroupStats(values);
    const std::vector<double> adv = GroupAdvantages(values, options);
    for (size_t k = 0; k < g.members.size(); ++k) out.advantage[g.members[k]] = adv[k];
    out.groups.push_back(std::move(g));
  };
  add_group(-1, 1, tree.root_group);
  for (int turn = 1; turn < tree.num_turns(); ++turn) {
    for (int id : RetainedAtTurn(tree, turn)) add_group(id, turn + 1, tree.nodes[id].children);
  }
  return out;
}

std::vector<MtTrajectory> GrpoMtTrajectories(const MurphyTree& tree,
                                             const GroupAdvantageOptions& options) {
  std::vector<MtTrajectory> out;
  // Depth-first over retained nodes with an explicit stack (a tree built through the Python
  // API can be one long chain): path[k] is the node at depth k, next[k] the index of its
  // next child to visit.
  std::vector<int> path;
  std::vector<size_t> next;
  for (int root : tree.root_group) {
    if (!tree.nodes[root].retained) continue;
    path.assign(1, root);
    next.assign(1, 0);
    bool leaf = true;  // the node on top of the stack has no retained child visited yet
    while (!path.empty()) {
      const MurphyNode& n = tree.nodes[path.back()];
      size_t& k = next.back();
      while (k < n.children.size() && !tree.nodes[n.children[k]].retained) ++k;
      if (k < n.children.size()) {
        const int child = n.children[k++];
        path.push_back(child);
        next.push_back(0);
        leaf = true;
        continue;
      }
      if (leaf) {
        MtTrajectory t;
        t.path = path;
        t.final_reward = n.reward;
        out.push_back(std::move(t));
      }
      path.pop_back();
      next.pop_back();
      leaf = false;
    }
  }
  std::vector<double> rewards;
  rewards.reserve(out.size());
  for (const MtTrajectory& t : out) rewards.push_back(t.final_reward);
  const std::vector<double> adv = GroupAdvantages(rewards, options);
  for (size_t i = 0; i < out.size(); ++i) out[i].advantage = adv[i];
  return out;
}

std::string DumpMurphyTree(const MurphyTree& tree, const MurphyDumpOptions& options) {
  char buf[256];
  std::string out;
  const TreeSizes sizes = ComputeTreeSizes(tree);
  std::snprintf(buf, sizeof(buf),
                "murphy tree: turns=%d nodes=%d retained=%d groups=%d/%d max_reward=%.4f\n",
                tree.num_turns(), sizes.generated, sizes.retained, sizes.groups_retained,
                sizes.groups_generated, tree.max_reward);
  out += buf;
  // Stats of the groups the advantages were computed on, keyed by parent id (-1 -> slot 0).
  std::vector<const MurphyGroup*> group_of(tree.nodes.size() + 1, nullptr);
  if (options.advantages) {
    for (const MurphyGroup& g : options.advantages->groups) group_of[g.parent + 1] = &g;
  }
  // Iterative (a tree built through the Python API can be one long chain): one frame per
  // open group. Indentation stops growing past kMaxDumpIndent levels (each node line names
  // its turn), so the text stays linear in the tree's size.
  constexpr int kMaxDumpIndent = 64;
  auto group_line = [&](int parent, const std::vector<int>& members, int depth) {
    const std::string indent(2 * std::min(depth, kMaxDumpIndent), ' ');
    const int retained = static_cast<int>(RetainedMembers(tree, members).size());
    const MurphyGroup* g = group_of[parent + 1];
    if (parent < 0) {
      std::snprintf(buf, sizeof(buf), "%sgroup prompt: retained %d/%zu", indent.c_str(), retained,
                    members.size());
    } else {
      std::snprintf(buf, sizeof(buf), "%sgroup of n%d: retained %d/%zu", indent.c_str(), parent,
                    retained, members.size());
    }
    out += buf;
    if (g) {
      std::snprintf(buf, sizeof(buf), " mean=%.4f std=%.4f", g->stats.mean, g->stats.std);
      out += buf;
    }
    out += '\n';
  };
  struct Frame {
    const std::vector<int>* members;
    size_t next;
    int depth;
  };
  std::vector<Frame> stack;
  if (!tree.root_group.empty()) {
    group_line(-1, tree.root_group, 0);
    stack.push_back({&tree.root_group, 0, 0});
  }
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next == f.members->size()) {
      stack.pop_back();
      continue;
    }
    const int id = (*f.members)[f.next++];
    const int depth = f.depth;
    {
      const std::string indent(2 * std::min(depth, kMaxDumpIndent), ' ');
      const MurphyNode& n = tree.nodes[id];
      if (!n.retained && !options.show_pruned) continue;
      std::snprintf(buf, sizeof(buf), "%s  n%d t%d r=%.4f", indent.c_str(), id, n.turn, n.reward);
      out += buf;
      if (options.credited && n.retained) {
        std::snprintf(buf, sizeof(buf), " R~=%.4f", (*options.credited)[id]);
        out += buf;
      }
      if (options.advantages && n.retained) {
        std::snprintf(buf, sizeof(buf), " A=%+.4f", options.advantages->advantage[id]);
        out += buf;
      }
      out += tree.IsSolved(n) ? " solved" : " failed";
      if (!n.retained) out += " [pruned]";
      if (options.feedback_chars > 0 && !n.feedback.empty()) {
        out += " feedback=\"" + Excerpt(n.feedback, options.feedback_chars) + "\"";
      }
      out += '\n';
      if (!n.children.empty()) {
        group_line(id, n.children, depth + 2);
        stack.push_back({&n.children, 0, depth + 2});  // `f` is not used past this point
      }
    }
  }
  return out;
}

}  // namespace egca::credit
