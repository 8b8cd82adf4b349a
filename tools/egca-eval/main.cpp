// egca-eval: pass@k and Reflexion-style Iter-k (egca::trainer evaluation).
//
//   egca-eval --problems FILE --samples FILE [--source codet|mapcoder|ldb|reflexion] [--k 1,10,100]
//   egca-eval --problems FILE --model DIR [--n 10] [--k 1,10] [--temperature 0.2]
//   egca-eval --problems FILE --model DIR --iter 3 [--runs 3] [--feedback level_feedback]
// Writes a JSON summary (--json FILE) and a Markdown table (--markdown FILE, and stdout).
// --lang auto|python|cpp: auto routes each problem as its own language (HumanEval-X / MBXP
// C++ records are cpp: clang, egca::cpp's router); python or cpp route every problem so.
// Exit codes: 0 done, 1 the evaluation failed part-way, 2 bad usage or input (one line).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "egca/core/files.h"
#include "egca/datasets/datasets.h"
#include "egca/datasets/samples.h"
#include "egca/tools/cli.h"
#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/rl/evaluation.h"
#include "egca/trainer/policy/model_config.h"
#include "egca/trainer/policy/sampler.h"
#include "egca/trainer/policy/cpu_runtime.h"

using namespace egca;
using namespace egca::trainer;
namespace fs = std::filesystem;

namespace {

int Fail(const std::string& what, int code = 2) {
  std::fprintf(stderr, "egca-eval: %s\n", what.c_str());
  return code;
}

// --problems and --samples may be files or folders (APPS folders, unpacked MapCoder runs);
// what they hold is checked by the loaders.
bool Exists(const std::string& path, const char* option, int* code) {
  if (fs::exists(path)) return true;
  *code = Fail(fmt::format("{} {}: no such file", option, path));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  egca::trainer::RetainFreedHostMemory();  // before LibTorch allocates (cpu_runtime.h)
  CLI::App app{"pass@k and Iter-k of a checkpoint or a samples file"};
  std::string problems_path, format = "auto", samples_path, source, model_dir, tokenizer_path, json_path, md_path,
                             feedback = "level_feedback", feedback_command, chat_template = "qwen3", instruction,
                             id_prefix, lang = "auto";
  std::vector<int64_t> ks;
  int64_t n = 1, iterations = 0, runs = 3, window = 1, workers = 2, limit = -1, max_new_tokens = 512, slice = 1,
          batch = 8, memory_mb = 2048;
  double temperature = 0.2, top_p = 0.95, timeout = 4;
  uint64_t seed = 0;
  bool quiet = false;
  app.add_option("--problems", problems_path, "problem set (any format egca-batch reads)")->required();
  app.add_option("--format", format, "problem set format (auto, humaneval, mbpp, apps_dir, ...)");
  app.add_option("--id-prefix", id_prefix, "problem id prefix");
  app.add_option("--limit", limit, "first N problems");
  app.add_option("--samples", samples_path, "samples: egca sample JSONL, or a published file with --source");
  app.add_option("--source", source, "--samples is a published file: codet, mapcoder, ldb or reflexion");
  app.add_option("--model", model_dir, "Hugging Face checkpoint to generate with");
  app.add_option("--tokenizer", tokenizer_path, "tokenizer.json or its directory (default: --model)");
  app.add_option("--chat-template", chat_template, "qwen3, chatml, or a JSON template file");
  app.add_option("--instruction", instruction, "text before the problem statement (every language)");
  app.add_option("--lang", lang, "auto (each problem's own language), python or cpp");
  app.add_option("--n", n, "samples per problem for pass@k (--model)");
  app.add_option("--k", ks, "k values of pass@k (default: 1, 10, 100 where n allows)")->delimiter(',');
  app.add_option("--iter", iterations, "Iter-k: self-repair iterations (0: pass@k only)");
  app.add_option("--runs", runs, "Iter-k: independent runs (mean and std)");
  app.add_option("--window", window, "Iter-k: previous attempts kept in the prompt");
  app.add_option("--feedback", feedback, "Iter-k feedback: plain, level_feedback, egca or custom");
  app.add_option("--feedback-command", feedback_command, "custom feedback: command reading JSON on stdin");
  app.add_option("--sandbox-slice", slice, "tests shown in feedback: n first, -n last, 0 all");
  app.add_option("--temperature", temperature, "sampling temperature (0: greedy)");
  app.add_option("--top-p", top_p, "nucleus mass");
  app.add_option("--max-new-tokens", max_new_tokens, "tokens per completion");
  app.add_option("--batch", batch, "prompts generated together");
  app.add_option("--seed", seed, "sampling seed");
  app.add_option("--workers", workers, "sandboxed executors");
  app.add_option("--timeout", timeout, "seconds per test");
  app.add_option("--memory-mb", memory_mb, "memory limit per run (MiB)");
  app.add_option("--json", json_path, "write the JSON summary here");
  app.add_option("--markdown", md_path, "write the Markdown tables here");
  app.add_flag("--quiet", quiet, "no progress lines");
  if (auto code = egca::tools::ParseArgs(app, argc, argv, "egca-eval")) return *code;

  int code = 0;
  if (!Exists(problems_path, "--problems", &code)) return code;
  if (samples_path.empty() == model_dir.empty()) return Fail("give exactly one of --samples FILE and --model DIR");
  if (!samples_path.empty() && !Exists(samples_path, "--samples", &code)) return code;
  if (!model_dir.empty() && !fs::is_regular_file(model_dir + "/config.json")) {
    return Fail(fmt::format("--model {}: no config.json (not a Hugging Face checkpoint directory)", model_dir));
  }
  if (!source.empty() && samples_path.empty()) return Fail("--source needs --samples");
  if (iterations > 0 && model_dir.empty()) return Fail("--iter needs --model (Iter-k generates revisions)");
  if (iterations < 0) return Fail("--iter must be >= 0");
  if (runs < 1) return Fail("--runs must be >= 1");
  if (window < 1) return Fail("--window must be >= 1");
  if (n < 1) return Fail("--n must be >= 1");
  if (workers < 1) return Fail("--workers must be >= 1");
  if (batch < 1) return Fail("--batch must be >= 1");
  if (!(timeout > 0)) return Fail("--timeout must be > 0");
  if (temperature < 0) return Fail("--temperature must be >= 0");
  if (!(top_p > 0 && top_p <= 1)) return Fail("--top-p must be in (0, 1]");
  for (int64_t k : ks) {
    if (k < 1) return Fail(fmt::format("--k {}: k must be >= 1", k));
  }
  std::optional<Language> forced_lang;
  if (!ParseLanguageChoice(lang, &forced_lang)) return Fail(fmt::format("--lang {}: not auto, python or cpp", lang));
  IterKOptions iter;
  if (!ParseFeedbackMode(feedback, &iter.feedback.mode) || iter.feedback.mode == FeedbackMode::kExpertEdits) {
    return Fail(fmt::format("--feedback {}: not plain, level_feedback, egca or custom", feedback));
  }
  if (iter.feedback.mode == FeedbackMode::kCustom && feedback_command.empty()) {
    return Fail("--feedback custom needs --feedback-command");
  }
  iter.feedback.sandbox_slice = slice;
  iter.feedback_command = feedback_command;
  iter.iterations = iterations;
  iter.runs = runs;
  iter.window = window;

  // Problems.
  datasets::DatasetOptions dopt;
  auto fmt_parsed = datasets::ParseDatasetFormat(format);
  if (!fmt_parsed.ok()) return Fail(fmt::format("--format {}: {}", format, fmt_parsed.status().message()));
  dopt.format = *fmt_parsed;
  dopt.id_prefix = id_prefix;
  dopt.limit = limit;
  datasets::LoadReport preport;
  auto problems = datasets::LoadProblems(problems_path, dopt, &preport);
  if (!problems.ok()) return Fail(problems.status().message());
  for (const auto& b : preport.bad) std::fprintf(stderr, "egca-eval: skipped %s\n", b.ToString().c_str());
  if (problems->empty()) return Fail(fmt::format("--problems {}: no problem", problems_path));

  // Executors for the languages the problems use, before samples and model are loaded. Each
  // sandboxed run forks from egca-py-server / egca-cpp-server, exec'd programs that never
  // hold this process's memory.
  GradeOptions gopt;
  gopt.workers = workers;
  gopt.timeout_seconds = timeout;
  gopt.memory_mb = memory_mb;
  gopt.progress = !quiet;
  gopt.lang = forced_lang;
  gopt.python = gopt.cpp = false;
  for (const auto& p : *problems) (RoutedLanguage(p.language, forced_lang) == Language::kCpp ? gopt.cpp : gopt.python) = true;
  auto grader = Grader::Create(gopt);
  if (!grader.ok()) return Fail(grader.status().message(), 1);


  auto default_ks = [&](int64_t samples_per_problem) {
    if (!ks.empty()) return;
    for (int64_t k : {1, 10, 100}) {
      if (k <= samples_per_problem) ks.push_back(k);
    }
  };
  nlohmann::ordered_json summary;
  std::string markdown;
  if (!samples_path.empty()) {
    datasets::LoadReport sreport;
    StatusOr<std::vector<datasets::Sample>> samples = std::vector<datasets::Sample>{};
    if (source.empty()) {
      samples = datasets::LoadSamples(samples_path, &sreport);
    } else {
      auto src = datasets::ParseSampleSource(source);
      if (!src.ok()) return Fail(fmt::format("--source {}: {}", source, src.status().message()));
      samples = datasets::ConvertSamples(samples_path, *src, *problems, {}, &sreport);
    }
    if (!samples.ok()) return Fail(samples.status().message());
    for (size_t i = 0; i < sreport.bad.size() && i < 5; ++i) {
      std::fprintf(stderr, "egca-eval: skipped %s\n", sreport.bad[i].ToString().c_str());
    }
    std::vector<EvalSample> eval;
    std::map<std::string, int64_t> per_problem;
    for (const auto& s : *samples) {
      eval.push_back({s.problem_id, s.completion, s.completion_is_body});
      ++per_problem[s.problem_id];
    }
    int64_t min_n = 0;
    for (const auto& [id, count] : per_problem) min_n = min_n == 0 ? count : std::min(min_n, count);
    default_ks(std::max<int64_t>(min_n, 1));
    auto report = PassAtKOfSamples(**grader, *problems, eval, ks);
    if (!report.ok()) return Fail(fmt::format("--samples {}: {}", samples_path, report.status().message()));
    summary["pass_at_k"] = report->ToJson();
    markdown = "## pass@k\n\n" + report->ToMarkdown();
  } else {
    auto mc = LoadModelConfig(model_dir + "/config.json");
    if (!mc.ok()) return Fail(mc.status().message());
    auto tok = Tokenizer::FromFile(tokenizer_path.empty() ? model_dir : tokenizer_path);
    if (!tok.ok()) return Fail(tok.status().message());
    PolicyEvalOptions popt;
    auto chat = ChatTemplate::Named(chat_template);
    if (!chat.ok()) return Fail(fmt::format("--chat-template: {}", chat.status().message()));
    popt.chat = std::move(*chat);
    if (!instruction.empty()) popt.instruction = popt.instruction_cpp = instruction;
    popt.temperature = temperature;
    popt.top_p = top_p;
    popt.max_new_tokens = max_new_tokens;
    popt.seed = seed;
    popt.batch_prompts = batch;
    popt.stop_ids = DefaultStopTokenIds(**tok, mc->eos_token_id);
    auto policy = LoadCheckpoint(model_dir, LoadOptions(at::kCPU));
    if (!policy.ok()) return Fail(policy.status().message());
    (*policy)->eval();
    default_ks(n);
    auto report = PassAtKOfPolicy(**grader, **policy, **tok, *problems, n, ks, popt);
    if (!report.ok()) return Fail(report.status().message(), 1);
    summary["pass_at_k"] = report->ToJson();
    markdown = "## pass@k\n\n" + report->ToMarkdown();
    if (iterations > 0) {
      auto it = RunIterK(**grader, **policy, **tok, *problems, iter, popt);
      if (!it.ok()) return Fail(it.status().message(), 1);
      summary["iter_k"] = it->ToJson();
      markdown += "\n## Iter-" + std::to_string(iterations) + " (" + feedback + " feedback)\n\n" + it->ToMarkdown();
    }
  }
  std::fputs(markdown.c_str(), stdout);
  if (!json_path.empty()) {
    if (auto s = WriteFileAtomic(json_path, summary.dump(2) + "\n"); !s.ok()) return Fail(s.message(), 1);
    std::fprintf(stderr, "egca-eval: wrote %s\n", json_path.c_str());
  }
  if (!md_path.empty()) {
    if (auto s = WriteFileAtomic(md_path, markdown); !s.ok()) return Fail(s.message(), 1);
    std::fprintf(stderr, "egca-eval: wrote %s\n", md_path.c_str());
  }
  return 0;
}
