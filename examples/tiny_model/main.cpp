// tiny_model: create a random tiny checkpoint, load it back, sample from it.
//
//   tiny_model_example OUT_DIR [--family qwen3|qwen2|llama] [--seed N]
//                      [--dtype float32|bfloat16|float16] [--shard-bytes N]
//                      [--samples G] [--new-tokens N] [--vocab N] [--tokenizer FILE]
// --vocab 151936 --tokenizer .../tokenizer.json: a model that takes Qwen3's real token ids,
// with the tokenizer copied beside it (what egca-train's example config trains).
//
// OUT_DIR then loads in transformers: AutoModelForCausalLM.from_pretrained(OUT_DIR).
#include <ATen/ATen.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "egca/trainer/policy/checkpoint.h"
#include "egca/trainer/policy/sampler.h"

using namespace egca::trainer;

int main(int argc, char** argv) {
  CLI::App app{"Create a random tiny decoder checkpoint, reload it and sample from it"};
  std::string out_dir, family = "qwen3", dtype = "float32";
  uint64_t seed = 0;
  int64_t shard_bytes = 0, samples = 4, new_tokens = 16, vocab = 512;
  std::string tokenizer;
  app.add_option("out_dir", out_dir, "checkpoint directory to write")->required();
  app.add_option("--family", family, "qwen3, qwen2 or llama")
      ->check(CLI::IsMember({"qwen3", "qwen2", "llama"}));
  app.add_option("--seed", seed, "random init seed");
  app.add_option("--dtype", dtype, "storage dtype")
      ->check(CLI::IsMember({"float32", "bfloat16", "float16"}));
  app.add_option("--shard-bytes", shard_bytes, "shard size limit (0 = one file)");
  app.add_option("--samples", samples, "completions to sample");
  app.add_option("--new-tokens", new_tokens, "tokens per completion");
  app.add_option("--vocab", vocab, "vocabulary size (151936 for Qwen3's tokenizer)");
  app.add_option("--tokenizer", tokenizer, "tokenizer.json to copy into OUT_DIR")->check(CLI::ExistingFile);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return e.get_exit_code() == 0 ? app.exit(e) : (app.exit(e), 2);
  }

  ModelConfig c;
  c.family = family == "llama"   ? ModelFamily::kLlama
             : family == "qwen2" ? ModelFamily::kQwen2
                                 : ModelFamily::kQwen3;
  c.model_type = family;
  c.vocab_size = vocab;
  c.max_position_embeddings = 8192;
  c.tie_word_embeddings = c.family == ModelFamily::kQwen2 || vocab > 4096;
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.torch_dtype = dtype;

  if (auto s =
          CreateRandomCheckpoint(out_dir, c, seed, SaveOptions().set_max_shard_bytes(shard_bytes));
      !s.ok()) {
    std::fprintf(stderr, "tiny_model: %s\n", s.ToString().c_str());
    return 1;
  }
  if (!tokenizer.empty()) {
    std::error_code ec;
    std::filesystem::copy_file(tokenizer, out_dir + "/tokenizer.json",
                               std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) {
      std::fprintf(stderr, "tiny_model: %s: %s\n", tokenizer.c_str(), ec.message().c_str());
      return 1;
    }
  }
  auto model = LoadCheckpoint(out_dir, LoadOptions(at::kCPU));
  if (!model.ok()) {
    std::fprintf(stderr, "tiny_model: %s\n", model.status().ToString().c_str());
    return 1;
  }
  // The reloaded model equals a fresh model with the same seed rounded to the storage dtype.
  DecoderModel fresh(c);
  fresh.InitRandom(seed);
  {
    at::NoGradGuard no_grad;
    const at::ScalarType st = *ParseTorchDtype(dtype);
    for (auto& p : fresh.named_parameters(true)) p.value().copy_(p.value().to(st).to(at::kFloat));
  }
  at::NoGradGuard no_grad;
  at::Tensor ids = at::arange(0, 12, at::kLong).view({1, 12});
  const bool same = at::equal(fresh.Forward(ids), (*model)->Forward(ids));
  std::printf("wrote %s (%s, %s%s); loaded back: logits %s\n", out_dir.c_str(), family.c_str(),
              dtype.c_str(), shard_bytes > 0 ? ", sharded" : "", same ? "identical" : "DIFFER");

  SamplingOptions o;
  o.set_num_samples_per_prompt(samples)
      .set_max_new_tokens(new_tokens)
      .set_seed(seed)
      .set_top_p(0.95);
  auto completions = Generate(**model, {{1, 2, 3, 4}}, o);
  if (!completions.ok()) {
    std::fprintf(stderr, "tiny_model: %s\n", completions.status().ToString().c_str());
    return 1;
  }
  for (const auto& comp : *completions) {
    double sum = 0;
    for (float lp : comp.policy_log_probs) sum += lp;
    std::printf("sample %lld: %s  (log p = %.3f, %s)\n", static_cast<long long>(comp.sample_index),
                fmt::format("{}", fmt::join(comp.token_ids, " ")).c_str(), sum,
                FinishReasonName(comp.finish_reason));
  }
  return same ? 0 : 1;
}
