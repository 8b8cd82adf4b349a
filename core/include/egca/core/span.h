// Source spans: where a statement, block or error sits in a program's text.
// One convention everywhere in egca:
//   - bytes: [begin, end) offsets into the UTF-8 source text;
//   - lines: 1-based; columns: 0-based UTF-8 byte offsets within the line (as CPython's
//     position table and tree-sitter both report them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace egca {

struct SourcePoint {
  int32_t line = 0;    // 1-based; 0 = unknown
  int32_t column = 0;  // 0-based byte column within the line
  bool operator==(const SourcePoint& o) const { return line == o.line && column == o.column; }
  bool operator<(const SourcePoint& o) const {
    return line != o.line ? line < o.line : column < o.column;
  }
};

struct SourceSpan {
  uint32_t begin_byte = 0;  // inclusive
  uint32_t end_byte = 0;    // exclusive
  SourcePoint begin;
  SourcePoint end;  // position of end_byte

  bool empty() const { return end_byte <= begin_byte; }
  bool valid() const { return begin.line > 0; }
  bool Contains(uint32_t byte) const { return byte >= begin_byte && byte < end_byte; }
  bool Overlaps(uint32_t b, uint32_t e) const { return b < end_byte && begin_byte < e; }
  bool operator==(const SourceSpan& o) const {
    return begin_byte == o.begin_byte && end_byte == o.end_byte && begin == o.begin &&
           end == o.end;
  }
  // "3:4-3:17" (lines 1-based, columns 0-based)
  std::string ToString() const;
};

// Maps between byte offsets and (line, column) for one source text.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text);
  // Byte offset of (line, column); clamps to the text. line is 1-based.
  uint32_t Offset(SourcePoint p) const;
  SourcePoint Point(uint32_t byte) const;
  // A span from two points / from two byte offsets, with the other half filled in.
  SourceSpan SpanFromPoints(SourcePoint begin, SourcePoint end) const;
  SourceSpan SpanFromBytes(uint32_t begin, uint32_t end) const;
  // Span of whole line `line` without its newline.
  SourceSpan LineSpan(int32_t line) const;
  int32_t line_count() const { return static_cast<int32_t>(line_starts_.size()); }
  std::string_view LineText(int32_t line) const;

 private:
  std::string_view text_;  // Borrowed: the caller keeps the text alive.
  std::vector<uint32_t> line_starts_;
};

}  // namespace egca
