// Test cases: what one run of a candidate program is checked against.
//
// Three kinds cover the public code-generation data sets:
//   kCall    call a function with JSON arguments and compare its return value
//            (APPS/TACO call-based problems, MapCoder APPS files, LeetCode `class Solution`);
//   kStdio   feed stdin, compare stdout (APPS/CodeContests standard-input problems);
//   kAssert  run test code in the program's namespace (HumanEval `check(candidate)` with an
//            entry point, MBPP `assert` lines with `test_setup_code`, QuixBugs test scripts).
// A test case is plain data; the executor decides how to run it. Builders below fill the
// fields each kind uses; the other fields stay empty.
#pragma once

#include <string>
#include <vector>

#include "egca/core/status.h"

namespace egca::tracer {

enum class TestKind {
  kCall,
  kStdio,
  kAssert,
};

// "call", "stdio", "assert" (stable names for JSON and text dumps).
const char* TestKindName(TestKind kind);

struct TestCase {
  TestKind kind = TestKind::kCall;
  std::string name;  // label in reports ("test 3", "check"); may be empty

  // kCall. `function` is a module-level function of the program or, when the program
  // defines no such function but a `class Solution`, the method of `Solution()`.
  // `args_json` is a JSON array of positional arguments. `expected_json` is the expected
  // return value as JSON; comparison follows APPS: tuples equal lists, a one-element list
  // wrapping the expected value also matches, floats compare with tolerance, a string
  // that is itself JSON-encoded matches its decoded value.
  std::string function;
  std::string args_json = "[]";
  std::string expected_json;
  bool has_expected = false;  // false: run only (verdict OK when the call completes)

  // kStdio. Fed to sys.stdin (and fd 0). Comparison follows APPS: whole output, then
  // lines with surrounding whitespace removed, then tokens, then tokens as floats.
  std::string stdin_data;
  std::string expected_stdout;  // used when has_expected

  // kAssert. In the program's namespace, after the program ran: `setup_code` (MBPP
  // test_setup_code, which builds fixtures from the program's own classes), then
  // `test_code`, then `check(<entry_point>)` when `entry_point` is set (HumanEval). The
  // test passes when all of it completes.
  std::string setup_code;
  std::string test_code;
  std::string entry_point;
  // The problem's own code (HumanEval's prompt), when its test calls functions the prompt
  // defines (HumanEval/32 `poly`, /38 `encode_cyclic`, /50 `encode_shift`): its imports and
  // helper functions (every top-level function but the entry point that has a body) are
  // run in the test process, so those names are the problem's, never the candidate's.
  // Only the two-process path uses it (docs/executor.md).
  std::string problem_code;

  static TestCase Call(std::string function, std::string args_json);
  static TestCase Call(std::string function, std::string args_json, std::string expected_json);
  static TestCase Stdio(std::string stdin_data);
  static TestCase Stdio(std::string stdin_data, std::string expected_stdout);
  // HumanEval: `test_code` defines check(candidate); check(<entry_point>) is called.
  // `problem_code`: the prompt (see TestCase::problem_code).
  static TestCase HumanEvalCheck(std::string test_code, std::string entry_point,
                                 std::string problem_code = "");
  // MBPP / QuixBugs: test code (assert lines or a script), after optional setup code.
  static TestCase Asserts(std::string test_code, std::string setup_code = "");
};

// Tests from a JSON document, as `egca-run --tests FILE.json` reads them: an array of
// objects {"kind": "call"|"stdio"|"assert", "name"?, "function", "args" (array),
// "expected"?, "stdin", "expected_stdout"?, "setup_code"?, "test_code", "entry_point"?}.
// An APPS `input_output.json` object ({"inputs", "outputs", "fn_name"?}) is accepted too.
// Errors name the record index and field (`origin` prefixes them, e.g. the file name).
StatusOr<std::vector<TestCase>> ParseTestsJson(const std::string& json, const std::string& origin);

// Tests from an APPS `input_output.json` object: call-based when it has "fn_name"
// (each input is the argument list), else stdin/stdout.
StatusOr<std::vector<TestCase>> TestsFromAppsInputOutput(const std::string& json,
                                                         const std::string& origin);

// MBPP: one kAssert test per line of `test_list`, each with `test_setup_code`, named by
// the assert line itself.
std::vector<TestCase> TestsFromAssertLines(const std::vector<std::string>& assert_lines,
                                           const std::string& setup_code);

// A test script as tests: when every non-blank line is a one-line `assert` (MBPP lists,
// most QuixBugs `tests`), one kAssert test per line, so R_hat counts them separately;
// otherwise (helper classes, `def test1(): ...`) the whole script is one test.
std::vector<TestCase> TestsFromScript(const std::string& script, const std::string& setup_code);

}  // namespace egca::tracer
