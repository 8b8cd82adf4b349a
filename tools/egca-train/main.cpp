// egca-train: GRPO with EGCA token credit from a YAML config.
//
//   egca-train --config run.yaml [--set key=value ...] [--overwrite]
//   egca-train --resume RUN_DIR [--set key=value ...]     (RUN_DIR/config.yaml, then --set)
//   egca-train --config run.yaml --print-config            (effective config, nothing run)
//   egca-train --keys                                      (every config key)
//   --rollouts FILE.json    train on fixed completions instead of sampling: a JSON object
//                           {"<problem id>": ["completion", ...]} (sample j of a group takes
//                           text j mod n; revisions "<id>#turn<t>", else the id's); log-probs
//                           by teacher forcing. Replays recorded samples; the tests use it.
//   --lang auto|python|cpp  the language problems are routed as (data.lang; auto: each
//                           problem's own, e.g. HumanEval-X / MBXP C++ records are cpp)
//
// Data parallel: launched by torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT) or srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; --master-addr /
// --master-port or MASTER_ADDR / MASTER_PORT, else the node list's first host), every rank
// runs this program with the same arguments (docs/training.md, dist/process_group.h).
//
// Exit codes: 0 done, 1 the run failed part-way (what was saved stays), 2 bad usage,
// config, data or model files (one line naming them; nothing written).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/cuda.h>
#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/tools/cli.h"
#include "egca/trainer/dist/process_group.h"
#include "egca/trainer/policy/cpu_runtime.h"
#include "egca/trainer/policy/tokenizer.h"
#include "egca/trainer/rl/grpo_config.h"
#include "egca/trainer/rl/grpo_trainer.h"
#include "egca/trainer/rl/multi_agent.h"

using namespace egca::trainer;

namespace {

// SIGTERM / SIGINT on a rank of a multi-process run: the launcher ends the job (torchrun does
// when another rank failed). One line, written with async-signal-safe calls only.
char g_signal_line[160];
void OnTerminate(int) {
  (void)!write(2, g_signal_line, strlen(g_signal_line));
  _exit(143);
}

}  // namespace

int main(int argc, char** argv) {
  egca::trainer::RetainFreedHostMemory();  // before LibTorch allocates (cpu_runtime.h)
  CLI::App app{"GRPO training with execution-grounded credit assignment (EGCA)"};
  std::string config_path, resume_dir, lang;
  std::vector<std::string> overrides;
  std::string master_addr, rollouts_path;
  int master_port = 0;
  bool overwrite = false, print_config = false, keys = false, quiet = false;
  app.add_option("--config", config_path, "YAML config file");
  app.add_option("--set", overrides, "override one key: --set optim.lr=1e-6 (repeatable)");
  app.add_option("--resume", resume_dir, "continue the run in this directory from its latest checkpoint");
  app.add_flag("--overwrite", overwrite, "replace an existing run directory");
  app.add_flag("--print-config", print_config, "print the effective config and exit");
  app.add_flag("--keys", keys, "list every config key and exit");
  app.add_flag("--quiet", quiet, "no progress lines");
  app.add_option("--lang", lang, "auto (each problem's own language), python or cpp (= --set data.lang=...)");
  app.add_option("--rollouts", rollouts_path,
                 "fixed completions to train on, JSON {problem id: [text, ...]} (no sampling)");
  app.add_option("--master-addr", master_addr,
                 "rendezvous host of a multi-process run when MASTER_ADDR is unset (srun)");
  app.add_option("--master-port", master_port,
                 "rendezvous port when MASTER_PORT is unset (default 29500)");
  if (auto code = egca::tools::ParseArgs(app, argc, argv, "egca-train")) return *code;

  if (keys) {
    for (const auto& k : GrpoConfigKeys()) std::printf("%-28s %s\n", k.name.c_str(), k.help.c_str());
    return 0;
  }
  // Which rank this is (torchrun / srun), before anything can fail: every line says it.
  auto launch = dist::ReadLaunchEnvironment([](const char* n) { return std::getenv(n); },
                                            master_addr, master_port);
  if (!launch.ok()) {
    std::fprintf(stderr, "egca-train: %s\n", launch.status().message().c_str());
    return 2;
  }
  std::shared_ptr<dist::Distribution> distribution;
  auto fail = [&](const egca::Status& s, int code) {
    const std::string& msg = s.message();
    if (launch->world_size > 1 && msg.rfind("rank ", 0) != 0) {
      std::fprintf(stderr, "egca-train: rank %lld: %s\n", static_cast<long long>(launch->rank),
                   msg.c_str());
    } else {
      std::fprintf(stderr, "egca-train: %s\n", msg.c_str());
    }
    if (distribution) distribution->Abort(msg);  // the others end now, with this reason
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
  if (launch->world_size > 1) {
    // One process per device: rank r of a node trains on cuda:LOCAL_RANK.
    dist::ConnectOptions co;
    co.backend = config.backend;
    const bool cuda = config.device.rfind("cuda", 0) == 0 ||
                      (config.device == "auto" && torch::cuda::is_available());
    co.cuda = cuda;
    co.cuda_device = launch->local_rank;
    if (cuda) config.device = fmt::format("cuda:{}", launch->local_rank);
    co.timeout = std::chrono::milliseconds(static_cast<int64_t>(config.dist_timeout * 1000));
    co.heartbeat_timeout = config.heartbeat_timeout;
    co.heartbeat_seconds = std::min(1.0, config.heartbeat_timeout / 4);
    co.bucket_bytes = static_cast<int64_t>(config.bucket_mb * (1 << 20));
    std::snprintf(g_signal_line, sizeof g_signal_line,
                  "egca-train: rank %lld: terminated by a signal (the launcher ends the job)\n",
                  static_cast<long long>(launch->rank));
    signal(SIGTERM, OnTerminate);
    signal(SIGINT, OnTerminate);
    auto d = dist::ConnectProcessGroup(*launch, co);
    if (!d.ok()) return fail(d.status(), 1);
    distribution = *d;
    options.distribution = distribution;
  }
  std::unique_ptr<Tokenizer> rollout_tokenizer;  // outlives the trainer (borrowed by the source)
  if (!rollouts_path.empty()) {
    auto text = egca::ReadFile(rollouts_path);
    if (!text.ok()) return fail(text.status(), 2);
    auto j = nlohmann::json::parse(*text, nullptr, false);
    std::map<std::string, std::vector<std::string>> texts;
    bool good = j.is_object();
    for (auto it = good ? j.begin() : j.end(); good && it != j.end(); ++it) {
      good = it.value().is_array() && !it.value().empty();
      for (const auto& t : it.value()) good = good && t.is_string();
      if (good) texts[it.key()] = it.value().get<std::vector<std::string>>();
    }
    if (!good) {
      return fail(
          egca::InvalidArgument(fmt::format(
              "{}: --rollouts wants a JSON object of non-empty string arrays", rollouts_path)),
          2);
    }
    auto tok = Tokenizer::FromFile(config.tokenizer.empty() ? config.model : config.tokenizer);
    if (!tok.ok()) return fail(tok.status(), 2);
    rollout_tokenizer = std::move(*tok);
    options.rollouts = std::make_shared<FixedRolloutSource>(*rollout_tokenizer, std::move(texts));
  }
  options.resume = !resume_dir.empty();
  options.overwrite = overwrite;
  options.progress = !quiet && launch->rank == 0;
  auto trainer = GrpoTrainer::Create(config, options);
  if (!trainer.ok()) return fail(trainer.status(), 2);
  if (auto s = (*trainer)->Train(); !s.ok()) return fail(s, 1);
  if (distribution) {
    if (auto s = dist::FinishDistribution(*distribution); !s.ok()) return fail(s, 1);
  }
  std::fprintf(stderr, "egca-train: done, %lld steps; run in %s\n", static_cast<long long>((*trainer)->step()),
               config.run_dir.c_str());
  return 0;
}
