// The sample key (runner.h SampleKey): SHA-256 of everything that decides how a sample is
// read, checked against values computed independently (Python's hashlib on the documented
// encoding), and the cases the 64-bit FNV-1a key of store format 1 got wrong.
#include <gtest/gtest.h>

#include <set>

#include "egca/batch/runner.h"

namespace egca::batch {
namespace {

Sample Make(std::string model, std::string completion, bool body, bool detect) {
  Sample s;
  s.problem_id = "HumanEval/0";
  s.model = std::move(model);
  s.completion = std::move(completion);
  s.completion_is_body = body;
  s.detect_body = detect;
  return s;
}

TEST(SampleKey, ReferenceValues) {
  // hashlib.sha256(b"egca-sample/2\nmodel 10:codegen16B\nread body\ncompletion 13:"
  //                b"    return x\n").hexdigest(), and so on.
  EXPECT_EQ(SampleKey(Make("codegen16B", "    return x\n", true, false)),
            "4bd50c5b9fbd89781b4e38c495bfff91aa934c12a4d2eab88e8f4e677c2c3123");
  EXPECT_EQ(SampleKey(Make("codegen16B", "    return x\n", false, true)),
            "30499537a5cf1c31e5cb16b823fc458ab668809167b7e1d6a62bc6d90ffe8454");
  EXPECT_EQ(SampleKey(Make("codegen16B", "    return x\n", false, false)),
            "902a9c0021e7ddc6eb8c260ca18c6e407ec435e137ed1d2c08de5cde1de02aa8");
  EXPECT_EQ(SampleKey(Make("", "", false, false)),
            "add0a6db4fdfff30b0d2f318f502d9067e19513880aaacb844d8c0ce71277cae");
}

TEST(SampleKey, EveryWayOfReadingIsItsOwnKey) {
  // detect_body wins over completion_is_body (ProgramOf decides), so these are 3 readings.
  std::set<std::string> keys = {SampleKey(Make("m", "x", true, false)),
                                SampleKey(Make("m", "x", false, false)),
                                SampleKey(Make("m", "x", false, true))};
  EXPECT_EQ(keys.size(), 3u);
  EXPECT_EQ(SampleKey(Make("m", "x", true, true)), SampleKey(Make("m", "x", false, true)));
}

TEST(SampleKey, FieldBoundariesCannotBeShifted) {
  // With separators instead of lengths, a model ending in the separator and the kind word
  // could stand for another sample; length prefixes keep them apart.
  EXPECT_NE(SampleKey(Make(std::string("a\0body\0", 7), "x", false, false)),
            SampleKey(Make("a", std::string("x"), true, false)));
  EXPECT_NE(SampleKey(Make("ab", "c", false, false)), SampleKey(Make("a", "bc", false, false)));
  // The problem is not part of the key (records are keyed by (problem, key, dup)).
  Sample a = Make("m", "x", false, false), b = a;
  b.problem_id = "HumanEval/1";
  EXPECT_EQ(SampleKey(a), SampleKey(b));
}

}  // namespace
}  // namespace egca::batch
