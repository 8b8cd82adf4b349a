// Every CPython-version dependency of the trace hook lives here. egca embeds Debian's
// CPython 3.11 (3.11.2); the hook is written against 3.11's tracing machinery.
//
// CPython 3.11 quirks the trace hook has to live with:
//
// * Line events cannot be turned off per frame through the public C API. A C trace
//   function installed with PyEval_SetTrace() puts the whole thread in "tracing" mode:
//   every instruction of every frame goes through maybe_call_line_trace(), which
//   materializes a PyFrameObject for the frame and delivers PyTrace_LINE for every new
//   line, whichever file the code comes from. Unlike sys.settrace() there is no per-frame
//   local trace function to return NULL from. The one per-frame switch is the frame
//   object's `f_trace_lines` field (the `frame.f_trace_lines` attribute), which lives in
//   the internal struct `_frame` (internal/pycore_frame.h). At the CALL event of a
//   non-user frame the hook clears it, so the stdlib and the harness cost an
//   instruction-level check but no trace-function call per line.
//   CALL/RETURN/EXCEPTION events still arrive for every frame; the hook rejects them with
//   one pointer lookup in a per-code-object cache.
//
// * The per-frame switch that does exist is the thread's tracing mode itself: the
//   `use_tracing` byte of the C-level frame (_PyCFrame) of the running
//   _PyEval_EvalFrameDefault, copied into every new one. InstallFrameFilter() installs a
//   PEP 523 frame-evaluation function that sets it per frame from the code object: user
//   code runs in tracing mode (events, line checks), everything else at full speed with
//   specialized instructions, no line checks and no events at all. While a PEP 523
//   function is installed CPython 3.11 stops inlining Python-to-Python calls (CALL and
//   its CALL_PY_* specializations check interp->eval_frame), so every frame evaluation
//   passes through the filter, at the price of one C-level
//   _PyEval_EvalFrameDefault per Python call. On return, 3.11 copies the callee's
//   use_tracing back into the caller's _PyCFrame; the filter restores the caller's own.
//   Deep recursion would now use C stack where 3.11 uses none: past a stack budget the
//   filter removes itself and tracing falls back to tracing mode everywhere (the
//   f_trace_lines switch below), exactly the behaviour without the filter.
//
// * Generators: resuming a generator or coroutine is a CALL event and every yield/await
//   suspension a RETURN event, exactly like a real return. The generator's
//   `gi_frame_state` tells them apart: YIELD_VALUE sets it to FRAME_SUSPENDED before the
//   RETURN event, RETURN_VALUE leaves it at FRAME_EXECUTING. An exception leaving a frame
//   is a RETURN event with arg == NULL (TRACE_FUNCTION_UNWIND).
//
// * Locals of a 3.11 frame live in `localsplus` (fast locals, then cell variables, then
//   free variables). At the CALL event, before the MAKE_CELL / COPY_FREE_VARS
//   instructions have run, cell slots still hold raw argument values or NULL and free
//   slots are NULL. CPython 3.11 reports CALL at RESUME, after that prologue, so
//   CollectLocals() walks localsplus directly (no PyFrame_GetLocals(), which would rebuild
//   a locals dict at every event), dereferencing cells and skipping a free slot that does
//   not hold a cell yet. Module and class bodies: the namespace dict.
//
// * Statement spans come from the position table (PEP 657): PyCode_Addr2Location() per
//   instruction (columns are UTF-8 byte offsets, -1 when unknown). Artificial
//   instructions (RESUME, implicit `return None`) carry positions too and are filtered by
//   line.
#pragma once

#include <Python.h>

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030C0000
#error "egca's trace hook targets CPython 3.11 (Debian's libpython3.11)"
#endif

namespace egca::tracer::hook {

// Stops PyTrace_LINE (and opcode) events for this frame. Borrowed `frame`.
void DisableLineEvents(PyFrameObject* frame);

// Decides whether frames of `code` run in tracing mode. Must not run Python code or leave
// an exception set. Borrowed `code`.
using UserCodePredicate = bool (*)(PyCodeObject* code, void* context);

// Installs the frame filter (see above) for the calling thread, whose C trace function
// `trace_function` with object `trace_object` must already be installed (PyEval_SetTrace):
// frames whose code `is_user` accepts are evaluated in tracing mode, all others not. The
// caller of this function (the harness) continues untraced. The filter stands aside (no
// change to tracing) as soon as the thread's trace or profile function is no longer
// exactly ours. Requires the GIL; one filter per process.
void InstallFrameFilter(UserCodePredicate is_user, void* context, Py_tracefunc trace_function,
                        PyObject* trace_object);
// Removes the filter (idempotent). Frames still running keep their mode until they call
// or return, after which the thread's tracing state is whatever PyEval_SetTrace left.
void RemoveFrameFilter();
// True while the filter is installed (false after it removed itself on deep recursion).
bool FrameFilterActive();

// True if `frame` belongs to a generator/coroutine that is suspended (at yield/await),
// i.e. the current RETURN event is a suspension, not the end of the frame. Borrowed.
bool IsSuspendedGenerator(PyFrameObject* frame);

// Reads an exact int of at most two 30-bit digits (|x| < 2**60) straight from its
// digits: 3.11's PyLongObject stores the signed digit count in ob_size. The hot path of
// hashing ints, without the call into PyLong_AsLongLongAndOverflow. False for bigger
// ints (then *out is untouched). Borrowed `v`, which must be a PyLong.
inline bool SmallLongValue(PyObject* v, long long* out) {
  static_assert(PyLong_SHIFT == 30, "two digits must fit in 62 bits");
  const digit* d = reinterpret_cast<PyLongObject*>(v)->ob_digit;
  switch (Py_SIZE(v)) {
    case 0: *out = 0; return true;
    case 1: *out = static_cast<long long>(d[0]); return true;
    case -1: *out = -static_cast<long long>(d[0]); return true;
    case 2: *out = static_cast<long long>(d[0]) | (static_cast<long long>(d[1]) << 30); return true;
    case -2: *out = -(static_cast<long long>(d[0]) | (static_cast<long long>(d[1]) << 30)); return true;
    default: return false;
  }
}

// Index (in code units) of the frame's last instruction; < 0 if it has not started.
inline int FrameLastInstruction(PyFrameObject* frame) { return PyFrame_GetLasti(frame); }

// True for code objects of generators, coroutines and async generators.
inline bool IsGeneratorCode(PyCodeObject* code) {
  return (code->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) != 0;
}

}  // namespace egca::tracer::hook

#include <vector>

namespace egca::tracer::hook {

// The frame's code object. Borrowed (the frame holds it).
PyCodeObject* BorrowedCode(PyFrameObject* frame);

struct LocalBinding {
  PyObject* name;   // Borrowed.
  PyObject* value;  // Borrowed; never NULL (unbound variables are left out).
};

// Appends the frame's bound variables in local order: fast locals, then cell and free
// variables dereferenced. For module and class bodies (no CO_OPTIMIZED), the entries of
// the namespace dict instead. Valid at trace events, i.e. once the frame has passed its
// MAKE_CELL / COPY_FREE_VARS prologue (CPython 3.11 reports CALL at RESUME, after it).
// The pairs are borrowed from the frame: use them before the event returns.
void CollectLocals(PyFrameObject* frame, std::vector<LocalBinding>* out);

// The object the thread's C trace function was installed with (c_traceobj); borrowed.
PyObject* CurrentTraceObject();

}  // namespace egca::tracer::hook

namespace egca::tracer::hook {

// One entry of a code object's position table (PEP 657), covering code units
// [begin, end). Lines 1-based, columns 0-based UTF-8 bytes; -1 where unknown.
struct PositionRange {
  int begin = 0, end = 0;  // code units
  int line = -1, end_line = -1, column = -1, end_column = -1;
};

// Decodes co_linetable (CPython 3.11's location table format, Objects/locations.md)
// directly: what co_positions() yields, without a Python tuple per instruction.
void DecodePositions(PyCodeObject* code, std::vector<PositionRange>* out);

}  // namespace egca::tracer::hook
