// Tests from command-line style arguments, with egca-run's conventions, so every CLI that
// takes tests (egca-run, egca-trace) reads them the same way:
//   --fn NAME [--input JSON-array]... [--expect JSON]...   call-based tests
//   --stdin FILE... [--expect-stdout FILE]...              standard-input tests
//   --tests FILE [--setup FILE] [--entry-point NAME]       .json / .json.gz cases (or APPS
//        input_output.json), a HumanEval `check(candidate)` file, or assert lines/script
#pragma once

#include <string>
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
StatusOr<std::vector<TestCase>> BuildTests(const TestArgs& args);

}  // namespace egca::tracer
