// egca_overhead: what EGCA adds to a full GRPO step, against the same step with uniform
// credit and plain grading (the router's localization off), in one process.
//
//   egca_overhead [--problems N] [--group G] [--prompts P] [--steps N] [--rounds R]
//                 [--workers W] [--hidden H] [--layers L] [--threads T]
//
// A random tiny policy writes no code, so the rollouts are real programs: CodeT's
// HumanEval samples (codegen-16B, ../shared/data/samples/codet), G per problem, teacher-
// forced through the policy for pi_old (FixedRolloutSource). Everything else is the real
// step: routing on sandboxed executors, group advantages, token credit, GRPO update on a
// Qwen3-shaped model with the real Qwen3 tokenizer. The two configurations alternate in
// rounds (EGCA, uniform, EGCA, ...) on the same problems and samples, each round a fresh
// trainer whose first step is untimed (executor and reference warm-up), so a load change on
// the machine hits both alike. Prints per-phase medians and the overhead ratio.
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
  std::vector<double> total, generate, route_wait, credit, update;
  std::vector<double> logic, localized;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"EGCA's cost in a full GRPO step against uniform credit with plain grading"};
  int problems = 24, group = 8, prompts = 4, steps = 3, rounds = 3, workers = 2, hidden = 64, layers = 2,
      threads = 0;
  app.add_option("--problems", problems, "HumanEval problems used (rotated through)");
  app.add_option("--group", group, "G samples per prompt");
  app.add_option("--prompts", prompts, "prompts per step");
  app.add_option("--steps", steps, "timed steps per round and configuration");
  app.add_option("--rounds", rounds, "alternating rounds");
  app.add_option("--workers", workers, "route workers");
  app.add_option("--hidden", hidden, "policy hidden size");
  app.add_option("--layers", layers, "policy layers");
  app.add_option("--threads", threads, "torch threads (0: default)");
  CLI11_PARSE(app, argc, argv);

  const fs::path scratch = fs::temp_directory_path() / fmt::format("egca_overhead_{}", getpid());
  auto setup = bench::MakeCodetPolicy(problems, group, hidden, layers, scratch);
  if (!setup.ok()) {
    std::fprintf(stderr, "egca_overhead: %s\n", setup.status().ToString().c_str());
    return 2;
  }
  const std::string humaneval = setup->humaneval;
  const std::string model = setup->model;
  const std::shared_ptr<FixedRolloutSource> source = setup->source;

  auto run = [&](bool egca, int round, Phases* ph) -> Status {
    GrpoConfig c;
    c.model = model;
    c.run_dir = (scratch / fmt::format("run_{}_{}", egca ? "egca" : "uniform", round)).string();
    c.train_data = humaneval;
    c.train_limit = problems;
    c.group_size = group;
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
    c.target = egca ? "earliest" : "uniform";
    c.localize = egca;
    c.prepare_reference = egca;
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
      ph->logic.push_back(m["mode/logic"]);
      ph->localized.push_back(m["credit/localized"]);
    }
    return Status::Ok();
  };

  Phases egca_ph, uniform_ph;
  for (int r = 0; r < rounds; ++r) {
    for (bool egca : {true, false}) {
      if (auto s = run(egca, r, egca ? &egca_ph : &uniform_ph); !s.ok()) {
        std::fprintf(stderr, "egca_overhead: %s\n", s.ToString().c_str());
        return 1;
      }
      std::fprintf(stderr, "round %d %s done\n", r + 1, egca ? "egca" : "uniform");
    }
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);

  std::printf("EGCA overhead in a full GRPO step (%d prompts x G=%d CodeT HumanEval programs, policy "
              "hidden %d x %d layers, Qwen3 vocab, %d route workers, %d rounds x %d steps)\n\n",
              prompts, group, hidden, layers, workers, rounds, steps);
  std::printf("| configuration | step s | teacher-forced rollout s | route wait s | credit s | update s | LOGIC | localized |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (auto [name, ph] : {std::pair{"EGCA (earliest, localized routing)", &egca_ph},
                          std::pair{"uniform credit, plain grading", &uniform_ph}}) {
    std::printf("| %s | %.3f | %.3f | %.3f | %.4f | %.3f | %.2f | %.2f |\n", name, Median(ph->total),
                Median(ph->generate), Median(ph->route_wait), Median(ph->credit), Median(ph->update),
                Median(ph->logic), Median(ph->localized));
  }
  const double ratio = Median(egca_ph.total) / Median(uniform_ph.total);
  std::printf("\nEGCA / uniform step time (medians): %.3fx (%+.1f%%)\n", ratio, (ratio - 1) * 100);
  return 0;
}
