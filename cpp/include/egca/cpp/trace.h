// Per-statement state snapshots of C++ programs and their earliest / last / random
// divergence from a reference's.
//
// Tracing: the candidate is instrumented source-to-source (egca-cpp-instrument, LibTooling:
// a snapshot before and after every statement of every function it defines, return values,
// typed printers for ints, floats, strings, vectors, maps, sets, pairs; never an
// uninitialized or out-of-scope variable), compiled with the test's main and run in the
// sandbox like any test run; the events come back on the result channel.
//
// Alignment: the candidate's lines are matched to the reference's by a longest common
// subsequence of their (whitespace-normalized) lines; the two event sequences are then
// walked in lockstep. The earliest divergence is the first event where they differ:
//   kUnmatchedStatement  the candidate executes a statement with no counterpart in the
//                        reference (a changed line): that statement;
//   kValue               same statement, a variable both have differs: the statement that
//                        produced it (for a "before" snapshot, the previous statement);
//   kControl             they execute different statements next: the innermost if / loop /
//                        switch that decided (the one the candidate just left, else the one
//                        it is in).
// The last divergence is found the same way walking both sequences from their ends; the
// random boundary is a seeded choice among the candidate's executed statements.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "egca/core/span.h"
#include "egca/diff/divergence.h"

namespace egca::cpp {

struct SnapshotEvent {
  char kind = 'A';          // 'B' before a statement, 'A' after it, 'R' a return value
  int32_t line = 0;         // the statement's first line (candidate lines, 1-based)
  int32_t parent_lo = 0;    // innermost enclosing if/loop/switch: its line range (0: none)
  int32_t parent_hi = 0;
  std::vector<std::pair<std::string, std::string>> vars;  // name -> printed value
};

struct CppTrace {
  std::vector<SnapshotEvent> events;
  bool stopped = false;  // the event cap was reached
};

// Parses the "T ..." lines of a run's result channel (bounded: malformed lines skipped).
CppTrace ParseTrace(const std::string& result);

// A deterministic text dump (one event per line) for golden tests and tools.
std::string DumpTrace(const CppTrace& trace);

enum class DivergenceKind { kNone, kUnmatchedStatement, kValue, kControl };
const char* DivergenceKindName(DivergenceKind kind);

struct CppDivergence {
  DivergenceKind kind = DivergenceKind::kNone;
  int64_t event = -1;   // index in the candidate's events
  int32_t line = 0;     // the blamed candidate line
  std::string why;      // "x: 3 vs 4 (reference)", "executes line 7, reference line 9", ...
  bool ended = false;   // one execution stopped while the other went on
  std::optional<SourceSpan> span;  // the blamed line in the candidate source
};

struct CppLocalization {
  CppDivergence earliest;
  CppDivergence last;
  std::optional<SourceSpan> random_boundary;
  int32_t random_line = 0;
  std::string note;  // why nothing was found, when so
};

// Aligns the candidate's trace against the reference's (sources give the line matching
// and the spans). `seed` picks the random boundary.
CppLocalization Localize(const std::string& candidate, const std::string& reference,
                         const CppTrace& candidate_trace, const CppTrace& reference_trace,
                         uint64_t seed);

// The same localization as a diff::DivergenceReport, the structure the route views
// (tools/trace_view: text, JSON, HTML) and the batch records read for Python:
//   steps     one per executed statement: each 'A' (after) and 'R' (return) snapshot, and
//             a 'B' (before) snapshot only where a divergence is blamed on it; block = -1,
//             function = "" (snapshots do not name their function), state = the
//             snapshot's variables, changed = those that differ from the previous
//             snapshot's, returned / return_value for 'R';
//   pairs     the lockstep walk the earliest divergence came from (event k of the
//             candidate with event k of the reference), then the longer side's remaining
//             steps as gaps;
//   earliest  / last   kind value ('R': return), control (unmatched statements and a
//             different next statement), ended (one side stopped); variables = every
//             variable both snapshots have that differs; context = the candidate's snapshot.
diff::DivergenceReport ToDivergenceReport(const std::string& candidate,
                                          const std::string& reference,
                                          const CppTrace& candidate_trace,
                                          const CppTrace& reference_trace,
                                          const CppLocalization& localization);

// Candidate line -> reference line (0: no counterpart), by LCS of normalized lines.
std::vector<int32_t> MatchLines(const std::string& candidate, const std::string& reference);

}  // namespace egca::cpp
