// Tests from command-line arguments (egca-run, egca-trace): the reference's returned value
// read back as an expected value (PythonReprToJson), and the inputs BuildTests refuses.
#include "egca/tracer/test_args.h"

#include <gtest/gtest.h>

#include "common/scratch_dir.h"

namespace egca::tracer {
namespace {

TEST(PythonReprToJson, PlainValuesRoundTrip) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"3", "3"},
      {"-12", "-12"},
      {"1.5", "1.5"},
      {"1e-05", "1e-05"},
      {"True", "true"},
      {"None", "null"},
      {"'it\\'s'", "\"it's\""},
      {"\"a\\nb\\\\c\"", "\"a\\nb\\\\c\""},
      {"'\\xe9\\u20ac'", "\"\xc3\xa9\xe2\x82\xac\""},
      {"[1, (2, 3), []]", "[1,[2,3],[]]"},
      {"(1,)", "[1]"},
      {"{'a': [1, 2], 'b': {'c': None}}", "{\"a\":[1,2],\"b\":{\"c\":null}}"},
      {"123456789012345678", "123456789012345678"},
  };
  for (const auto& [repr, json] : cases) {
    StatusOr<std::string> got = PythonReprToJson(repr);
    ASSERT_TRUE(got.ok()) << repr << ": " << got.status().ToString();
    EXPECT_EQ(got.value(), json) << repr;
  }
}

TEST(PythonReprToJson, ValuesWithoutAJsonFormAreRefused) {
  for (const char* repr : {"{1, 2}", "{1: 'a'}", "inf", "nan", "b'x'", "<object at 0x1>",
                           "[1, 2, ...", "123456789012345678901234567890", "1j", "'open"}) {
    StatusOr<std::string> got = PythonReprToJson(repr);
    EXPECT_FALSE(got.ok()) << repr << " -> " << (got.ok() ? got.value() : "");
  }
}

TEST(BuildTests, ConflictsAndFilesWithoutTests) {
  testing::ScratchDir dir("test_args");
  TestArgs a;
  a.function = "f";
  a.stdin_files = {dir.Write("in.txt", "1\n")};
  EXPECT_NE(BuildTests(a).status().message().find("--fn and --stdin conflict"),
            std::string::npos);
  TestArgs comments;
  comments.tests_file = dir.Write("t.py", "# only a comment\n\n");
  EXPECT_NE(BuildTests(comments).status().message().find("no test in it"), std::string::npos);
  TestArgs check;
  check.tests_file =
      dir.Write("check.py", "def check(candidate):\n    assert candidate(1) == 2\n\ncheck(inc)\n");
  StatusOr<std::vector<TestCase>> tests = BuildTests(check);
  ASSERT_TRUE(tests.ok()) << tests.status().ToString();
  ASSERT_EQ(tests->size(), 1u);
  EXPECT_EQ((*tests)[0].entry_point, "inc");
  EXPECT_EQ((*tests)[0].test_code.find("check(inc)"), std::string::npos)
      << "the call is dropped: the harness calls check() once";
}

}  // namespace
}  // namespace egca::tracer
