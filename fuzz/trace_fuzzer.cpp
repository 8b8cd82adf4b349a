// libFuzzer target: a serialized Trace as a child could forge it. ValidateTrace must
// reject every trace whose indices or sizes a reader would follow out of bounds; the
// target then reads a validated trace the way the router's consumers do (every event's
// code object, span bytes of the source) and dumps it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "egca/tracer/trace.pb.h"
#include "egca/tracer/trace_dump.h"
#include "egca/tracer/trace_validate.h"

using namespace egca::tracer;

namespace {
const std::string kSource =
    "def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  proto::Trace trace;
  if (!trace.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (!ValidateTrace(trace, kSource).ok()) return 0;
  size_t touched = 0;
  for (const proto::Event& ev : trace.events()) {
    // Plain array indexing, as the readers do: out of range here is a validator bug.
    const proto::CodeObject& code = *trace.code().data()[ev.code()];
    touched += code.qualname().size();
    if (ev.has_span()) {
      touched += std::string_view(kSource).substr(ev.span().begin_byte(),
                                                   ev.span().end_byte() - ev.span().begin_byte()).size();
    }
  }
  std::string dump = DumpTrace(trace);
  return touched + dump.size() == 0 ? 0 : 0;
}
