// The child's result channel: one or two framed ExecResult records. A frame is the 4-byte
// magic "EGR1", the payload length (4 bytes, little-endian) and the serialized record.
// With retrace_failures the child writes the untraced run's record (retrace_follows set)
// before its traced second run and the trace in a second record after it, so a child
// stopped during the second run still reports the verdict.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "egca/tracer/exec.pb.h"

namespace egca::tracer {

// `payload` framed, appended to *out.
void AppendResultFrame(std::string_view payload, std::string* out);

// Merges, in channel order, every complete frame whose record parses and carries `key`
// into *out; bytes around frames (written by the program itself, a frame cut short by a
// kill or by the channel's size limit) are skipped. True if at least one record did.
bool ParseResultChannel(std::string_view channel, uint64_t key, proto::ExecResult* out);

}  // namespace egca::tracer
