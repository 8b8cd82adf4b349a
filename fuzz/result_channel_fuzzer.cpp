// libFuzzer target: what a child writes to its result channel, as the parent decodes and
// judges it (tracer/src/result_channel.h, plain_value.h, judge.h). Every input must decode
// to records or to nothing, and judge to a verdict, without reading out of bounds.
// The same bytes also go through the plain-value decoder and the JSON parser directly.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "judge.h"
#include "plain_value.h"
#include "result_channel.h"

using namespace egca::tracer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ResultChannel channel = ParseResultChannel(bytes);
  PlainValue expected;
  ParsePythonJson("[1, 2.5, \"x\", {\"1\": [true, null]}]", &expected);
  const std::string expected_stdout = "1 2.5\nx\n";
  if (channel.has_completion) {
    Judgement call = JudgeCall(channel.completion, &expected, 1e-5, 1e-8, 256);
    Judgement stdio = JudgeStdio(channel.completion.actual(), &expected_stdout, 1e-5, 1e-8, 256);
    if (call.actual.size() > 256 + 3 || stdio.actual.size() > 256 + 3) __builtin_trap();
  }
  PlainValue value;
  std::string error;
  if (DecodePlainValue(bytes, &value, &error)) {
    std::string repr = PythonRepr(value, 4096);
    ReturnedValueMatches(value, expected, 1e-5, 1e-8);
    ReturnedValueMatches(value, value, 1e-5, 1e-8);
    (void)repr;
  }
  PlainValue json;
  if (ParsePythonJson(bytes, &json)) ReturnedValueMatches(json, expected, 1e-5, 1e-8);
  StdoutMatches(bytes, expected_stdout, 1e-5, 1e-8);
  return 0;
}
