// The child's result channel framing (tracer/src/result_channel.h): records are found and
// merged in order; bytes the program wrote around them and frames cut short are skipped.
#include "result_channel.h"

#include <gtest/gtest.h>

namespace egca::tracer {
namespace {

std::string Serialized(const proto::ExecResult& r) {
  std::string out;
  EXPECT_TRUE(r.SerializeToString(&out));
  return out;
}

proto::ExecResult Verdict(uint64_t key) {
  proto::ExecResult r;
  r.set_record_key(key);
  r.set_outcome(proto::EXEC_WRONG_ANSWER);
  r.set_stdout_data("hello\n");
  r.set_retrace_follows(true);
  return r;
}

proto::ExecResult TraceTail(uint64_t key) {
  proto::ExecResult r;
  r.set_record_key(key);
  r.mutable_trace()->set_filename("<candidate>");
  r.mutable_trace()->add_events()->set_line(3);
  return r;
}

TEST(ResultChannel, OneRecord) {
  std::string channel;
  AppendResultFrame(Serialized(Verdict(7)), &channel);
  proto::ExecResult out;
  ASSERT_TRUE(ParseResultChannel(channel, 7, &out));
  EXPECT_EQ(out.outcome(), proto::EXEC_WRONG_ANSWER);
  EXPECT_EQ(out.stdout_data(), "hello\n");
  EXPECT_FALSE(out.has_trace());
}

TEST(ResultChannel, VerdictThenTraceMerge) {
  std::string channel;
  AppendResultFrame(Serialized(Verdict(7)), &channel);
  AppendResultFrame(Serialized(TraceTail(7)), &channel);
  proto::ExecResult out;
  ASSERT_TRUE(ParseResultChannel(channel, 7, &out));
  EXPECT_EQ(out.outcome(), proto::EXEC_WRONG_ANSWER);
  EXPECT_TRUE(out.retrace_follows());
  ASSERT_TRUE(out.has_trace());
  EXPECT_EQ(out.trace().events_size(), 1);
  EXPECT_EQ(out.trace().events(0).line(), 3u);
}

// A kill during the traced second run: the verdict frame is whole, the trace frame cut.
TEST(ResultChannel, CutTraceFrameKeepsTheVerdict) {
  std::string channel;
  AppendResultFrame(Serialized(Verdict(7)), &channel);
  std::string tail;
  AppendResultFrame(Serialized(TraceTail(7)), &tail);
  channel += tail.substr(0, tail.size() - 3);
  proto::ExecResult out;
  ASSERT_TRUE(ParseResultChannel(channel, 7, &out));
  EXPECT_EQ(out.outcome(), proto::EXEC_WRONG_ANSWER);
  EXPECT_FALSE(out.has_trace());
}

// The program writes to the channel's descriptor itself: before, between, and a forged
// frame header whose length swallows the real frame. None of it is taken for a record.
TEST(ResultChannel, ProgramBytesAroundFramesAreSkipped) {
  std::string channel = "garbage EGR1";
  channel += std::string("EGR1\xff\x00\x00\x00", 8);
  AppendResultFrame(Serialized(Verdict(7)), &channel);
  channel += "EGR1EGR1 more";
  AppendResultFrame(Serialized(TraceTail(7)), &channel);
  proto::ExecResult out;
  ASSERT_TRUE(ParseResultChannel(channel, 7, &out));
  EXPECT_EQ(out.outcome(), proto::EXEC_WRONG_ANSWER);
  EXPECT_TRUE(out.has_trace());
}

TEST(ResultChannel, WrongKeyOrNoFrameIsNoRecord) {
  std::string channel;
  AppendResultFrame(Serialized(Verdict(7)), &channel);
  proto::ExecResult out;
  EXPECT_FALSE(ParseResultChannel(channel, 8, &out));
  EXPECT_FALSE(ParseResultChannel(Serialized(Verdict(7)), 7, &out));  // unframed
  EXPECT_FALSE(ParseResultChannel("", 7, &out));
}

}  // namespace
}  // namespace egca::tracer
