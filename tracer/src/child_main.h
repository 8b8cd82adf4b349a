// What runs in the sandboxed child: decode the request, run the harness on it, write the
// completion record. Also callable in-process (tests initialize the interpreter in the
// test binary and call RunRequestInProcess without a fork server).
#pragma once

#include <functional>
#include <string_view>

#include "egca/core/status.h"
#include "egca/tracer/exec.pb.h"

namespace egca::tracer {

// Runs one test in this process's interpreter and returns the completion record.
// Requires InitializeInterpreter() and the GIL. The candidate runs in this process: use
// only with trusted programs outside the sandbox.
// With retrace_failures and a failing test, `on_verdict` (if set) gets the untraced run's
// record (retrace_follows set) before the traced second run starts; the returned record is
// that one plus the trace. With `serialized_trace`, the trace is not put in the record but
// serialized (a proto::Trace) into *serialized_trace, straight from the recorder (empty:
// no trace).
proto::ExecResult RunRequestInProcess(
    const proto::ExecRequest& request,
    const std::function<void(const proto::ExecResult&)>& on_verdict = nullptr,
    std::string* serialized_trace = nullptr);

// Runs trusted sample tests of every kind `rounds` times through the child's whole path
// (request decoding, harness, record encoding) in this process. Called in the fork server
// before gc.freeze(): children then inherit resolved symbols, quickened harness bytecode
// and filled type/method caches instead of each redoing that work and copy-on-writing
// the pages it touches. Errors: a sample did not produce a record.
Status ExerciseChildPath(int rounds);

// sandbox::ChildMain for the executor's fork server: re-initializes the interpreter's
// per-process state after fork, parses `payload` (a serialized ExecRequest, see
// executor.cpp for the framing), runs it and writes the record (with the request's
// record_key) to `result_fd` as result_channel.h frames. Returns the child's exit code (0 after a written record).
int ExecutorChildMain(std::string_view payload, int result_fd);

}  // namespace egca::tracer
