// Earliest execution divergence between a candidate program and its reference (EGCA
// section 3.6, eq. 7-9): both programs run the same input under the tracer; the two event
// streams are cut into steps (one step = one visit of one frame to one basic block, the
// boundary b_k of appendix D.1, with the frame's state S_k right after the block ran),
// candidate steps are aligned to reference steps in execution order over the structural
// block matching of egca::cfg, and k* is the first aligned step where
//   - a mapped variable's value after the step differs (kValue), or the returned value
//     differs (kReturnValue), or
//   - control goes to a block that does not correspond to the reference's next block
//     (kControl; blamed on the last step both executed alike: the decision that sent the
//     candidate elsewhere, e.g. the `if` whose condition differs), or
//   - one program raises where the other does not (kException), or one stream ends while
//     the other goes on (kEnded), or
//   - what the candidate writes to standard output first differs from what the reference
//     writes (kOutput; blamed on the statement that wrote the first differing byte, whatever
//     the alignment: output is observable state even where the reference keeps none).
// Variables are mapped candidate -> reference per matched scope pair: the same name first,
// then the remaining ones by the similarity of their value histories (renamed variables).
//
//   auto cand = PreparedProgram::Build(candidate_source);
//   auto ref = PreparedProgram::Build(reference_source);
//   DivergenceReport r = FindDivergence(*cand, cand_trace, *ref, ref_trace, {});
//   if (r.earliest) ... r.earliest->span ...
//
// Bounded work: steps are built from whatever the traces hold; a truncated trace (event
// cap, or a candidate stopped by a timeout) still localizes a divergence that lies inside
// it, and reaching the end of a truncated trace is not itself a divergence.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "egca/cfg/boundaries.h"
#include "egca/cfg/cfg.h"
#include "egca/cfg/matching.h"
#include "egca/core/span.h"
#include "egca/core/status.h"
#include "egca/tracer/trace.pb.h"

namespace egca::diff {

// A program parsed once, with its CFGs and block boundaries: build it once per reference
// and reuse it for every candidate of the problem. Immutable after Build(); safe to share
// between threads.
class PreparedProgram {
 public:
  // Errors: the program does not parse (a SYNTAX sample never reaches the diff), or
  // egca::cfg refused it (nesting, size).
  static StatusOr<std::shared_ptr<const PreparedProgram>> Build(std::string source);

  const std::string& source() const { return source_; }
  const cfg::ProgramCfg& cfg() const { return cfg_; }
  const cfg::ProgramBoundaries& boundaries() const { return boundaries_; }
  const LineIndex& lines() const { return *lines_; }

 private:
  PreparedProgram() = default;
  std::string source_;
  cfg::ProgramCfg cfg_;
  cfg::ProgramBoundaries boundaries_;
  std::unique_ptr<LineIndex> lines_;  // borrows source_
};

struct DivergenceOptions {
  cfg::MatchOptions match;
  // After a control divergence, how many steps ahead on each side to look for the two
  // executions to meet again (needed to find the last divergence). 0: stop at the first.
  int32_t resync_window = 48;
  // Value histories used to map renamed variables: a pair needs at least this fraction
  // of agreeing values.
  double rename_min_agreement = 0.5;
  // Seed of the random executed boundary (the ablation target); the program's source is
  // mixed in, so different candidates get different draws from one seed.
  uint64_t random_seed = 0;
  // Align against only the first this-many events of the reference's trace (0: all), as
  // if it were truncated there. The router widens it while the prefix shows no divergence:
  // a candidate that failed its first assertion is not aligned against a whole check.
  uint64_t max_reference_events = 0;
  // `earliest` is the first divergence whose confidence is at least this (the first of all
  // when none is): an execution that merely ended earlier (0.3) does not hide a
  // better-founded divergence behind it.
  double earliest_min_confidence = 0.4;
  // Compare what the programs write to standard output (kOutput). On for tests judged on
  // their output (stdin/stdout); off where output is not judged (a debugging print in a
  // function under a call or assert test is harmless).
  bool compare_output = false;

  DivergenceOptions& set_resync_window(int32_t v) {
    resync_window = v;
    return *this;
  }
  DivergenceOptions& set_random_seed(uint64_t v) {
    random_seed = v;
    return *this;
  }
};

enum class DivergenceKind {
  kValue,        // a mapped variable differs after the step
  kReturnValue,  // the frame returned a different value
  kControl,      // the next block does not correspond to the reference's
  kException,    // one side raised an exception the other did not
  kEnded,        // one execution ended while the other continued
  kOutput,       // the candidate's standard output first differs here
};
// "value", "return", "control", "exception", "ended", "output".
const char* DivergenceKindName(DivergenceKind kind);

// One visit of one frame to one basic block.
struct Step {
  int32_t frame = 0;  // activation number (trace Event.frame)
  int32_t depth = 0;
  int32_t scope = -1;       // ProgramCfg scope index; -1 if the code object is unknown
  int32_t block = -1;       // BasicBlock id in that scope; -1 if no block covers the line
  std::string function;     // co_qualname
  int32_t first_line = 0;   // line of the first event of the visit
  int32_t last_line = 0;    // line of the last LINE event of the visit
  int64_t first_event = 0;  // event indices in the trace, inclusive
  int64_t last_event = 0;
  SourceSpan block_span;      // the block's span (empty if block < 0)
  SourceSpan last_statement;  // span of the last statement executed in the visit
  // The frame's variables right after the visit (name, canonical text), in frame order.
  std::vector<std::pair<std::string, std::string>> state;
  std::vector<std::string> changed;  // names assigned during the visit
  bool returned = false;
  std::string return_value;  // canonical text when returned
  std::string exception;     // "Type: message" if one was raised in the visit
};

// Candidate step `candidate` aligned with reference step `reference`; -1 on one side is a
// gap (a step with no counterpart: an unmatched block, or skipped while resynchronizing).
struct AlignedPair {
  int32_t candidate = -1;
  int32_t reference = -1;
  bool diverges = false;  // a divergence was recorded at this pair
};

struct VariableDiff {
  std::string candidate_name;
  std::string reference_name;
  std::string candidate_value;  // canonical text; "<unset>" when not bound
  std::string reference_value;
};

struct Divergence {
  DivergenceKind kind = DivergenceKind::kValue;
  int32_t pair = -1;                    // index into Alignment::pairs where it was detected
  int32_t candidate_step = -1;          // the blamed candidate step
  int32_t reference_step = -1;          // its reference counterpart (-1 if none)
  std::string function;                 // candidate function of the blamed step
  int32_t line = 0;                     // candidate line of the blamed statement
  SourceSpan span;                      // the blamed statement, in the candidate's source
  SourceSpan block_span;                // the blamed block (boundary), in the candidate's source
  std::vector<VariableDiff> variables;  // kValue / kReturnValue: what differs
  // The candidate frame's variables at the blamed step (loop counters etc.), frame order.
  std::vector<std::pair<std::string, std::string>> context;
  std::string detail;  // one line for people
  // How sure the analysis is that `span` is the cause, in [0, 1] (docs/divergence.md,
  // "Confidence"): high for a difference on a variable paired by name, a control decision
  // or an exception; lower for a return or output difference (where the wrong value became
  // visible, not necessarily where it was made) and for variables paired only weakly.
  double confidence = 0;
  std::string evidence;  // why this span: the rule and what it rests on, one line
};

struct VariableMapping {
  std::string function;  // candidate scope's qualified name
  std::string candidate;
  std::string reference;
  bool renamed = false;  // matched by value history, not by name
  // How the pair was made: "name", "loop" (targets of two paired `for` headers), "history"
  // (value histories and assignment sites agree, `agreement` = the histories'), "binding"
  // (neither: the same first value, in order of first binding; weak) or "sites" (assigned
  // in the same blocks, nothing else paired them; weak).
  std::string basis = "name";
  double agreement = 1;
};

struct Alignment {
  std::vector<Step> candidate_steps;
  std::vector<Step> reference_steps;
  std::vector<AlignedPair> pairs;
  std::vector<VariableMapping> variables;
  bool candidate_truncated = false;
  bool reference_truncated = false;
};

struct DivergenceReport {
  Alignment alignment;
  std::optional<Divergence> earliest;  // k*
  std::optional<Divergence> last;      // the last divergence found (ablation target)
  int32_t divergence_count = 0;
  // A uniformly drawn executed candidate boundary (ablation target), and all of them
  // (distinct block spans executed by the candidate, in source order).
  std::optional<SourceSpan> random_boundary;
  std::vector<SourceSpan> executed_boundaries;
  std::string note;  // why nothing was localized, when earliest is empty
};

// Aligns the candidate's trace with the reference's and finds the divergences. The traces
// must come from running `candidate` / `reference` (their sources) on the same input.
// Never fails on program behaviour; an empty report (no earliest) with a note when the
// executions agree as far as they were traced.
DivergenceReport FindDivergence(const PreparedProgram& candidate,
                                const tracer::proto::Trace& candidate_trace,
                                const PreparedProgram& reference,
                                const tracer::proto::Trace& reference_trace,
                                const DivergenceOptions& options = {});

// Deterministic text dumps (golden tests, `egca-trace`). The alignment dump has one line
// per aligned pair: index, candidate step (function:line, block), reference step, changed
// variables and a `<<` marker on divergences; up to `max_pairs` pairs (0 = all).
std::string DumpAlignment(const DivergenceReport& report, size_t max_pairs = 0);
std::string DumpDivergence(const Divergence& divergence);
std::string DumpReport(const DivergenceReport& report);

}  // namespace egca::diff
