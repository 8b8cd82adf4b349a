// Execution boundaries B(y) = (b_1, ..., b_K) of one scope (EGCA, eq. 7 and appendix D.1):
// the units a trace is cut into and credit is localized to. A boundary is a basic block
// (default) or a single statement, always with one contiguous source span, ordered by
// source position. The divergence engine maps every tracer event of a code object onto
// the boundaries of the matching scope (ProgramCfg::FindScope(co_name, co_firstlineno)).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "egca/cfg/cfg.h"
#include "egca/core/span.h"

namespace egca::cfg {

enum class BoundaryGranularity : uint8_t { kBlock, kStatement };

struct BoundaryOptions {
  BoundaryGranularity granularity = BoundaryGranularity::kBlock;
  // Docstrings execute nothing (CPython emits no line event for them).
  bool include_docstrings = false;

  BoundaryOptions& set_granularity(BoundaryGranularity g) {
    granularity = g;
    return *this;
  }
  BoundaryOptions& set_include_docstrings(bool v) {
    include_docstrings = v;
    return *this;
  }
};

struct Boundary {
  int32_t index = 0;            // position k-1 in B(y): 0-based, source order
  BlockId block = 0;            // the basic block it lies in
  int32_t first_statement = 0;  // index into block's statements
  int32_t statement_count = 0;
  SourceSpan span;  // first statement's begin .. last statement's end
};

class BoundaryMap {
 public:
  // Boundaries of `scope` (borrowed only during the call). Entry and Exit have none.
  static BoundaryMap Compute(const FunctionCfg& scope, const BoundaryOptions& options = {});

  const std::vector<Boundary>& boundaries() const { return boundaries_; }
  size_t size() const { return boundaries_.size(); }

  // Boundary containing a line event: the first (in source order) whose first statement
  // starts on `line`, else the one whose span covers `line` (a continuation line of a
  // multi-line statement). nullopt if no statement is on that line.
  std::optional<int32_t> FindLine(int32_t line) const;
  // Boundary whose span contains the point (line 1-based, column 0-based byte).
  std::optional<int32_t> FindPoint(SourcePoint point) const;
  // Boundary containing byte range [begin, end) (e.g. an instruction's position-table
  // span), or, failing that, the first boundary overlapping it.
  std::optional<int32_t> FindBytes(uint32_t begin, uint32_t end) const;
  // All boundaries with a statement on `line` (several statements on one line).
  std::vector<int32_t> FindAllOnLine(int32_t line) const;

  // "b1 B2 2:4-3:17 (2 statements)" per line.
  std::string Dump() const;

 private:
  std::vector<Boundary> boundaries_;
};

// A tracer event's place: which scope, which boundary in it.
struct BoundaryRef {
  int32_t scope = -1;     // index into ProgramCfg::scopes()
  int32_t boundary = -1;  // index into that scope's BoundaryMap
  bool operator==(const BoundaryRef& o) const { return scope == o.scope && boundary == o.boundary; }
};

// Boundaries of every scope of a program, and the resolution of tracer events onto them.
// Holds copies of what it needs: the ProgramCfg may go away afterwards.
class ProgramBoundaries {
 public:
  static ProgramBoundaries Compute(const ProgramCfg& program, const BoundaryOptions& options = {});

  size_t scope_count() const { return maps_.size(); }
  const BoundaryMap& scope(int32_t index) const { return maps_.at(index); }

  // Resolves an event of code object (co_name, co_firstlineno) at `line`, and, when the
  // 3.11 position table gives one, at the instruction's start `column` (0-based UTF-8
  // byte; -1 if unknown). nullopt if no scope has that code object or no boundary covers
  // the position (e.g. the "def" line of a function as seen from inside it).
  std::optional<BoundaryRef> Resolve(std::string_view code_name, int32_t first_line, int32_t line,
                                     int32_t column = -1) const;

 private:
  struct ScopeKey {
    std::string name;
    int32_t first_line;
  };
  std::vector<ScopeKey> keys_;
  std::vector<BoundaryMap> maps_;
};

}  // namespace egca::cfg
