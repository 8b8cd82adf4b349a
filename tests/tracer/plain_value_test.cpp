// The parent's side of judging (tracer/src/plain_value.h, judge.h): the canonical
// encoding's decoder never trusts a count or a length, json.loads' dialect, Python's repr,
// and the APPS comparison rules the in-process harness used to apply.
#include "plain_value.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "judge.h"

namespace egca::tracer {
namespace {

using Type = PlainValue::Type;

std::string U32(uint32_t v) {
  std::string out;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return out;
}

std::string I64(int64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
  return out;
}

PlainValue Json(const std::string& text) {
  PlainValue v;
  EXPECT_TRUE(ParsePythonJson(text, &v)) << text;
  return v;
}

PlainValue Decoded(const std::string& bytes) {
  PlainValue v;
  std::string error;
  EXPECT_TRUE(DecodePlainValue(bytes, &v, &error)) << error;
  return v;
}

TEST(PlainValueDecode, ScalarsAndContainers) {
  PlainValue list = Decoded("l" + U32(3) + "i" + I64(-5) + "s" + U32(2) + "hi" + "N");
  ASSERT_EQ(list.type, Type::kList);
  ASSERT_EQ(list.items.size(), 3u);
  EXPECT_EQ(list.items[0].integer, -5);
  EXPECT_EQ(list.items[1].text, "hi");
  EXPECT_EQ(PythonRepr(list), "[-5, 'hi', None]");
  PlainValue dict = Decoded("d" + U32(1) + "i" + I64(1) + "t" + U32(1) + "T");
  EXPECT_EQ(PythonRepr(dict), "{1: (True,)}");
  // A big integer that fits int64 is canonicalized to kInt.
  PlainValue small = Decoded("I" + U32(3) + "042");
  EXPECT_EQ(small.type, Type::kInt);
  EXPECT_EQ(small.integer, 42);
  PlainValue big = Decoded("I" + U32(20) + "12345678901234567890");
  EXPECT_EQ(big.type, Type::kBigInt);
}

TEST(PlainValueDecode, LiesAreErrorsNotReads) {
  PlainValue v;
  std::string error;
  // A count far beyond the bytes left, a length past the end, an unknown tag, trailing
  // bytes, nesting deeper than the limit, nothing at all.
  for (const std::string& bad :
       {"l" + U32(0xffffffffu), "s" + U32(100) + "abc", std::string("?"), std::string("NN"),
        std::string(200, 'l'), std::string(), "i" + std::string(3, '\0'), "I" + U32(3) + "1x2",
        "d" + U32(2) + "N"}) {
    EXPECT_FALSE(DecodePlainValue(bad, &v, &error)) << PythonRepr(v);
    EXPECT_FALSE(error.empty());
    error.clear();
  }
  std::string deep;
  for (int i = 0; i < 150; ++i) deep += "l" + U32(1);
  deep += "N";
  EXPECT_FALSE(DecodePlainValue(deep, &v, &error));
}

TEST(PlainValueJson, PythonDialect) {
  EXPECT_EQ(Json("123456789012345678901234567890").type, Type::kBigInt);
  EXPECT_TRUE(std::isnan(Json("NaN").real));
  EXPECT_EQ(Json(" -Infinity ").real, -HUGE_VAL);
  EXPECT_EQ(PythonRepr(Json(R"({"a": 1, "a": 2})")), "{'a': 2}");  // later key wins
  EXPECT_EQ(PythonRepr(Json(R"(["\u00e9\ud83d\ude00", "it's"])")), "['é😀', \"it's\"]");
  PlainValue v;
  for (const char* bad : {"", "[1,]", "01", "{1: 2}", "'x'", "[1] 2", "\"\x01\"", "1."}) {
    EXPECT_FALSE(ParsePythonJson(bad, &v)) << bad;
  }
}

TEST(PlainValueRepr, FloatsAsPython) {
  auto repr = [](double d) {
    PlainValue v;
    v.type = Type::kFloat;
    v.real = d;
    return PythonRepr(v);
  };
  EXPECT_EQ(repr(0.1), "0.1");
  EXPECT_EQ(repr(100.0), "100.0");
  EXPECT_EQ(repr(1e16), "1e+16");
  EXPECT_EQ(repr(1e15), "1000000000000000.0");
  EXPECT_EQ(repr(1e-5), "1e-05");
  EXPECT_EQ(repr(0.0001), "0.0001");
  EXPECT_EQ(repr(-0.0), "-0.0");
  EXPECT_EQ(repr(0.8444218515250481), "0.8444218515250481");
  EXPECT_EQ(repr(1.5e300), "1.5e+300");
  EXPECT_EQ(repr(HUGE_VAL), "inf");
}

TEST(PlainValueCompare, AppsConventions) {
  auto matches = [](const std::string& actual, const std::string& expected) {
    return ReturnedValueMatches(Json(actual), Json(expected), 1e-5, 1e-8);
  };
  EXPECT_TRUE(matches("[5, 6]", "[5, 6]"));
  EXPECT_TRUE(matches("[5, 6]", "[[5, 6]]"));  // wrapped in a one-element list
  EXPECT_FALSE(matches("[5, 6]", "[5, 7]"));
  EXPECT_TRUE(matches("0.3333333", "0.333333"));  // two floats: the tolerance
  EXPECT_FALSE(matches("0.3334", "0.333333"));
  EXPECT_TRUE(matches("true", "1"));  // Python: True == 1
  EXPECT_FALSE(matches("true", "2"));
  EXPECT_TRUE(matches("[1, 2]", "\"[1, 2]\""));  // JSON-encoded expected string
  EXPECT_TRUE(matches("3", "3.0"));              // Python: 3 == 3.0
  EXPECT_FALSE(matches("\"3\"", "3"));
  EXPECT_TRUE(matches("123456789012345678901234567890", "123456789012345678901234567890"));
  EXPECT_FALSE(matches("123456789012345678901234567891", "123456789012345678901234567890"));
  // Dict keys: an expected dict whose keys are all ints in text matches int keys (APPS).
  PlainValue int_keys = Decoded("d" + U32(1) + "i" + I64(1) + "i" + I64(2));
  EXPECT_TRUE(ReturnedValueMatches(int_keys, Json(R"({"1": 2})"), 1e-5, 1e-8));
  EXPECT_FALSE(ReturnedValueMatches(int_keys, Json(R"({"1": 2, "x": 2})"), 1e-5, 1e-8));
  // A tuple is compared as the list JSON writes for it.
  PlainValue tuple = Decoded("t" + U32(2) + "i" + I64(1) + "t" + U32(1) + "i" + I64(2));
  EXPECT_TRUE(ReturnedValueMatches(tuple, Json("[1, [2]]"), 1e-5, 1e-8));
  // A set is not a list (issue 27: it was compared as a set, duplicates and order lost).
  PlainValue set = Decoded("S" + U32(2) + "i" + I64(1) + "i" + I64(2));
  EXPECT_FALSE(ReturnedValueMatches(set, Json("[1, 2]"), 1e-5, 1e-8));
  EXPECT_FALSE(ReturnedValueMatches(set, Json("[2, 1, 1]"), 1e-5, 1e-8));
}

TEST(PlainValueCompare, IntegersExactlyUnlessAppsAllclose) {
  auto matches = [](const std::string& actual, const std::string& expected, bool apps) {
    return ReturnedValueMatches(Json(actual), Json(expected), 1e-5, 1e-8, apps);
  };
  // An int expected: a float a few ppm away is wrong (issue 27); APPS's np.allclose
  // accepts it, behind the option.
  EXPECT_FALSE(matches("123456.5", "123456", false));
  EXPECT_TRUE(matches("123456.5", "123456", true));
  EXPECT_FALSE(matches("123457", "123456", false));
  EXPECT_TRUE(matches("123457", "123456", true));
  EXPECT_TRUE(matches("123456.0", "123456", false));
  // Beyond double: exact, never through a double.
  EXPECT_FALSE(matches("1e30", "1000000000000000000000000000000", false));
  EXPECT_TRUE(matches("1e30", "1000000000000000019884624838656", false));
  EXPECT_STREQ(StdoutMatches("123456\n", "123456\n", 1e-5, 1e-8), "exact");
  EXPECT_EQ(StdoutMatches("123457\n", "123456\n", 1e-5, 1e-8), nullptr);
  EXPECT_STREQ(StdoutMatches("123457\n", "123456\n", 1e-5, 1e-8, true), "float_tokens");
  EXPECT_EQ(StdoutMatches("123456.5\n", "123456\n", 1e-5, 1e-8), nullptr);
  EXPECT_STREQ(StdoutMatches("0.5000001\n", "0.5\n", 1e-5, 1e-8), "float_tokens");
  EXPECT_STREQ(StdoutMatches("007 +3\n", "7 3\n", 1e-5, 1e-8), "float_tokens");
  EXPECT_EQ(StdoutMatches("99999999999999999999\n", "100000000000000000000\n", 1e-5, 1e-8),
            nullptr);
}

TEST(PlainValueCompare, StdoutLadder) {
  EXPECT_STREQ(StdoutMatches("1 2\n3\n", "1 2\n3\n", 1e-5, 1e-8), "exact");
  EXPECT_STREQ(StdoutMatches("1 2  \n\n3\n\n", "1 2\n3", 1e-5, 1e-8), "lines");
  EXPECT_STREQ(StdoutMatches("1 2 3\n", "1\n2\n3\n", 1e-5, 1e-8), "tokens");
  EXPECT_STREQ(StdoutMatches("0.3333333 2\n", "0.333333 2\n", 1e-5, 1e-8), "float_tokens");
  EXPECT_STREQ(StdoutMatches("1_000.0\n", "1000\n", 1e-5, 1e-8), "float_tokens");  // == 1000
  EXPECT_EQ(StdoutMatches("0.34 2\n", "0.333333 2\n", 1e-5, 1e-8), nullptr);
  EXPECT_EQ(StdoutMatches("2 1\n", "1 2\n", 1e-5, 1e-8), nullptr);
  EXPECT_EQ(StdoutMatches("0x10\n", "16\n", 1e-5, 1e-8), nullptr);  // float() has no hex
}

TEST(Judge, CallRecordsArePlainDataOnly) {
  proto::ExecResult record;
  record.set_value_type("Anything");
  record.set_actual("<Anything object>");
  PlainValue expected = Json("42");
  Judgement j = JudgeCall(record, &expected, 1e-5, 1e-8, 2048);
  EXPECT_FALSE(j.passed);
  EXPECT_EQ(j.detail, "returned a Anything, not a plain value");
  EXPECT_EQ(j.expected, "42");
  // A malformed encoding fails the test, whatever the child claims beside it.
  record.set_has_value(true);
  record.set_value("l" + U32(1000));
  EXPECT_FALSE(JudgeCall(record, &expected, 1e-5, 1e-8, 2048).passed);
  record.set_value("i" + I64(42));
  Judgement ok = JudgeCall(record, &expected, 1e-5, 1e-8, 2048);
  EXPECT_TRUE(ok.passed);
  EXPECT_EQ(ok.actual, "42");
  const std::string out = "x\n";
  EXPECT_EQ(JudgeStdio(std::string(5000, 'a'), &out, 1e-5, 1e-8, 16).actual,
            std::string(16, 'a') + "...");
}

}  // namespace
}  // namespace egca::tracer
