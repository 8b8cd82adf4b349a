// Test-case builders and parsers (JSON lists, APPS input_output, assert scripts).
#include <gtest/gtest.h>

#include "egca/tracer/executor.h"
#include "egca/tracer/test_case.h"

namespace egca::tracer {
namespace {

TEST(ExecutorTestCase, ParsesJsonListOfCases) {
  auto tests = ParseTestsJson(R"([
    {"kind": "call", "function": "f", "args": [1, [2, 3]], "expected": {"a": 1}},
    {"kind": "stdio", "stdin": "1 2\n", "expected_stdout": "3\n", "name": "sum"},
    {"kind": "assert", "test_code": "assert f(1) == 2", "setup_code": "x = 1"}
  ])",
                              "cases.json");
  ASSERT_TRUE(tests.ok()) << tests.status().ToString();
  ASSERT_EQ(tests->size(), 3u);
  const TestCase& call = (*tests)[0];
  EXPECT_EQ(call.kind, TestKind::kCall);
  EXPECT_EQ(call.args_json, "[1,[2,3]]");
  EXPECT_TRUE(call.has_expected);
  EXPECT_EQ(call.expected_json, "{\"a\":1}");
  EXPECT_EQ(call.name, "test 1");
  EXPECT_EQ((*tests)[1].kind, TestKind::kStdio);
  EXPECT_EQ((*tests)[1].name, "sum");
  EXPECT_EQ((*tests)[1].expected_stdout, "3\n");
  EXPECT_EQ((*tests)[2].setup_code, "x = 1");
}

TEST(ExecutorTestCase, ErrorsNameTheRecordAndField) {
  auto bad_kind =
      ParseTestsJson(R"([{"kind": "call", "function": "f"}, {"kind": "x"}])", "cases.json");
  ASSERT_FALSE(bad_kind.ok());
  EXPECT_EQ(bad_kind.status().message(),
            "cases.json: test 2: unknown kind \"x\" (expected call, stdio or assert)");
  auto missing = ParseTestsJson(R"([{"kind": "call"}])", "cases.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "cases.json: test 1: missing field \"function\"");
  EXPECT_FALSE(ParseTestsJson("[", "cases.json").ok());
}

TEST(ExecutorTestCase, NumbersBeyondInt64AndDoubleStayExact) {
  // Valid JSON numbers that nlohmann::json would round (beyond 64 bits) or refuse (beyond
  // double range): read exactly, as json.loads does (issue 27).
  const std::string big = "123456789012345678901234567890";
  const std::string huge = "1" + std::string(400, '0');
  auto tests = ParseTestsJson("[{\"kind\": \"call\", \"function\": \"f\", \"args\": [" + big +
                                  ", -" + big + ", 1.5, \"1" + std::string(30, '0') +
                                  "\"], \"expected\": [" + huge + ", 1e400, 7]}]",
                              "big.json");
  ASSERT_TRUE(tests.ok()) << tests.status().ToString();
  EXPECT_EQ((*tests)[0].args_json,
            "[" + big + ",-" + big + ",1.5,\"1" + std::string(30, '0') + "\"]");
  EXPECT_EQ((*tests)[0].expected_json, "[" + huge + ",1e400,7]");
  auto apps = TestsFromAppsInputOutput(
      "{\"fn_name\": \"f\", \"inputs\": [[" + big + "]], \"outputs\": [" + huge + "]}", "io");
  ASSERT_TRUE(apps.ok()) << apps.status().ToString();
  EXPECT_EQ((*apps)[0].args_json, "[" + big + "]");
  EXPECT_EQ((*apps)[0].expected_json, huge);
  // The marker that protects them cannot be smuggled in.
  EXPECT_FALSE(
      ParseTestsJson(R"([{"kind": "call", "function": "f", "args": ["\u0000egca-number:1"]}])",
                     "m.json")
          .ok());
}

// 1.5M levels took egca-run --tests and egca-serve down (a recursive dump of the args);
// past 256 levels the text is refused before parsing, with the file named.
TEST(ExecutorTestCase, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(1'500'000, '[') + std::string(1'500'000, ']');
  auto refused =
      ParseTestsJson(R"([{"kind": "call", "function": "f", "args": )" + deep + "}]", "t.json");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "t.json: JSON nested deeper than 256 levels (byte 297)");
  EXPECT_FALSE(TestsFromAppsInputOutput("{\"inputs\": " + deep + "}", "io").ok());
  // Control: 200 levels are data, and the args keep their nesting.
  const std::string nested = std::string(200, '[') + "1" + std::string(200, ']');
  auto ok = ParseTestsJson(R"([{"kind": "call", "function": "f", "args": [)" + nested + "]}]",
                           "t.json");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)[0].args_json, "[" + nested + "]");
}

TEST(ExecutorTestCase, AppsInputOutput) {
  auto call = TestsFromAppsInputOutput(
      R"({"fn_name": "is_prime", "inputs": [[1], [2]], "outputs": [[false], [true]]})", "io");
  ASSERT_TRUE(call.ok());
  ASSERT_EQ(call->size(), 2u);
  EXPECT_EQ((*call)[1].function, "is_prime");
  EXPECT_EQ((*call)[1].args_json, "[2]");
  EXPECT_EQ((*call)[1].expected_json, "[true]");
  auto stdio = TestsFromAppsInputOutput(R"({"inputs": ["1\n"], "outputs": [["a", "b"]]})", "io");
  ASSERT_TRUE(stdio.ok());
  EXPECT_EQ((*stdio)[0].kind, TestKind::kStdio);
  EXPECT_EQ((*stdio)[0].expected_stdout, "a\nb\n");
  auto mismatch = TestsFromAppsInputOutput(R"({"inputs": ["1"], "outputs": []})", "io");
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().message(), "io: 1 inputs but 0 outputs");
}

TEST(ExecutorTestCase, ScriptsSplitIntoAssertLinesOnlyWhenAllAreAsserts) {
  auto lines = TestsFromScript("assert f(1) == 1\r\n\nassert f(2) == 4\n", "import math");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].test_code, "assert f(2) == 4");
  EXPECT_EQ(lines[1].setup_code, "import math");
  auto script = TestsFromScript("class Node:\n    pass\nassert f(Node())\n", "");
  ASSERT_EQ(script.size(), 1u);
  EXPECT_EQ(script[0].test_code, "class Node:\n    pass\nassert f(Node())\n");
}

TEST(ExecutorTestCase, TraceModeNames) {
  TraceMode mode = TraceMode::kNone;
  EXPECT_TRUE(ParseTraceMode("python_settrace", &mode));
  EXPECT_EQ(mode, TraceMode::kPythonSettrace);
  EXPECT_STREQ(TraceModeName(TraceMode::kNative), "native");
  EXPECT_FALSE(ParseTraceMode("fast", &mode));
}

}  // namespace
}  // namespace egca::tracer
