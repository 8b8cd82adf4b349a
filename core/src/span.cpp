#include "egca/core/span.h"

#include <algorithm>

#include <fmt/format.h>

namespace egca {

std::string SourceSpan::ToString() const {
  return fmt::format("{}:{}-{}:{}", begin.line, begin.column, end.line, end.column);
}

LineIndex::LineIndex(std::string_view text) : text_(text) {
  line_starts_.push_back(0);
  for (uint32_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') line_starts_.push_back(i + 1);
  }
}

uint32_t LineIndex::Offset(SourcePoint p) const {
  if (p.line <= 0) return 0;
  if (p.line > line_count()) return static_cast<uint32_t>(text_.size());
  uint32_t start = line_starts_[p.line - 1];
  uint32_t line_end = p.line < line_count() ? line_starts_[p.line] : text_.size();
  return std::min<uint32_t>(start + std::max(0, p.column), line_end);
}

SourcePoint LineIndex::Point(uint32_t byte) const {
  byte = std::min<uint32_t>(byte, text_.size());
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), byte);
  int32_t line = static_cast<int32_t>(it - line_starts_.begin());
  return SourcePoint{line, static_cast<int32_t>(byte - line_starts_[line - 1])};
}

SourceSpan LineIndex::SpanFromPoints(SourcePoint begin, SourcePoint end) const {
  SourceSpan s;
  s.begin_byte = Offset(begin);
  s.end_byte = Offset(end);
  s.begin = Point(s.begin_byte);
  s.end = Point(s.end_byte);
  return s;
}

SourceSpan LineIndex::SpanFromBytes(uint32_t begin, uint32_t end) const {
  SourceSpan s;
  s.begin_byte = std::min<uint32_t>(begin, text_.size());
  s.end_byte = std::min<uint32_t>(std::max(begin, end), text_.size());
  s.begin = Point(s.begin_byte);
  s.end = Point(s.end_byte);
  return s;
}

SourceSpan LineIndex::LineSpan(int32_t line) const {
  std::string_view t = LineText(line);
  uint32_t b = Offset({line, 0});
  return SpanFromBytes(b, b + static_cast<uint32_t>(t.size()));
}

std::string_view LineIndex::LineText(int32_t line) const {
  if (line <= 0 || line > line_count()) return {};
  uint32_t start = line_starts_[line - 1];
  uint32_t end = line < line_count() ? line_starts_[line] : text_.size();
  std::string_view t = text_.substr(start, end - start);
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.remove_suffix(1);
  return t;
}

}  // namespace egca
