// The per-sample result of a batch run, as egca-batch stores it (one JSON line per sample
// in the result store) and as the report reads it back. Everything here is plain data:
// the runner fills it from a gates::RouteResult, the store serializes it, the report
// aggregates it.
//
// Offsets: a span is given in the program that was run (bytes [begin, end), lines 1-based,
// columns 0-based bytes, egca's SourceSpan convention) and, where the program text came
// from the model's completion, in the completion too: the credit operator assigns
// advantages to completion tokens, so it needs completion offsets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "egca/core/span.h"
#include "egca/core/status.h"
#include "egca/credit/token_credit.h"

namespace egca::batch {

using credit::FailureMode;

// 64-bit FNV-1a: stable across platforms and runs (shard assignment, file digests). Not
// collision-resistant: never an identity a candidate chooses the input of (sample keys are
// SHA-256, runner.h SampleKey).
uint64_t Fnv1a64(std::string_view data, uint64_t seed = 0xcbf29ce484222325ULL);
// "%016x", and its inverse (false on anything else).
std::string HexKey(uint64_t key);
bool ParseHexKey(std::string_view text, uint64_t* key);

// A sample key as stored: 64 lowercase hex digits (SHA-256, store format 2), or 16 (the
// 64-bit FNV-1a keys of store format 1, readable but never resumed).
bool IsSampleKeyText(std::string_view text);

// A span of the program and, when it lies in text the model generated, the same span in
// the completion.
struct LocatedSpan {
  SourceSpan program;
  bool in_completion = false;  // false: the span starts in the prompt (HumanEval helpers)
  SourceSpan completion;       // valid when in_completion
};

struct ViolationRecord {
  std::string constraint;  // checker name
  std::string message;
  std::optional<SourceSpan> span;  // in the program; absent: the whole program
};

// Which reference a problem's samples were routed against.
enum class ReferenceKind {
  kGiven,    // a reference solution of the data set that passes its own tests
  kStandIn,  // no usable reference: the passing candidate with the smallest sample key
  kNone,     // no usable reference and no passing candidate: no I_cmp gate, no localization
};
const char* ReferenceKindName(ReferenceKind kind);  // "given", "stand_in", "none"
std::optional<ReferenceKind> ParseReferenceKind(std::string_view name);

// How one problem was set up for routing; one store line per problem, written before its
// samples, so a resumed run reuses the same reference (and stand-in) without regrading.
struct ProblemResolution {
  std::string problem;
  std::string dataset;
  std::string difficulty;
  // How the problem is tested: "assert" (HumanEval check / MBPP asserts), "call" (function
  // calls), "stdin" (standard input/output), "stdin (call-based)" (an APPS problem with
  // starter code whose tests are stdin-encoded calls, as MapCoder grades them), "mixed".
  std::string kind;
  int32_t tests = 0;
  int32_t references = 0;  // reference solutions the data set gives
  ReferenceKind reference = ReferenceKind::kGiven;
  int32_t reference_index = -1;  // kGiven: which of the data set's references
  std::string stand_in_key;      // kStandIn: the stand-in sample's key (dup 0)
  // A given reference failed its own tests (first failing one: "test 3: WRONG_ANSWER ...").
  bool reference_failed = false;
  std::string reference_failure;
};

struct SampleRecord {
  // Identity: (problem, key, dup). key = SampleKey: SHA-256 (hex) of the model, how the
  // completion is read and the completion; dup numbers identical samples of one problem in
  // input order (identical programs are routed once; every copy is its own record).
  std::string problem;
  std::string key;
  int32_t dup = 0;
  std::string model;
  std::string difficulty;
  std::string origin;  // "<file>:<line>"
  std::string sample_id;  // Sample::sample_id ("" when the sample file gives none)
  // The program that was run (datasets::ProgramOf), so that one sample can be shown again
  // (`egca-batch show`) without the sample file.
  std::string program;
  // The completion holds no code (datasets::SampleProgram::empty): graded, never
  // localized, and counted apart from the modes in the report.
  bool empty = false;

  FailureMode mode = FailureMode::kCorrect;
  std::string reason;
  // First failing test's verdict, with the exception type when there is one
  // ("WRONG_ANSWER", "TIMEOUT", "RUNTIME_ERROR (AssertionError)"); "" if every test passed.
  std::string verdict;
  int32_t passed = 0;
  int32_t tests = 0;
  double r_hat = 0;  // passed / tests
  bool i_c = true;   // every constraint satisfied
  std::vector<ViolationRecord> violations;
  std::optional<bool> i_cmp;         // absent: SYNTAX, or no reference to compare with
  std::optional<double> similarity;  // structural similarity behind I_cmp

  // K = execution boundaries of the program (egca::cfg block boundaries summed over every
  // scope); absent when the program does not parse.
  std::optional<int32_t> k;
  // LOGIC with a divergence: distinct boundaries the candidate executed on the localized
  // test, and k* = 1-based rank of the earliest divergence's block among them.
  std::optional<int32_t> k_executed;
  std::optional<int32_t> k_star;

  bool localized = false;       // LOGIC with an earliest divergence (the trigger)
  std::string divergence_kind;  // "value", "control", ... (localized only)
  // Localized only: how sure the analysis is that the earliest span is the cause, and the
  // rule it rests on (gates::RouteResult::localization_confidence / _evidence).
  std::optional<double> localization_confidence;
  std::string localization_evidence;
  std::optional<LocatedSpan> earliest;
  std::optional<LocatedSpan> last;
  std::optional<LocatedSpan> random;
  std::string localization_note;
  // Where the earliest divergence starts within the generated code, in [0, 1): see
  // docs/batch.md ("relative position"). Absent when not localized or the span starts in
  // the prompt.
  std::optional<double> relative_position;

  std::optional<LocatedSpan> error;  // SYNTAX: the compiler's / interpreter's span
  std::string error_message;
  // SYNTAX (issue 37; gates::RouteResult): the exception's class ("SyntaxError" when it does
  // not compile), the name a name error is about, and the cause span credit's `syntax:
  // cause` uses. Absent in stores written before they existed (and empty for C++).
  std::string error_type;
  std::string error_name;
  std::optional<LocatedSpan> cause;

  ReferenceKind reference = ReferenceKind::kGiven;
  bool stand_in = false;  // this sample is its problem's stand-in reference

  uint32_t program_bytes = 0;
  int32_t program_lines = 0;

  // Timing (excluded from result equality: a resumed run reproduces everything else).
  double grade_seconds = 0;
  double localize_seconds = 0;
  bool shared_result = false;  // a duplicate: the result was copied, not routed again
};

// The JSON object of one record (field order fixed), without the store's framing.
std::string SampleRecordJson(const SampleRecord& record);
std::string ProblemResolutionJson(const ProblemResolution& resolution);
// Inverses; errors name the missing or malformed field.
StatusOr<SampleRecord> ParseSampleRecord(std::string_view json);
StatusOr<ProblemResolution> ParseProblemResolution(std::string_view json);

// Equal results: every field except the timing ones.
bool SameResult(const SampleRecord& a, const SampleRecord& b);

}  // namespace egca::batch
