// The child's result channel: exactly two framed ExecResult records, in order. A frame is
// the 4-byte magic "EGR1", the payload length (4 bytes, little-endian) and the serialized
// record. The first, the preparation record, is written before any candidate code runs
// (EXEC_PREPARED, or EXEC_TEST_ERROR for a malformed test, which has no second record);
// the second, the completion record, after the test ran. Frames are read at fixed
// positions from the start of the channel, never searched for: what the candidate writes
// to the channel itself can only come after the preparation record, and can at most take
// the place of the completion record, which the parent treats as plain data anyway.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "egca/tracer/exec.pb.h"

namespace egca::tracer {

// `payload` framed, appended to *out.
void AppendResultFrame(std::string_view payload, std::string* out);

struct ResultChannel {
  bool has_prepared = false;  // the first frame parsed (EXEC_PREPARED or EXEC_TEST_ERROR)
  proto::ExecResult prepared;
  bool has_completion = false;  // a second frame parsed, after a EXEC_PREPARED record
  proto::ExecResult completion;
  // completion.retrace_follows: the third frame, the traced second run's record (its
  // `trace`), when it parsed.
  bool has_retrace = false;
  proto::ExecResult retrace;
};

// Reads the records (two, or three with a retrace). A frame cut short (a kill, the channel's size limit), a bad
// magic, a record that does not parse or a first record of another outcome ends the
// reading; bytes after the second frame are ignored. Never reads outside `channel`.
ResultChannel ParseResultChannel(std::string_view channel);

}  // namespace egca::tracer
