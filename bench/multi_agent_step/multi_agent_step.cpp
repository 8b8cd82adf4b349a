// multi_agent_step: what a cooperating-agents step (MAGRPO-MT, two agents aux + main) costs
// per generated completion, align and cross, against single-agent GRPO with the same number
// of generations per prompt, phase by phase, in one process.
//
//   multi_agent_step [--problems N] [--group G] [--turns T] [--prompts P] [--steps N]
//                    [--rounds R] [--workers W] [--hidden H] [--layers L] [--threads T]
//
// Rollouts are teacher-forced through random tiny Qwen3-shaped policies (FixedRolloutSource):
// `main` answers with CodeT's HumanEval programs, `aux` with small helpers, so the joint
// programs the executor grades are real; the single-agent step answers with the same CodeT
// programs. Per prompt and turn-1 node, each agent generates G completions: 2G generations,
// G joint programs (align) or G^2 (cross); the single-agent step samples G' = the
// multi-agent step's generations per prompt. Configurations alternate in rounds; each
// round's first step is untimed. Prints per-phase medians and the per-generation ratios.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "../common/codet_policy.h"
#include "egca/trainer/policy/cpu_runtime.h"
#include "egca/trainer/rl/grpo_trainer.h"
#include "egca/trainer/rl/multi_agent.h"
#include "../common/stats.h"

using namespace egca;
using namespace egca::trainer;
namespace fs = std::filesystem;

namespace {

using egca::bench::Median;

struct Phases {
  std::vector<double> total, generate, route_wait, credit, update, generations, programs;
};

}  // namespace

int main(int argc, char** argv) {
  RetainFreedHostMemory();  // as egca-train (cpu_runtime.h)
  CLI::App app{"Cost per generated completion of a two-agent MAGRPO-MT step vs single-agent GRPO"};
  int problems = 12, group = 4, turns = 1, prompts = 2, steps = 2, rounds = 2, workers = 2,
      hidden = 64, layers = 2, threads = 0;
  app.add_option("--problems", problems, "HumanEval problems used (rotated through)");
  app.add_option("--group", group, "G completions per agent per node");
  app.add_option("--turns", turns, "T turns of the joint tree (level_feedback transition)");
  app.add_option("--prompts", prompts, "prompts per step");
  app.add_option("--steps", steps, "timed steps per round and configuration");
  app.add_option("--rounds", rounds, "alternating rounds");
  app.add_option("--workers", workers, "route workers");
  app.add_option("--hidden", hidden, "policy hidden size");
  app.add_option("--layers", layers, "policy layers");
  app.add_option("--threads", threads, "torch threads (0: default)");
  CLI11_PARSE(app, argc, argv);

  const fs::path scratch = fs::temp_directory_path() / fmt::format("multi_agent_step_{}", getpid());
  auto setup = bench::MakeCodetPolicy(problems, group, hidden, layers, scratch);
  if (!setup.ok()) {
    std::fprintf(stderr, "multi_agent_step: %s\n", setup.status().ToString().c_str());
    return 2;
  }
  // The agents' texts: main the CodeT programs, aux small helpers (the joint program is the
  // prompt's imports + aux + main).
  std::map<std::string, std::vector<std::string>> texts;
  for (const auto& id : setup->problem_ids) {
    texts[id + "@main"] = setup->answers[id];
    texts[id] = setup->answers[id];  // the single-agent step
    auto& aux = texts[id + "@aux"];
    for (int k = 0; k < group; ++k) {
      aux.push_back(fmt::format(
          "A helper:\n```python\ndef aux(x):\n    return x if x is not None else {}\n```\n", k));
    }
  }
  auto source = std::make_shared<FixedRolloutSource>(*setup->tokenizer, texts);

  auto base = [&](const std::string& run, int g) {
    GrpoConfig c;
    c.run_dir = (scratch / run).string();
    c.train_data = setup->humaneval;
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
    c.dump_trees = false;
    c.threads = threads;
    c.target = "uniform";
    c.localize = false;
    c.turns = turns;
    c.feedback = "level_feedback";
    return c;
  };
  auto run_multi = [&](const std::string& mode, int round, Phases* ph) -> Status {
    GrpoConfig c = base(fmt::format("ma_{}_{}", mode, round), group);
    c.ma_agents =
        "[{name: aux, model: " + setup->model + "}, {name: main, model: " + setup->model + "}]";
    c.ma_joint_mode = mode;
    c.ma_max_nodes = 1 << 20;
    MultiAgentTrainer::Options o;
    o.progress = false;
    o.overwrite = true;
    o.rollouts = source;
    EGCA_ASSIGN_OR_RETURN(auto trainer, MultiAgentTrainer::Create(c, o));
    for (int s = 0; s <= steps; ++s) {
      EGCA_ASSIGN_OR_RETURN(Scalars m, trainer->Step());
      if (s == 0) continue;
      ph->total.push_back(m["time/step"]);
      ph->generate.push_back(m["time/generate"]);
      ph->route_wait.push_back(m["time/route_wait"]);
      ph->credit.push_back(m["time/credit"]);
      ph->update.push_back(m["time/update"]);
      ph->generations.push_back(
          static_cast<double>(trainer->last_records(0).size() + trainer->last_records(1).size()) /
          prompts);
      ph->programs.push_back(static_cast<double>(trainer->last_joint().size()) / prompts);
    }
    return Status::Ok();
  };
  auto run_single = [&](int g, int round, Phases* ph) -> Status {
    GrpoConfig c = base(fmt::format("single_{}", round), g);
    c.model = setup->model;
    c.turns = 1;  // the same generations in one group
    GrpoTrainer::Options o;
    o.progress = false;
    o.overwrite = true;
    o.rollouts = source;
    EGCA_ASSIGN_OR_RETURN(auto trainer, GrpoTrainer::Create(c, o));
    for (int s = 0; s <= steps; ++s) {
      EGCA_ASSIGN_OR_RETURN(Scalars m, trainer->Step());
      if (s == 0) continue;
      const StepTimings& t = trainer->last_timings();
      ph->total.push_back(t.total);
      ph->generate.push_back(t.generate);
      ph->route_wait.push_back(t.route_wait);
      ph->credit.push_back(t.credit);
      ph->update.push_back(t.update);
      ph->generations.push_back(static_cast<double>(trainer->last_rollouts().size()) / prompts);
      ph->programs.push_back(static_cast<double>(trainer->last_rollouts().size()) / prompts);
    }
    return Status::Ok();
  };

  Phases align_ph, cross_ph, single_ph;
  for (int r = 0; r < rounds; ++r) {
    for (auto [mode, ph] : {std::pair{"align", &align_ph}, std::pair{"cross", &cross_ph}}) {
      if (auto s = run_multi(mode, r, ph); !s.ok()) {
        std::fprintf(stderr, "multi_agent_step: %s: %s\n", mode, s.ToString().c_str());
        return 1;
      }
    }
    const int g_single = std::max(2, static_cast<int>(std::lround(Median(align_ph.generations))));
    if (auto s = run_single(g_single, r, &single_ph); !s.ok()) {
      std::fprintf(stderr, "multi_agent_step: single: %s\n", s.ToString().c_str());
      return 1;
    }
    std::fprintf(stderr, "round %d done (single-agent G' = %d)\n", r + 1, g_single);
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);

  std::printf(
      "Two-agent MAGRPO-MT step (aux + main, G=%d per agent, T=%d) against single-agent GRPO with "
      "the same "
      "generations (%d prompts; CodeT HumanEval programs; policies hidden %d x %d layers, Qwen3 "
      "vocab, %d route "
      "workers, %d rounds x %d steps)\n\n",
      group, turns, prompts, hidden, layers, workers, rounds, steps);
  std::printf(
      "| configuration | generations/prompt | programs graded/prompt | step s | rollout s | route "
      "wait s | credit s | "
      "update s | s per generation |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  auto per_gen = [&](const Phases& ph) {
    return Median(ph.total) / std::max(1e-9, Median(ph.generations) * prompts);
  };
  for (auto [name, ph] :
       {std::pair{"align (2 agents)", &align_ph}, std::pair{"cross (2 agents)", &cross_ph},
        std::pair{"single-agent GRPO", &single_ph}}) {
    std::printf("| %s | %.1f | %.1f | %.3f | %.3f | %.3f | %.4f | %.3f | %.4f |\n", name,
                Median(ph->generations), Median(ph->programs), Median(ph->total),
                Median(ph->generate), Median(ph->route_wait), Median(ph->credit),
                Median(ph->update), per_gen(*ph));
  }
  std::printf(
      "\nalign / single-agent cost per generation: %.3fx\ncross / single-agent cost per "
      "generation: %.3fx\n",
      per_gen(align_ph) / per_gen(single_ph), per_gen(cross_ph) / per_gen(single_ph));
  return 0;
}
