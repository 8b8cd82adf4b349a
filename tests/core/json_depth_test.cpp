// The JSON nesting bound checked wherever JSON enters egca (egca/core/json_depth.h).
#include "egca/core/json_depth.h"

#include <gtest/gtest.h>

#include <string>

namespace egca {
namespace {

std::string Nested(int levels, char open = '[', char close = ']') {
  return std::string(levels, open) + std::string(levels, close);
}

TEST(JsonDepth, CountsBracketsOutsideStrings) {
  EXPECT_EQ(ScanJsonDepth("1").depth, 0);
  EXPECT_EQ(ScanJsonDepth("[1, {\"a\": [2]}]").depth, 3);
  // brackets inside strings, escaped quotes and escaped backslashes are not nesting
  EXPECT_EQ(ScanJsonDepth(R"(["[[[[", "\"[[[", "\\", [1]])").depth, 2);
  EXPECT_EQ(ScanJsonDepth(R"({"k\"{{": "}}}"})").depth, 1);
  // unbalanced closers do not go below zero (the parser reports the error)
  EXPECT_EQ(ScanJsonDepth("]]][[1]]").depth, 2);
}

TEST(JsonDepth, BoundIsInclusive) {
  EXPECT_TRUE(CheckJsonDepth(Nested(kMaxJsonDepth), "x").ok());
  EXPECT_TRUE(CheckJsonDepth(Nested(kMaxJsonDepth, '{', '}'), "x").ok());
  Status deep = CheckJsonDepth(Nested(kMaxJsonDepth + 1), "request body");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(deep.message(), "request body: JSON nested deeper than 256 levels (byte 256)");
  // mixed objects and arrays count alike; an explicit bound is honoured
  EXPECT_EQ(ScanJsonDepth(R"({"a":[{"b":[1]}]})", 3).exceeded_at, 11);
  EXPECT_EQ(ScanJsonDepth(R"({"a":[{"b":[1]}]})", 4).exceeded_at, -1);
}

TEST(JsonDepth, StopsAtTheFirstExcessOfAHugeInput) {
  const std::string huge = Nested(1'500'000);  // 3 MB: the request that crashed egca-serve
  JsonDepthScan scan = ScanJsonDepth(huge);
  EXPECT_EQ(scan.exceeded_at, kMaxJsonDepth);
  EXPECT_EQ(scan.depth, kMaxJsonDepth + 1);
  // sequential documents (JSONL) each within the bound pass as one text
  std::string lines;
  for (int i = 0; i < 1000; ++i) lines += Nested(200) + "\n";
  EXPECT_TRUE(CheckJsonDepth(lines, "x").ok());
}

}  // namespace
}  // namespace egca
