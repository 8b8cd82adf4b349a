// tree_rollout: what a multi-turn (Murphy) step costs against single-turn GRPO with the
// same number of generations per prompt, phase by phase, in one process.
//
//   tree_rollout [--problems N] [--group G] [--turn-group Gt] [--prompts P] [--steps N]
//                [--rounds R] [--workers W] [--hidden H] [--layers L] [--threads T]
//                [--feedback MODE] [--prune none|intra|inter] [--budget B]
//
// Rollouts are CodeT's HumanEval programs teacher-forced through a random tiny Qwen3-shaped
// policy (FixedRolloutSource; a revision of problem p draws from p's programs too), so
// routing, feedback, tree credit and the update see real programs. The tree step grows
// G_1 = G answers per prompt and G_t revisions per failed answer; the single-turn step
// samples G' = the tree's mean generations per prompt (rounded), so both train on about
// the same number of sequences. Configurations alternate in rounds; each round's first step
// is untimed. Prints per-phase medians and the per-generation cost ratio.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "egca/datasets/datasets.h"
#include "egca/datasets/samples.h"
#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/rl/grpo_trainer.h"
#include "../common/codet_policy.h"
#include "../common/stats.h"

using namespace egca;
using namespace egca::trainer;
namespace fs = std::filesystem;

namespace {

using egca::bench::Median;

struct Phases {
  std::vector<double> total, generate, route_wait, credit, update, feedback;
  std::vector<double> generations, trained;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"EGCA's cost in a full GRPO step against uniform credit with plain grading"};
  int problems = 24, group = 8, turn_group = 4, prompts = 4, steps = 3, rounds = 2, workers = 2, hidden = 64,
      layers = 2, threads = 0, budget = 0;
  std::string feedback = "level_feedback", prune = "none";
  app.add_option("--problems", problems, "HumanEval problems used (rotated through)");
  app.add_option("--group", group, "G_1 answers per prompt (tree)");
  app.add_option("--turn-group", turn_group, "G_t revisions per failed answer (tree)");
  app.add_option("--feedback", feedback, "feedback mode of the tree");
  app.add_option("--prune", prune, "none, intra or inter");
  app.add_option("--budget", budget, "pruning budget");
  app.add_option("--prompts", prompts, "prompts per step");
  app.add_option("--steps", steps, "timed steps per round and configuration");
  app.add_option("--rounds", rounds, "alternating rounds");
  app.add_option("--workers", workers, "route workers");
  app.add_option("--hidden", hidden, "policy hidden size");
  app.add_option("--layers", layers, "policy layers");
  app.add_option("--threads", threads, "torch threads (0: default)");
  CLI11_PARSE(app, argc, argv);

  const fs::path scratch = fs::temp_directory_path() / fmt::format("tree_rollout_{}", getpid());
  auto setup = bench::MakeCodetPolicy(problems, group, hidden, layers, scratch);
  if (!setup.ok()) {
    std::fprintf(stderr, "tree_rollout: %s\n", setup.status().ToString().c_str());
    return 2;
  }
  const std::string humaneval = setup->humaneval;
  const std::string model = setup->model;
  const std::shared_ptr<FixedRolloutSource> source = setup->source;

  auto run = [&](bool tree, int g, int round, Phases* ph) -> Status {
    GrpoConfig c;
    c.model = model;
    c.run_dir = (scratch / fmt::format("run_{}_{}", tree ? "tree" : "single", round)).string();
    c.train_data = humaneval;
    c.train_limit = problems;
    c.group_size = g;
    c.prompts_per_step = prompts;
    c.max_new_tokens = 1024;
    c.max_prompt_tokens = 2048;
    c.route_workers = workers;
    c.steps = steps + 1;
    c.micro_batch = 4;
    c.beta = 0.05;
    c.lr = 1e-5;
    c.dump_rollouts = false;
    c.threads = threads;
    c.target = "uniform";
    c.localize = feedback == "egca";
    c.normalization = "mean_std";
    if (tree) {
      c.turns = 2;
      c.turn_group_size = turn_group;
      c.feedback = feedback;
      c.prune = prune;
      c.prune_budget = budget;
      c.dump_trees = false;
    }
    GrpoTrainer::Options o;
    o.progress = false;
    o.overwrite = true;
    o.rollouts = source;
    EGCA_ASSIGN_OR_RETURN(auto trainer, GrpoTrainer::Create(c, o));
    for (int s = 0; s <= steps; ++s) {
      EGCA_ASSIGN_OR_RETURN(Scalars m, trainer->Step());
      if (s == 0) continue;  // warm-up: executors, first reference traces
      const StepTimings& t = trainer->last_timings();
      ph->total.push_back(t.total);
      ph->generate.push_back(t.generate);
      ph->route_wait.push_back(t.route_wait);
      ph->credit.push_back(t.credit);
      ph->update.push_back(t.update);
      ph->feedback.push_back(t.feedback);
      ph->generations.push_back(static_cast<double>(trainer->last_rollouts().size()) / prompts);
      double trained = 0;
      for (const auto& r : trainer->last_rollouts()) trained += r.retained ? 1 : 0;
      ph->trained.push_back(trained / prompts);
    }
    return Status::Ok();
  };

  Phases tree_ph, single_ph;
  for (int r = 0; r < rounds; ++r) {
    if (auto s = run(true, group, r, &tree_ph); !s.ok()) {
      std::fprintf(stderr, "tree_rollout: %s\n", s.ToString().c_str());
      return 1;
    }
    const int g_single = std::max(2, static_cast<int>(std::lround(Median(tree_ph.generations))));
    if (auto s = run(false, g_single, r, &single_ph); !s.ok()) {
      std::fprintf(stderr, "tree_rollout: %s\n", s.ToString().c_str());
      return 1;
    }
    std::fprintf(stderr, "round %d done (single-turn G' = %d)\n", r + 1, g_single);
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);

  std::printf("Multi-turn tree step against single-turn GRPO with the same generations (%d prompts, tree G_1=%d "
              "G_t=%d feedback %s prune %s/%d; CodeT HumanEval programs; policy hidden %d x %d layers, Qwen3 "
              "vocab, %d route workers, %d rounds x %d steps)\n\n",
              prompts, group, turn_group, feedback.c_str(), prune.c_str(), budget, hidden, layers, workers, rounds, steps);
  std::printf("| configuration | generations/prompt | trained/prompt | step s | rollout s | route wait s | feedback s | credit s | update s | s per generation |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (auto [name, ph] : {std::pair{"Murphy tree (2 turns)", &tree_ph}, std::pair{"single-turn GRPO", &single_ph}}) {
    std::printf("| %s | %.1f | %.1f | %.3f | %.3f | %.3f | %.3f | %.4f | %.3f | %.4f |\n", name, Median(ph->generations),
                Median(ph->trained), Median(ph->total), Median(ph->generate), Median(ph->route_wait),
                Median(ph->feedback), Median(ph->credit), Median(ph->update),
                Median(ph->total) / std::max(1e-9, Median(ph->generations) * prompts));
  }
  const double ratio = (Median(tree_ph.total) / Median(tree_ph.generations)) /
                       (Median(single_ph.total) / Median(single_ph.generations));
  std::printf("\ntree / single-turn cost per generation (medians): %.3fx (%+.1f%%)\n", ratio, (ratio - 1) * 100);
  return 0;
}
