#include "egca/core/span.h"

#include <gtest/gtest.h>

namespace egca {
namespace {

TEST(LineIndex, PointsAndOffsetsRoundTrip) {
  std::string text = "def f(x):\n    return x >= 1\n\nz = 'é'\n";
  LineIndex idx(text);
  EXPECT_EQ(idx.line_count(), 5);
  EXPECT_EQ(idx.Offset({2, 4}), 14u);
  SourcePoint p = idx.Point(14);
  EXPECT_EQ(p.line, 2);
  EXPECT_EQ(p.column, 4);
  for (uint32_t b = 0; b <= text.size(); ++b) EXPECT_EQ(idx.Offset(idx.Point(b)), b);
  EXPECT_EQ(idx.LineText(2), "    return x >= 1");
  // Columns are bytes: 'é' is two bytes, so the closing quote is at column 7.
  EXPECT_EQ(idx.Point(static_cast<uint32_t>(text.rfind('\''))).column, 7);
}

TEST(LineIndex, SpanFromPointsFillsBytes) {
  std::string text = "a = 1\nif a >= 1:\n    pass\n";
  LineIndex idx(text);
  SourceSpan s = idx.SpanFromPoints({2, 3}, {2, 9});
  EXPECT_EQ(text.substr(s.begin_byte, s.end_byte - s.begin_byte), "a >= 1");
  EXPECT_EQ(s.ToString(), "2:3-2:9");
  EXPECT_TRUE(s.Overlaps(s.begin_byte, s.begin_byte + 1));
  EXPECT_FALSE(s.Overlaps(0, s.begin_byte));
  SourceSpan line = idx.LineSpan(3);
  EXPECT_EQ(text.substr(line.begin_byte, line.end_byte - line.begin_byte), "    pass");
}

TEST(LineIndex, ClampsOutOfRange) {
  LineIndex idx("ab\ncd");
  EXPECT_EQ(idx.Offset({9, 0}), 5u);
  EXPECT_EQ(idx.Offset({1, 99}), 3u);
  EXPECT_EQ(idx.Point(99).line, 2);
}

}  // namespace
}  // namespace egca
