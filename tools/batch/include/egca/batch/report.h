// The report of a batch run, computed from a store's contents (never from a runner's
// memory), so an interrupted-and-resumed run, a merged set of shards and an uninterrupted
// run give the same summary. Records are aggregated in canonical order (problem, key, dup)
// and a key seen twice counts once.
//
// Two parts:
//   summary  everything that depends only on the results: mode fractions (overall, per
//            difficulty, per source model), K, trigger rate, relative-position histogram,
//            most frequent violated constraints, references and stand-ins, bad records.
//            Deterministic: SummaryJson() of equal results is byte-identical.
//   timing   wall time, samples/s, per-stage seconds, workers, load average (varies).
//
// Definitions (docs/batch.md):
//   K             execution boundaries of the program (block boundaries of every scope),
//                 averaged over samples whose program parses (not SYNTAX).
//   trigger rate  localized samples (LOGIC with an earliest divergence) / all samples.
//   empty         samples whose completion holds no code (API failures): counted apart,
//                 left out of the mode fractions, K and positions, counted as failures in
//                 pass@k.
//   passes        the sample passes every test (R_hat = 1), whatever its mode: CORRECT is
//                 not "passes the tests" (a passing program the gates reject is CONSTRAINT).
//   pass@k        the unbiased estimator (credit::PassAtK) per problem, n = its samples,
//                 c = those that pass every test, averaged over problems; reported for
//                 k = 1, 10, 100 where every problem has n >= k.
//   position      SampleRecord::relative_position, binned into `position_bins` equal bins
//                 of [0, 1); spans starting in the prompt are counted apart.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "egca/batch/credit_report.h"
#include "egca/batch/store.h"
#include "egca/core/status.h"

namespace egca::batch {

struct ModeCounts {
  std::array<int64_t, 4> n{};  // indexed by FailureMode
  int64_t total() const { return n[0] + n[1] + n[2] + n[3]; }
  int64_t count(FailureMode m) const { return n[static_cast<size_t>(m)]; }
  double fraction(FailureMode m) const {
    return total() == 0 ? 0.0 : static_cast<double>(count(m)) / static_cast<double>(total());
  }
};

struct ReportOptions {
  int position_bins = 10;
  int top = 10;  // rows of the "most frequent" tables
  std::string title = "egca-batch report";
  // Pages written for the examples ("KEY#DUP" -> path relative to report.md, e.g.
  // "views/0123456789abcdef-0.html"): report.md links them (egca-batch report --views).
  std::map<std::string, std::string> example_views;
  // The credit section (batch/credit_report.h): group sizes and the grouping seed.
  std::vector<int> credit_group_sizes = {8, 16};
  uint64_t credit_seed = 0;
};

// One problem's samples: n, c (pass every test), pass@k, the mode mix, an example.
struct ProblemRow {
  std::string problem;
  int64_t samples = 0;  // n
  int64_t passing = 0;  // c
  int64_t empty = 0;
  ModeCounts modes;                                // non-empty samples
  std::array<std::optional<double>, 3> pass_at{};  // k = 1, 10, 100 (absent: n < k)
  std::string first_failing_key;  // the smallest key of a sample that fails a test ("": none)
};

// A sample the report points at, to be looked at with `egca-batch show STORE KEY`.
struct ExampleRef {
  std::string label;  // "LOGIC", "divergence: value", "worst problem HumanEval/3"
  std::string problem;
  std::string key;
  int32_t dup = 0;
  std::string what;  // its reason, one line
};

struct FailedReference {
  std::string problem;
  std::string failure;
  ReferenceKind fallback = ReferenceKind::kStandIn;
};

// k of pass@k, in ProblemRow::pass_at / ReportSummary::pass_at order.
inline constexpr std::array<int64_t, 3> kPassAtK = {1, 10, 100};

// Localization quality of one divergence kind (issue 36): how sure the analysis was of the
// localized samples' earliest spans (gates::RouteResult::localization_confidence), so a
// reader sees which kinds credit can rest on. Confidence bins: [0, 0.25), [0.25, 0.5),
// [0.5, 0.75), [0.75, 1]; samples stored without a confidence (older stores) are counted in
// `samples` only.
struct KindQuality {
  std::string kind;
  int64_t samples = 0;
  int64_t with_confidence = 0;
  double mean_confidence = 0;  // over with_confidence
  std::array<int64_t, 4> confidence_bins{};
};

struct ReportSummary {
  int64_t samples = 0;  // every sample, empty ones included
  int64_t problems = 0;
  int64_t empty = 0;    // empty samples (not in `modes` or the other mode tables)
  int64_t passing = 0;  // samples that pass every test, whatever their mode
  ModeCounts modes;     // non-empty samples
  std::array<std::optional<double>, 3> pass_at{};  // mean over problems, kPassAtK order
  std::map<std::string, std::array<std::optional<double>, 3>> pass_at_by_model;
  std::vector<ProblemRow> by_problem;  // worst first: pass@1 ascending, then more samples
  std::vector<ExampleRef> examples;    // one per mode and divergence kind, then worst problems
  std::map<std::string, ModeCounts> by_difficulty;  // "" shown as "unknown"
  std::map<std::string, ModeCounts> by_model;
  std::map<std::string, ModeCounts> by_kind;  // ProblemResolution::kind of the sample's problem
  double r_hat_mean = 0;

  int64_t k_samples = 0;  // samples with K (program parses)
  double k_mean = 0;
  std::array<double, 4> k_mean_by_mode{};  // 0 where a mode has no K
  int64_t k_executed_samples = 0;
  double k_executed_mean = 0;  // localized samples: executed boundaries on the failing test

  int64_t localized = 0;
  double trigger_rate = 0;                                        // localized / samples
  double trigger_rate_logic = 0;                                  // localized / LOGIC samples
  std::vector<std::pair<std::string, int64_t>> divergence_kinds;  // localized, by kind
  std::vector<KindQuality> localization_quality;  // divergence_kinds' order
  std::vector<int64_t> position_bins;
  int64_t position_in_prompt = 0;  // localized, but the span starts in the prompt
  double position_mean = 0;        // over binned samples

  int64_t constraint_violated = 0;  // samples with I_C = 0
  int64_t not_comparable = 0;       // samples with I_cmp = 0
  int64_t passing_constraint = 0;   // CONSTRAINT samples that pass every test
  std::vector<std::pair<std::string, int64_t>> top_constraints;  // violations by name
  std::vector<std::pair<std::string, int64_t>> top_errors;       // SYNTAX by error type
  std::vector<std::pair<std::string, int64_t>> logic_verdicts;   // LOGIC by first failing verdict

  int64_t references_given = 0;
  int64_t references_stand_in = 0;
  int64_t references_none = 0;
  int64_t samples_vs_stand_in = 0;  // samples routed against a stand-in
  int64_t samples_no_reference = 0;
  std::vector<FailedReference> failed_references;

  std::vector<BadRecord> bad;  // sorted by file, line

  CreditSummary credit;  // batch/credit_report.h
};

struct ReportTiming {
  int64_t sessions = 0;
  double wall_seconds = 0;  // summed over sessions
  int64_t samples_routed = 0;
  int64_t programs_routed = 0;
  double samples_per_second = 0;
  double grade_seconds = 0;     // summed over routed programs
  double localize_seconds = 0;  // summed over routed programs
  double grade_mean_ms = 0;     // per routed program
  double localize_mean_ms = 0;  // per localized program
  int32_t workers = 0;          // of the last session
  double load_average = 0;      // at the end of the last session
  std::string host;
};

struct Report {
  ReportOptions options;
  RunConfig config;
  ReportSummary summary;
  ReportTiming timing;
};

Report BuildReport(const StoreContents& contents, const ReportOptions& options = {});

// {"summary": {...}} only: the part an interrupted and an uninterrupted run share.
std::string SummaryJson(const Report& report);
// {"config": {...}, "summary": {...}, "timing": {...}}, pretty-printed.
std::string ReportJson(const Report& report);
// Tables for people.
std::string ReportMarkdown(const Report& report);
// A self-contained SVG: stacked mode bars (overall, per model, per difficulty) and the
// relative-position histogram.
std::string ReportSvg(const Report& report);

// Writes report.json, report.md and report.svg into `dir` (atomically each).
Status WriteReport(const Report& report, const std::string& dir);

}  // namespace egca::batch
