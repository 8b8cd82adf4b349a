#include "egca/tracer/trace_validate.h"

#include <fmt/format.h>

#include <algorithm>

#include "egca/tracer/trace.pb.h"

namespace egca::tracer {
namespace {

Status Bad(int event, const std::string& what) {
  return InvalidArgument(fmt::format("trace event {}: {}", event, what));
}

}  // namespace

Status ValidateTrace(const proto::Trace& trace, std::string_view source) {
  // Lines 1..n (one past the last allowed: CPython may place an implicit return there).
  const uint64_t lines = static_cast<uint64_t>(std::count(source.begin(), source.end(), '\n')) + 2;
  const uint64_t code_count = static_cast<uint64_t>(trace.code_size());
  for (int c = 0; c < trace.code_size(); ++c) {
    if (trace.code(c).first_line() > lines) {
      return InvalidArgument(fmt::format("trace code object {}: first line {} past the source",
                                         c, trace.code(c).first_line()));
    }
  }
  for (int e = 0; e < trace.events_size(); ++e) {
    const proto::Event& ev = trace.events(e);
    if (ev.code() >= code_count) {
      return Bad(e, fmt::format("code object {} of {}", ev.code(), code_count));
    }
    if (ev.depth() > kMaxTraceDepth) return Bad(e, fmt::format("depth {}", ev.depth()));
    if (ev.line() > lines || ev.prev_line() > lines) {
      return Bad(e, fmt::format("line {} (previous {}) past the source's {} lines", ev.line(),
                                ev.prev_line(), lines - 2));
    }
    if (ev.has_span()) {
      const proto::Span& s = ev.span();
      if (s.start_line() > lines || s.end_line() > lines || s.begin_byte() > s.end_byte() ||
          s.end_byte() > source.size()) {
        return Bad(e, fmt::format("span {}:{}-{}:{} bytes [{}, {}) outside the source",
                                  s.start_line(), s.start_col(), s.end_line(), s.end_col(),
                                  s.begin_byte(), s.end_byte()));
      }
    }
  }
  return Status::Ok();
}

}  // namespace egca::tracer
