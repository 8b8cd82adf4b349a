// Checks a Trace that came from a child process before anything indexes into it: a trace
// is the candidate's process's output and may be forged.
#pragma once

#include <string_view>

#include "egca/core/status.h"

namespace egca::tracer {

namespace proto {
class Trace;  // egca/tracer/trace.pb.h
}  // namespace proto

// Deepest call depth a trace may report (CPython's recursion limit is far below it).
inline constexpr uint32_t kMaxTraceDepth = 1u << 20;

// Ok when every event's code-object index is within Trace.code, its depth at most
// kMaxTraceDepth, and every line and span lies within `source` (the program the trace
// claims to be of: lines 1..number of lines, byte offsets within its size, begin <= end).
// InvalidArgument naming the first offending event otherwise.
Status ValidateTrace(const proto::Trace& trace, std::string_view source);

}  // namespace egca::tracer
