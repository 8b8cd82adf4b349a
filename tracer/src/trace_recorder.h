// The C-level execution tracer, exposed to the embedded interpreter as the builtin
// extension module `_egca_trace`.
//
// Lifecycle in the sandboxed child (one program run per process):
//   1. Before Py_Initialize (in the warm server):
//        PyImport_AppendInittab(kTraceModuleName, &PyInit__egca_trace);
//   2. In the child, before running the user's code:
//        ConfigureTrace(options, source);
//   3. The harness compiles the user's source with filename kUserFilename and calls
//        _egca_trace.start(kUserFilename)   # right before exec of the user's code
//        _egca_trace.stop()                  # right after (also when it raised)
//   4. TakeTrace(&trace) moves the recorded trace out (then serialize it).
//
// While started, a Py_tracefunc installed with PyEval_SetTrace records, for frames whose
// code object's co_filename equals the start() filename, one event per boundary (line,
// call, return, exception) with the frame's changed variables encoded canonically
// (value_encoder.h). Frames of other files (stdlib, harness) produce no events, and line
// events are switched off for them (see python_compat.h).
//
// Threading: the recorder is process-global state of the thread that called start();
// other Python threads are not traced. All functions require the GIL.
#pragma once

#include <Python.h>

#include <string>
#include <string_view>

#include "egca/tracer/trace.pb.h"
#include "egca/tracer/trace_options.h"

namespace egca::tracer {

// Filename the harness compiles the user's program with; start() is called with it.
inline constexpr const char kUserFilename[] = "<candidate>";
// Name of the builtin module (for PyImport_AppendInittab).
inline constexpr const char kTraceModuleName[] = "_egca_trace";

// Sets the options and the program source (hashed into Trace.source_sha256, used to widen
// statement spans to whole lines and to fill byte offsets) for the next start(). The
// source is copied. Discards any trace not yet taken. Requires the GIL.
void ConfigureTrace(const TraceOptions& options, std::string_view source);

// Moves the trace recorded by the last start()/stop() into *out (replacing its contents)
// and resets the recorder. If stop() was not called, stops first. Requires the GIL.
// The recorder builds the trace on its own arena: a swap if *out lives on that arena,
// else a deep copy (pass an arena-allocated message, or use TakeSerializedTrace, when
// the trace is large).
void TakeTrace(proto::Trace* out);

// Like TakeTrace, but serializes the trace (a proto::Trace) straight from the recorder's
// arena into *out: the cheapest way to ship it through the sandbox's result channel.
// Returns false if serialization failed (then *out is unspecified).
bool TakeSerializedTrace(std::string* out);

}  // namespace egca::tracer

// Module init function of `_egca_trace`: start(filename: str) -> None, stop() -> None,
// is_active() -> bool. start() without a previous ConfigureTrace() uses default options
// (with enabled = true) and an empty source. Returns a new reference.
extern "C" PyObject* PyInit__egca_trace(void);
