// Options of the execution tracer: what is recorded at each boundary of the user's code
// and how much. A plain struct; defaults suit tests and training-time tracing of
// competition-sized programs. Consumed by ConfigureTrace() (tracer/src/trace_recorder.h)
// in the sandboxed child and echoed into every Trace (proto field `options`), so a trace
// says how it was made.
#pragma once

#include <cstdint>

namespace egca::tracer {

struct TraceOptions {
  // Off: the child runs the program untraced and returns no trace.
  bool enabled = false;

  // --- Caps on the whole trace. When one is hit the trace keeps the EARLIEST events,
  // sets Trace.truncated / Trace.truncation, and the trace function uninstalls itself so
  // the rest of the run costs nothing (events after the cap are not counted).
  uint64_t max_events = 200000;      // events recorded
  uint64_t max_bytes = 64ull << 20;  // serialized size of the recorded events, bytes
  // On: when a cap is hit the program is stopped instead of running on untraced: every
  // later event of a user frame raises _egca_trace.TraceStopped (a BaseException, raised
  // again at the next user line if the program catches it). For runs whose verdict comes
  // from elsewhere (a retrace, the bounded trace of a timed-out test) and only the trace
  // prefix is wanted. The same stop serves a time budget (_egca_trace.stop_run()).
  bool stop_at_limit = false;

  // --- How. Run only the user's frames in CPython's tracing mode (a PEP 523 frame filter,
  // tracer/src/python_compat.h); the stdlib, the harness and the tests run at full speed.
  // The trace is the same either way; off = every frame in tracing mode (for comparison).
  bool frame_filter = true;

  // --- What is recorded.
  bool record_lines = true;       // LINE: before each new source line of a user frame
  bool record_calls = true;       // CALL: frame entry, including generator resumption
  bool record_returns = true;     // RETURN: frame exit, including generator yield
  bool record_exceptions = true;  // EXCEPTION: an exception raised in / passing through a frame
  // Changed variables are snapshotted at every recorded event (first event of a frame:
  // all its locals). Off: events carry only where/kind/depth (control flow only).
  bool record_variables = true;

  // --- Value encoding (tracer/src/value_encoder.h). Text is a bounded, canonical
  // rendering; the 64-bit structural hash covers the whole value up to `hash_budget`.
  uint32_t container_prefix = 8;   // elements (dict: items) rendered per container
  uint32_t max_string_bytes = 64;  // UTF-8 bytes of a str/bytes rendered before "…"
  uint32_t max_repr_bytes = 160;   // bytes of one value's whole rendering (hard cap)
  uint32_t max_render_depth = 3;   // container nesting rendered; deeper: "[…](len=N)"
  uint32_t max_hash_depth = 16;    // container nesting hashed; deeper: counted, not hashed
  // Elements (of all nested containers together) hashed per value per snapshot. Change
  // detection rehashes mutable containers at every event (all-immutable dicts are cached
  // by version tag), so this bounds the per-event cost: O(min(size, hash_budget)) per
  // container local. Beyond it the hash covers the first `hash_budget` elements plus the
  // lengths, and the value is flagged `partial` (a change past the budget that keeps
  // every length may go unseen). Raise it when big tables must be compared exactly.
  uint32_t hash_budget = 1024;
  // Bytes of one str/bytes hashed; longer ones hash head + tail + length (flagged partial).
  uint32_t max_hash_string_bytes = 1u << 16;
};

}  // namespace egca::tracer
