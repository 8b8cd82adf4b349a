// What runs in the sandboxed child: decode the request, run the harness on it, write the
// completion record. Also callable in-process (tests initialize the interpreter in the
// test binary and call RunRequestInProcess without a fork server).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "egca/core/status.h"
#include "egca/tracer/exec.pb.h"

namespace egca::tracer {

// Runs one test in this process's interpreter. Requires InitializeInterpreter() and the
// GIL. The candidate runs in this process: use only with trusted programs outside the
// sandbox. `on_prepared` (if set) gets the preparation record (EXEC_PREPARED, or
// EXEC_TEST_ERROR for a malformed test) before any candidate code runs; the return value
// is the completion record (for a malformed test: that test-error record again). Nothing
// is judged here: a completed run is EXEC_OK with, for a call test, the returned value
// (ExecResult.value). With `serialized_trace`, the trace is not put in the record but
// serialized (a proto::Trace) into *serialized_trace, straight from the recorder (empty:
// no trace).
// With retrace_visible_failures and a failure the child sees itself, `on_verdict` gets the
// completion record (retrace_follows set) before the traced second run; the returned
// record is that one with the second run's trace.
proto::ExecResult RunRequestInProcess(
    const proto::ExecRequest& request,
    const std::function<void(const proto::ExecResult&)>& on_prepared = nullptr,
    std::string* serialized_trace = nullptr,
    const std::function<void(const proto::ExecResult&)>& on_verdict = nullptr);

// Runs trusted sample tests of every kind `rounds` times through the child's whole path
// (request decoding, harness, record encoding) in this process. Called in the fork server
// before gc.freeze(): children then inherit resolved symbols, quickened harness bytecode
// and filled type/method caches instead of each redoing that work and copy-on-writing
// the pages it touches. Errors: a sample did not produce a record.
Status ExerciseChildPath(int rounds);

// The candidate process's side of an assert test in two processes, run in this process
// for the prefault probe: `program` runs and answers `frames` (length-prefixed call
// frames, as harness.probe_call_frames() makes them), queued in a socket at
// sandbox::kChildPeerFd whose other end then closes. Uses and closes descriptor
// kChildPeerFd. Errors: the program did not complete, or did not answer every call.
Status ExerciseCandidateRole(const std::string& program, const std::string& frames);

// The executor's fork-server warm-up (both start modes): initialize the interpreter as
// `config` says, run ExerciseChildPath, freeze the heap. Errors: the interpreter or a
// sample failed (the message says which).
Status WarmUpExecutorServer(const proto::ServerConfig& config);

// sandbox::ChildMain for the executor's fork server: re-initializes the interpreter's
// per-process state after fork, parses `payload` (a serialized ExecRequest), runs it and
// writes the preparation and completion records to `result_fd` as result_channel.h
// frames. Returns the child's exit code (0 after a written record).
int ExecutorChildMain(std::string_view payload, int result_fd);

}  // namespace egca::tracer
