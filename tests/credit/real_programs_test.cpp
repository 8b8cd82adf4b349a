// The span -> token mapping on real programs: every HumanEval problem's prompt + canonical
// solution, wrapped the way a chat model answers (prose, a Markdown fence, prose), split
// into word-piece tokens. Each non-blank code line in turn is the LOGIC divergence span,
// as the router would report a one-line block.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/core/span.h"
#include "egca/credit/token_credit.h"

namespace egca::credit {
namespace {

// Word pieces, roughly what a BPE pre-tokenizer yields: an optional leading space glued to
// a run of identifier characters, runs of other spaces, runs of newlines, and single
// punctuation bytes; a multi-byte UTF-8 character stays whole.
std::vector<TokenByteRange> WordPieces(const std::string& text) {
  auto ident = [](unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; };
  std::vector<TokenByteRange> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i + 1;
    const unsigned char c = text[i];
    if (c == ' ' && j < text.size() && ident(text[j])) {
      while (j < text.size() && ident(text[j])) ++j;
    } else if (ident(c)) {
      while (j < text.size() && ident(text[j])) ++j;
    } else if (c == ' ' || c == '\n') {
      while (j < text.size() && text[j] == static_cast<char>(c)) ++j;
    }
    out.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(j)});
    i = j;
  }
  return out;
}

TEST(RealPrograms, EveryHumanEvalLineMapsToItsTokens) {
  const std::string path = std::string(EGCA_DATA_DIR) + "/humaneval/HumanEval.jsonl.gz";
  StatusOr<std::string> data = ReadMaybeGzipFile(path);
  if (!data.ok()) GTEST_SKIP() << "real data not available: " << data.status().ToString();

  size_t problems = 0;
  size_t lines_checked = 0;
  size_t start = 0;
  while (start < data->size()) {
    size_t end = data->find('\n', start);
    if (end == std::string::npos) end = data->size();
    const std::string line = data->substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    const nlohmann::json record = nlohmann::json::parse(line);
    const std::string code =
        record.at("prompt").get<std::string>() + record.at("canonical_solution").get<std::string>();
    const std::string head = "Here is the completed function:\n\n```python\n";
    const std::string completion = head + code + "```\n\nIt passes the examples.\n";
    const uint32_t code_offset = static_cast<uint32_t>(head.size());
    const LineIndex lines(code);
    ++problems;

    CreditSample s;
    s.mode = FailureMode::kLogic;
    s.advantage = -1.0;
    s.token_bytes = WordPieces(completion);
    s.code_offset = code_offset;
    TokenCredit credit;
    for (int32_t l = 1; l <= lines.line_count(); ++l) {
      const SourceSpan span = lines.LineSpan(l);
      if (lines.LineText(l).find_first_not_of(" \t\r") == std::string_view::npos) continue;
      s.earliest_divergence = span;
      ASSERT_TRUE(AssignTokenCreditInto(s, {}, &credit).ok());
      ASSERT_EQ(credit.placement, CreditPlacement::kLocalized)
          << record.at("task_id") << " line " << l;
      const uint32_t b = code_offset + span.begin_byte;
      const uint32_t e = code_offset + span.end_byte;
      double sum = 0.0;
      std::string credited_text;
      for (size_t t = 0; t < s.token_bytes.size(); ++t) {
        const TokenByteRange tok = s.token_bytes[t];
        const bool overlaps = tok.begin < e && b < tok.end;
        sum += credit.advantages[t];
        // Credit exactly on the tokens touching the line: never in the prose or fence.
        ASSERT_EQ(credit.advantages[t] != 0.0, overlaps)
            << record.at("task_id") << " line " << l << " token " << t;
        if (overlaps) credited_text += completion.substr(tok.begin, tok.end - tok.begin);
      }
      ASSERT_NEAR(sum, -1.0, 1e-12);
      // The credited tokens cover the whole line text.
      ASSERT_NE(credited_text.find(std::string(lines.LineText(l))), std::string::npos)
          << record.at("task_id") << " line " << l;
      ++lines_checked;
    }
  }
  EXPECT_EQ(problems, 164u);
  EXPECT_GT(lines_checked, 2000u);
}

}  // namespace
}  // namespace egca::credit
