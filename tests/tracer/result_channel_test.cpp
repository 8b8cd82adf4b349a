// The child's result channel (tracer/src/result_channel.h): exactly two records at fixed
// positions, the preparation record (written before the candidate ran) and the completion
// record; nothing is searched for, so bytes the program writes can at most take the place
// of the completion record, and a test error is believed only from the first.
#include "result_channel.h"

#include <gtest/gtest.h>

namespace egca::tracer {
namespace {

std::string Serialized(const proto::ExecResult& r) {
  std::string out;
  EXPECT_TRUE(r.SerializeToString(&out));
  return out;
}

proto::ExecResult Record(proto::ExecOutcome outcome) {
  proto::ExecResult r;
  r.set_outcome(outcome);
  return r;
}

std::string Channel(proto::ExecOutcome first, proto::ExecOutcome second) {
  std::string channel;
  AppendResultFrame(Serialized(Record(first)), &channel);
  AppendResultFrame(Serialized(Record(second)), &channel);
  return channel;
}

TEST(ResultChannel, PreparedThenCompletion) {
  proto::ExecResult done = Record(proto::EXEC_OK);
  done.set_actual("3");
  done.mutable_trace()->add_events()->set_line(3);
  std::string channel;
  AppendResultFrame(Serialized(Record(proto::EXEC_PREPARED)), &channel);
  AppendResultFrame(Serialized(done), &channel);
  channel += "bytes after the second frame";
  ResultChannel out = ParseResultChannel(channel);
  ASSERT_TRUE(out.has_prepared);
  EXPECT_EQ(out.prepared.outcome(), proto::EXEC_PREPARED);
  ASSERT_TRUE(out.has_completion);
  EXPECT_EQ(out.completion.outcome(), proto::EXEC_OK);
  EXPECT_EQ(out.completion.actual(), "3");
  EXPECT_EQ(out.completion.trace().events(0).line(), 3u);
}

TEST(ResultChannel, RetraceRecordOnlyAfterRetraceFollows) {
  proto::ExecResult verdict = Record(proto::EXEC_RUNTIME_ERROR);
  proto::ExecResult tail;
  tail.mutable_trace()->add_events()->set_line(4);
  std::string channel;
  AppendResultFrame(Serialized(Record(proto::EXEC_PREPARED)), &channel);
  std::string without = channel;
  AppendResultFrame(Serialized(verdict), &without);
  AppendResultFrame(Serialized(tail), &without);
  EXPECT_FALSE(ParseResultChannel(without).has_retrace);
  verdict.set_retrace_follows(true);
  AppendResultFrame(Serialized(verdict), &channel);
  AppendResultFrame(Serialized(tail), &channel);
  ResultChannel out = ParseResultChannel(channel);
  ASSERT_TRUE(out.has_retrace);
  EXPECT_EQ(out.retrace.trace().events(0).line(), 4u);
  EXPECT_EQ(out.completion.outcome(), proto::EXEC_RUNTIME_ERROR);
}

TEST(ResultChannel, TestErrorOnlyFromThePreparationRecord) {
  std::string channel;
  proto::ExecResult error = Record(proto::EXEC_TEST_ERROR);
  error.set_message("test code does not compile");
  AppendResultFrame(Serialized(error), &channel);
  ResultChannel out = ParseResultChannel(channel);
  ASSERT_TRUE(out.has_prepared);
  EXPECT_EQ(out.prepared.outcome(), proto::EXEC_TEST_ERROR);
  EXPECT_FALSE(out.has_completion);
  // The program raised the harness's error type or forged the record after it ran: the
  // completion record cannot say "test error" (nor "prepared").
  for (auto forged : {proto::EXEC_TEST_ERROR, proto::EXEC_PREPARED}) {
    ResultChannel f = ParseResultChannel(Channel(proto::EXEC_PREPARED, forged));
    ASSERT_TRUE(f.has_completion);
    EXPECT_EQ(f.completion.outcome(), proto::EXEC_OUTCOME_UNSPECIFIED);
  }
}

TEST(ResultChannel, FirstRecordMustBeAPreparationRecord) {
  // A forged "ok" in first place (no preparation record: the child died before it, or
  // the bytes are not ours) is no record at all.
  ResultChannel out = ParseResultChannel(Channel(proto::EXEC_OK, proto::EXEC_OK));
  EXPECT_FALSE(out.has_prepared);
  EXPECT_FALSE(out.has_completion);
}

TEST(ResultChannel, FramesAreNotSearchedFor) {
  std::string channel = "garbage ";
  AppendResultFrame(Serialized(Record(proto::EXEC_PREPARED)), &channel);
  EXPECT_FALSE(ParseResultChannel(channel).has_prepared);
  // Junk where the completion record belongs, then a well-formed frame: no completion.
  std::string second;
  AppendResultFrame(Serialized(Record(proto::EXEC_PREPARED)), &second);
  second += "EGR1";
  AppendResultFrame(Serialized(Record(proto::EXEC_OK)), &second);
  ResultChannel out = ParseResultChannel(second);
  EXPECT_TRUE(out.has_prepared);
  EXPECT_FALSE(out.has_completion);
}

TEST(ResultChannel, CutOrOversizedFramesEndTheReading) {
  std::string channel = Channel(proto::EXEC_PREPARED, proto::EXEC_OK);
  ResultChannel cut = ParseResultChannel(std::string_view(channel).substr(0, channel.size() - 1));
  EXPECT_TRUE(cut.has_prepared);
  EXPECT_FALSE(cut.has_completion);
  // A length field far past the end.
  std::string huge;
  AppendResultFrame(Serialized(Record(proto::EXEC_PREPARED)), &huge);
  huge += std::string("EGR1\xff\xff\xff\x7f", 8);
  EXPECT_FALSE(ParseResultChannel(huge).has_completion);
  EXPECT_FALSE(ParseResultChannel("").has_prepared);
  EXPECT_FALSE(ParseResultChannel("EGR").has_prepared);
}

}  // namespace
}  // namespace egca::tracer
