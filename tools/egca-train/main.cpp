// egca-train: GRPO with EGCA token credit from a YAML config.
//
//   egca-train --config run.yaml [--set key=value ...] [--overwrite]
//   egca-train --resume RUN_DIR [--set key=value ...]     (RUN_DIR/config.yaml, then --set)
//   egca-train --config run.yaml --print-config            (effective config, nothing run)
//   egca-train --keys                                      (every config key)
//   --lang auto|python|cpp  the language problems are routed as (data.lang; auto: each
//                           problem's own, e.g. HumanEval-X / MBXP C++ records are cpp)
//
// Exit codes: 0 done, 1 the run failed part-way (what was saved stays), 2 bad usage,
// config, data or model files (one line naming them; nothing written).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "egca/tools/cli.h"
#include "egca/trainer/rl/grpo_config.h"
#include "egca/trainer/rl/grpo_trainer.h"
#include "egca/trainer/rl/multi_agent.h"

using namespace egca::trainer;

int main(int argc, char** argv) {
  CLI::App app{"GRPO training with execution-grounded credit assignment (EGCA)"};
  std::string config_path, resume_dir, lang;
  std::vector<std::string> overrides;
  bool overwrite = false, print_config = false, keys = false, quiet = false;
  app.add_option("--config", config_path, "YAML config file");
  app.add_option("--set", overrides, "override one key: --set optim.lr=1e-6 (repeatable)");
  app.add_option("--resume", resume_dir, "continue the run in this directory from its latest checkpoint");
  app.add_flag("--overwrite", overwrite, "replace an existing run directory");
  app.add_flag("--print-config", print_config, "print the effective config and exit");
  app.add_flag("--keys", keys, "list every config key and exit");
  app.add_flag("--quiet", quiet, "no progress lines");
  app.add_option("--lang", lang, "auto (each problem's own language), python or cpp (= --set data.lang=...)");
  if (auto code = egca::tools::ParseArgs(app, argc, argv, "egca-train")) return *code;

  if (keys) {
    for (const auto& k : GrpoConfigKeys()) std::printf("%-28s %s\n", k.name.c_str(), k.help.c_str());
    return 0;
  }
  auto fail = [](const egca::Status& s, int code) {
    std::fprintf(stderr, "egca-train: %s\n", s.message().c_str());
    return code;
  };
  if (config_path.empty() && resume_dir.empty()) {
    std::fprintf(stderr, "egca-train: --config FILE or --resume RUN_DIR is required\n");
    return 2;
  }
  if (!resume_dir.empty() && overwrite) {
    std::fprintf(stderr, "egca-train: --resume and --overwrite contradict each other\n");
    return 2;
  }
  GrpoConfig config;
  if (config_path.empty()) {
    config_path = resume_dir + "/config.yaml";
    if (!std::filesystem::is_regular_file(config_path)) {
      std::fprintf(stderr, "egca-train: %s: not found (is %s an egca-train run directory?)\n",
                   config_path.c_str(), resume_dir.c_str());
      return 2;
    }
  } else if (std::filesystem::is_directory(config_path)) {
    std::fprintf(stderr, "egca-train: %s: is a directory, not a config file\n", config_path.c_str());
    return 2;
  }
  if (auto s = LoadGrpoConfigFile(config_path, &config); !s.ok()) return fail(s, 2);
  if (auto s = ApplyGrpoConfigOverrides(overrides, &config); !s.ok()) return fail(s, 2);
  if (!lang.empty()) {
    if (lang != "auto" && lang != "python" && lang != "cpp") {
      std::fprintf(stderr, "egca-train: --lang %s: not auto, python or cpp\n", lang.c_str());
      return 2;
    }
    config.lang = lang;
  }
  if (!resume_dir.empty()) {
    if (!config.run_dir.empty() && std::filesystem::weakly_canonical(config.run_dir) !=
                                       std::filesystem::weakly_canonical(resume_dir)) {
      std::fprintf(stderr, "egca-train: --resume %s but the config's run_dir is %s\n", resume_dir.c_str(),
                   config.run_dir.c_str());
      return 2;
    }
    config.run_dir = resume_dir;
  }
  if (auto s = ValidateGrpoConfig(config); !s.ok()) return fail(s, 2);
  if (print_config) {
    std::fputs(GrpoConfigToYaml(config).c_str(), stdout);
    return 0;
  }

  // Cooperating agents (multi_agent.agents, issue 24): their own trainer.
  if (egca::trainer::IsMultiAgent(config)) {
    egca::trainer::MultiAgentTrainer::Options mo;
    mo.resume = !resume_dir.empty();
    mo.overwrite = overwrite;
    mo.progress = !quiet;
    auto ma = egca::trainer::MultiAgentTrainer::Create(config, mo);
    if (!ma.ok()) return fail(ma.status(), 2);
    if (auto s = (*ma)->Train(); !s.ok()) return fail(s, 1);
    std::fprintf(stderr, "egca-train: done, %lld steps, %lld agents; run in %s\n",
                 static_cast<long long>((*ma)->step()), static_cast<long long>((*ma)->num_agents()),
                 config.run_dir.c_str());
    return 0;
  }
  GrpoTrainer::Options options;
  options.resume = !resume_dir.empty();
  options.overwrite = overwrite;
  options.progress = !quiet;
  auto trainer = GrpoTrainer::Create(config, options);
  if (!trainer.ok()) return fail(trainer.status(), 2);
  if (auto s = (*trainer)->Train(); !s.ok()) return fail(s, 1);
  std::fprintf(stderr, "egca-train: done, %lld steps; run in %s\n", static_cast<long long>((*trainer)->step()),
               config.run_dir.c_str());
  return 0;
}
