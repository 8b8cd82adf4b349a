// Tests from command-line style arguments, with egca-run's conventions, so every CLI that
// takes tests (egca-run, egca-trace) reads them the same way:
//   --fn NAME [--input JSON-array]... [--expect JSON]...   call-based tests
//   --stdin FILE... [--expect-stdout FILE]...              standard-input tests
//   --tests FILE [--setup FILE] [--entry-point NAME]       .json / .json.gz cases (or APPS
//        input_output.json), a HumanEval `check(candidate)` file, or assert lines/script
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "egca/core/status.h"
#include "egca/tracer/test_case.h"

namespace egca::tracer {

struct TestArgs {
  std::string function;
  std::vector<std::string> inputs;   // JSON arrays of arguments (default: one "[]")
  std::vector<std::string> expects;  // JSON values, one per input, or none
  std::vector<std::string> stdin_files;
  std::vector<std::string> expect_stdout_files;
  std::string tests_file;
  std::string setup_file;
  std::string entry_point;
};

// Errors (kInvalidArgument / file errors) name the option or file: bad JSON, mismatched
// counts, unreadable files, a check() file without --entry-point, no tests at all. Every
// test gets a name ("add(1, 2)", the stdin file, "test N").
// Conflicting or ignored options are errors too (--fn with --stdin or --tests; --setup or
// --entry-point without --tests), and so is a tests file with no test in it (empty, only
// comments, no assert/raise/check). A check() file that ends with the top-level call
// `check(NAME)`, as the official HumanEval harness runs it, needs no --entry-point.
StatusOr<std::vector<TestCase>> BuildTests(const TestArgs& args);

// The JSON form of a plain Python value printed by repr() (None, True/False, int, float,
// str, list, tuple -> array, dict with str keys -> object), e.g. a reference's returned
// value that becomes a test's expected value. INVALID_ARGUMENT for anything else (sets,
// bytes, objects, inf/nan, a cut-off repr ending in "...").
StatusOr<std::string> PythonReprToJson(std::string_view repr);

}  // namespace egca::tracer
