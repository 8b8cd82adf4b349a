#include "egca/cfg/boundaries.h"

#include <fmt/format.h>

#include <algorithm>

namespace egca::cfg {

BoundaryMap BoundaryMap::Compute(const FunctionCfg& scope, const BoundaryOptions& options) {
  BoundaryMap map;
  for (BlockId b = 0; b < scope.block_count(); ++b) {
    const BasicBlock& bb = scope.block(b);
    int32_t first = -1, count = 0;
    auto flush = [&](int32_t last) {
      if (first < 0) return;
      Boundary bd;
      bd.block = b;
      bd.first_statement = first;
      bd.statement_count = count;
      const SourceSpan& a = bb.statements[first].span;
      const SourceSpan& z = bb.statements[last].span;
      bd.span = a;
      bd.span.end_byte = z.end_byte;
      bd.span.end = z.end;
      map.boundaries_.push_back(bd);
      first = -1;
      count = 0;
    };
    for (size_t i = 0; i < bb.statements.size(); ++i) {
      if (!options.include_docstrings && bb.statements[i].kind == StmtKind::kDocstring) {
        continue;
      }
      if (first < 0) first = static_cast<int32_t>(i);
      ++count;
      if (options.granularity == BoundaryGranularity::kStatement) {
        flush(static_cast<int32_t>(i));
      }
    }
    if (first >= 0) {
      // Block granularity: one boundary from the first counted statement to the last.
      int32_t last = static_cast<int32_t>(bb.statements.size()) - 1;
      flush(last);
    }
  }
  std::stable_sort(
      map.boundaries_.begin(), map.boundaries_.end(),
      [](const Boundary& a, const Boundary& b) { return a.span.begin_byte < b.span.begin_byte; });
  for (size_t i = 0; i < map.boundaries_.size(); ++i) {
    map.boundaries_[i].index = static_cast<int32_t>(i);
  }
  return map;
}

std::vector<int32_t> BoundaryMap::FindAllOnLine(int32_t line) const {
  std::vector<int32_t> out;
  for (const Boundary& b : boundaries_) {
    if (b.span.begin.line <= line && line <= b.span.end.line) out.push_back(b.index);
  }
  return out;
}

std::optional<int32_t> BoundaryMap::FindLine(int32_t line) const {
  std::optional<int32_t> covering;
  for (const Boundary& b : boundaries_) {
    if (b.span.begin.line == line) return b.index;
    if (!covering && b.span.begin.line < line && line <= b.span.end.line) covering = b.index;
  }
  return covering;
}

std::optional<int32_t> BoundaryMap::FindPoint(SourcePoint p) const {
  for (const Boundary& b : boundaries_) {
    if (!(p < b.span.begin) && p < b.span.end) return b.index;
  }
  return std::nullopt;
}

std::optional<int32_t> BoundaryMap::FindBytes(uint32_t begin, uint32_t end) const {
  if (end < begin) std::swap(begin, end);
  for (const Boundary& b : boundaries_) {
    if (begin >= b.span.begin_byte && end <= b.span.end_byte && begin < b.span.end_byte) {
      return b.index;
    }
  }
  for (const Boundary& b : boundaries_) {
    if (b.span.Overlaps(begin, end == begin ? end + 1 : end)) return b.index;
  }
  return std::nullopt;
}

std::string BoundaryMap::Dump() const {
  std::string out;
  for (const Boundary& b : boundaries_) {
    out += fmt::format("b{} B{} {} ({} statement{})\n", b.index + 1, b.block, b.span.ToString(),
                       b.statement_count, b.statement_count == 1 ? "" : "s");
  }
  return out;
}

ProgramBoundaries ProgramBoundaries::Compute(const ProgramCfg& program,
                                             const BoundaryOptions& options) {
  ProgramBoundaries out;
  for (const FunctionCfg& f : program.scopes()) {
    out.keys_.push_back(ScopeKey{f.name, f.first_line});
    out.maps_.push_back(BoundaryMap::Compute(f, options));
  }
  return out;
}

std::optional<BoundaryRef> ProgramBoundaries::Resolve(std::string_view code_name,
                                                      int32_t first_line, int32_t line,
                                                      int32_t column) const {
  // Several lambdas/comprehensions can share (name, first line): the exact position
  // decides first, over all of them; then the line alone, first scope in source order.
  for (int pass = column >= 0 ? 0 : 1; pass < 2; ++pass) {
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (keys_[i].name != code_name || keys_[i].first_line != first_line) continue;
      std::optional<int32_t> b =
          pass == 0 ? maps_[i].FindPoint({line, column}) : maps_[i].FindLine(line);
      if (b) return BoundaryRef{static_cast<int32_t>(i), *b};
    }
  }
  return std::nullopt;
}

}  // namespace egca::cfg
