// Deterministic text dump of a trace, for people (`egca-run --trace`) and golden tests.
#pragma once

#include <string>

#include "egca/tracer/trace.pb.h"

namespace egca::tracer {

// One header line (source hash prefix, event count, truncation), then one line per event:
//   <index> <KIND> d<depth> <function>:<line> [<span>] <changed vars name=value ...>
// e.g.
//   12 LINE   d2 lis:7 [7:12-7:29] i=2 j=1
//   13 LINE   d2 lis:8 [8:16-8:36] dp=[1, 2, 3, 1]
//   20 RETURN d2 lis:9 [9:4-9:18] -> 3
// Values print their canonical text. Stable across runs and processes: contains no
// timings, addresses or hash seeds. Ends with a newline.
std::string DumpTrace(const proto::Trace& trace);

}  // namespace egca::tracer
