// Murphy worked example: loads a two-turn feedback-conditioned rollout tree from JSON and
// prints it before and after MaRS / MeRS backup and after InterP pruning, with the node-wise
// GRPO advantages and the GRPO-MT baseline. See README.md for the numbers, explained.
//
//   murphy_tree_example TREE.json [--gamma G] [--inter-budget B]
//
// Tree JSON: {"task": str, "max_reward": num, "responses": [NODE...]} where NODE is
// {"completion": str, "reward": num, "feedback": str?, "token_count": int?,
//  "refinements": [NODE...]?}; refinements are the child group generated from the
// feedback-conditioned prompt (task + completion + feedback).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/credit/murphy.h"

namespace {

using egca::credit::MurphyTree;

// Adds `node` (and its refinements) under `parent`. Throws nlohmann::json exceptions on
// missing or mistyped fields; main reports them with the file name.
void AddNode(const nlohmann::json& node, int parent, MurphyTree* tree) {
  std::optional<int64_t> tokens;
  if (node.contains("token_count")) tokens = node.at("token_count").get<int64_t>();
  const std::string completion = node.value("completion", "");
  const std::string feedback = node.value("feedback", "");
  // The feedback-conditioned prompt of a refinement: task + previous output + feedback.
  std::string prompt = tree->task;
  if (parent >= 0) {
    prompt += "\n# previous attempt\n" + tree->nodes[parent].completion + "\n# feedback\n" +
              tree->nodes[parent].feedback + "\n";
  }
  const int id = tree->AddResponse(parent, node.at("reward").get<double>(), completion, feedback,
                                   prompt, tokens);
  if (node.contains("refinements")) {
    for (const nlohmann::json& child : node.at("refinements")) AddNode(child, id, tree);
  }
}

egca::StatusOr<MurphyTree> LoadTree(const std::string& path) {
  EGCA_ASSIGN_OR_RETURN(const std::string text, egca::ReadFile(path));
  MurphyTree tree;
  try {
    const nlohmann::json doc = nlohmann::json::parse(text);
    tree.task = doc.value("task", "");
    tree.max_reward = doc.value("max_reward", 1.0);
    for (const nlohmann::json& node : doc.at("responses")) AddNode(node, -1, &tree);
  } catch (const std::exception& e) {
    return egca::InvalidArgument(path + ": " + e.what());
  }
  EGCA_RETURN_IF_ERROR(egca::credit::ValidateTree(tree).WithContext(path));
  return tree;
}

void PrintCredited(const MurphyTree& tree, const egca::credit::BackupOptions& backup) {
  const std::vector<double> credited = egca::credit::BackupRewards(tree, backup);
  const egca::credit::NodeAdvantages advantages =
      egca::credit::ComputeNodeAdvantages(tree, credited);
  egca::credit::MurphyDumpOptions dump;
  dump.credited = &credited;
  dump.advantages = &advantages;
  dump.feedback_chars = 0;
  std::fputs(egca::credit::DumpMurphyTree(tree, dump).c_str(), stdout);
}

int Usage() {
  std::fputs("usage: murphy_tree_example TREE.json [--gamma G] [--inter-budget B]\n", stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  double gamma = 0.5;
  int inter_budget = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--gamma" || arg == "--inter-budget") && i + 1 < argc) {
      char* end = nullptr;
      const char* value = argv[++i];
      if (arg == "--gamma") {
        gamma = std::strtod(value, &end);
      } else {
        inter_budget = static_cast<int>(std::strtol(value, &end, 10));
      }
      if (end == value || *end != '\0' || inter_budget < 0) {
        std::fprintf(stderr, "murphy_tree_example: bad value '%s' for option %s\n", value,
                     arg.c_str());
        return 2;
      }
    } else if (!arg.empty() && arg[0] != '-' && path.empty()) {
      path = arg;
    } else {
      return Usage();
    }
  }
  if (path.empty()) return Usage();
  egca::StatusOr<MurphyTree> tree = LoadTree(path);
  if (!tree.ok()) {
    std::fprintf(stderr, "murphy_tree_example: %s\n", tree.status().ToString().c_str());
    return 2;
  }
  using egca::credit::BackupStrategy;

  std::puts("## 1. Generated tree (immediate rewards r)");
  egca::credit::MurphyDumpOptions plain;
  std::fputs(egca::credit::DumpMurphyTree(*tree, plain).c_str(), stdout);
  std::fputs(egca::credit::ComputeTreeSizes(*tree).ToString().c_str(), stdout);

  std::puts("\n## 2. MaRS backup, node-wise GRPO advantages (A = (R~ - mean) / (std + 1e-6))");
  PrintCredited(*tree, {BackupStrategy::kMaRS, 1.0});

  std::printf("\n## 3. MeRS backup (gamma = %g), node-wise GRPO advantages\n", gamma);
  PrintCredited(*tree, {BackupStrategy::kMeRS, gamma});

  std::printf("\n## 4. InterP (keep %d child groups per turn), then MaRS\n", inter_budget);
  const MurphyTree pruned =
      egca::credit::Prune(*tree, {egca::credit::PruneStrategy::kInterGroup, inter_budget, true});
  PrintCredited(pruned, {BackupStrategy::kMaRS, 1.0});
  std::fputs(egca::credit::ComputeTreeSizes(pruned).ToString().c_str(), stdout);

  std::puts("\n## 5. GRPO-MT baseline (unpruned): terminal reward per trajectory, normalized");
  for (const egca::credit::MtTrajectory& t : egca::credit::GrpoMtTrajectories(*tree)) {
    std::string path_text;
    for (int id : t.path) path_text += (path_text.empty() ? "n" : " > n") + std::to_string(id);
    std::printf("%-10s final r=%.4f A=%+.4f\n", path_text.c_str(), t.final_reward, t.advantage);
  }
  return 0;
}
