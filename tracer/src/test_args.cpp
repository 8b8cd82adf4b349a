#include "egca/tracer/test_args.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "egca/core/files.h"

namespace egca::tracer {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

StatusOr<std::vector<TestCase>> BuildTests(const TestArgs& a) {
  using nlohmann::json;
  std::vector<TestCase> tests;
  if (!a.function.empty()) {
    if (!a.expects.empty() && a.expects.size() != a.inputs.size()) {
      return InvalidArgument(fmt::format(
          "--expect given {} times but --input {} times (one --expect per --input, or none)",
          a.expects.size(), a.inputs.size()));
    }
    std::vector<std::string> inputs = a.inputs;
    if (inputs.empty()) inputs.push_back("[]");
    for (size_t i = 0; i < inputs.size(); ++i) {
      json args = json::parse(inputs[i], nullptr, false);
      if (args.is_discarded() || !args.is_array()) {
        return InvalidArgument(
            fmt::format("--input '{}': not a JSON array of arguments", inputs[i]));
      }
      TestCase t = TestCase::Call(a.function, inputs[i]);
      if (!a.expects.empty()) {
        if (json::parse(a.expects[i], nullptr, false).is_discarded()) {
          return InvalidArgument(fmt::format("--expect '{}': not JSON", a.expects[i]));
        }
        t.expected_json = a.expects[i];
        t.has_expected = true;
      }
      std::string dumped = args.dump();
      t.name = fmt::format("{}({})", a.function, dumped.substr(1, dumped.size() - 2));
      tests.push_back(std::move(t));
    }
  } else if (!a.inputs.empty() || !a.expects.empty()) {
    return InvalidArgument("--input/--expect need --fn NAME");
  }
  if (!a.expect_stdout_files.empty() && a.expect_stdout_files.size() != a.stdin_files.size()) {
    return InvalidArgument("--expect-stdout given a different number of times than --stdin");
  }
  for (size_t i = 0; i < a.stdin_files.size(); ++i) {
    EGCA_ASSIGN_OR_RETURN(std::string input, ReadFile(a.stdin_files[i]));
    TestCase t = TestCase::Stdio(std::move(input));
    if (!a.expect_stdout_files.empty()) {
      EGCA_ASSIGN_OR_RETURN(t.expected_stdout, ReadFile(a.expect_stdout_files[i]));
      t.has_expected = true;
    }
    t.name = a.stdin_files[i];
    tests.push_back(std::move(t));
  }
  if (!a.tests_file.empty()) {
    EGCA_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(a.tests_file));
    std::string setup;
    if (!a.setup_file.empty()) {
      EGCA_ASSIGN_OR_RETURN(setup, ReadSourceFile(a.setup_file));
    }
    if (EndsWith(a.tests_file, ".json") || EndsWith(a.tests_file, ".json.gz")) {
      EGCA_ASSIGN_OR_RETURN(std::vector<TestCase> parsed,
                            ParseTestsJson(text, a.tests_file));
      tests.insert(tests.end(), parsed.begin(), parsed.end());
    } else if (text.find("def check(") != std::string::npos) {
      if (a.entry_point.empty()) {
        return InvalidArgument(a.tests_file +
                               ": defines check(candidate); name the function with --entry-point");
      }
      TestCase t = TestCase::HumanEvalCheck(text, a.entry_point);
      t.setup_code = setup;
      t.name = fmt::format("check({})", a.entry_point);
      tests.push_back(std::move(t));
    } else {
      std::vector<TestCase> parsed = TestsFromScript(text, setup);
      tests.insert(tests.end(), parsed.begin(), parsed.end());
    }
  }
  if (tests.empty()) {
    return InvalidArgument("no tests: give --fn NAME [--input JSON], --stdin FILE or --tests FILE");
  }
  for (size_t i = 0; i < tests.size(); ++i) {
    if (tests[i].name.empty()) tests[i].name = fmt::format("test {}", i + 1);
  }
  return tests;
}

}  // namespace egca::tracer
