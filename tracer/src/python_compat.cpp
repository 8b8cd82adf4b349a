// The only translation unit that sees CPython's internal structs (see python_compat.h).
#define Py_BUILD_CORE 1
#include "python_compat.h"

#include <pthread.h>

#include <algorithm>
#include <cstddef>

#include "internal/pycore_code.h"
#include "internal/pycore_frame.h"

namespace egca::tracer::hook {

void DisableLineEvents(PyFrameObject* frame) {
  frame->f_trace_lines = 0;
  frame->f_trace_opcodes = 0;
}

namespace {

struct FrameFilter {
  bool active = false;
  PyThreadState* tstate = nullptr;  // the traced thread
  UserCodePredicate is_user = nullptr;
  void* context = nullptr;
  Py_tracefunc trace_function = nullptr;
  PyObject* trace_object = nullptr;  // Borrowed (the recorder owns it)
  _PyFrameEvalFunction previous = nullptr;
  int nesting = 0;                   // filter calls on the C stack
  const char* stack_base = nullptr;  // address of the outermost one's frame
  size_t stack_budget = 0;           // bytes of C stack the filter's recursion may use
};

FrameFilter g_filter;

// C stack the filter may add: half of what is left below the installing call, at most
// 4 MiB (3.11's default recursion limit of 1000 costs far less).
size_t StackBudget() {
  constexpr size_t kMax = 4u << 20;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return 1u << 20;
  void* low = nullptr;
  size_t size = 0;
  size_t budget = 1u << 20;
  if (pthread_attr_getstack(&attr, &low, &size) == 0 && low != nullptr) {
    char here;
    auto left = static_cast<size_t>(&here - static_cast<char*>(low));
    budget = std::min(kMax, left / 2);
  }
  pthread_attr_destroy(&attr);
  return budget;
}

bool TracerIsOurs(PyThreadState* tstate) {
  return tstate->c_tracefunc == g_filter.trace_function &&
         tstate->c_traceobj == g_filter.trace_object && tstate->c_profilefunc == nullptr;
}

PyObject* FilteredEvalFrame(PyThreadState* tstate, _PyInterpreterFrame* frame, int throwflag) {
  if (!g_filter.active || tstate != g_filter.tstate) {
    return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
  }
  char here;
  if (g_filter.nesting == 0) g_filter.stack_base = &here;
  _PyCFrame* caller = tstate->cframe;
  uint8_t saved = caller->use_tracing;
  if (TracerIsOurs(tstate)) {
    if (static_cast<size_t>(g_filter.stack_base - &here) > g_filter.stack_budget) {
      // Deep recursion: back to tracing mode everywhere, calls inlined again.
      RemoveFrameFilter();
      caller->use_tracing = 255;
      saved = 255;
    } else {
      caller->use_tracing = g_filter.is_user(frame->f_code, g_filter.context) ? 255 : 0;
    }
  }
  ++g_filter.nesting;
  PyObject* result = _PyEval_EvalFrameDefault(tstate, frame, throwflag);
  --g_filter.nesting;
  // The callee's use_tracing was copied into ours on its way out.
  if (g_filter.active && TracerIsOurs(tstate)) {
    tstate->cframe->use_tracing = saved;
  } else {
    tstate->cframe->use_tracing =
        (tstate->c_tracefunc != nullptr || tstate->c_profilefunc != nullptr) ? 255 : 0;
  }
  return result;
}

}  // namespace

void InstallFrameFilter(UserCodePredicate is_user, void* context, Py_tracefunc trace_function,
                        PyObject* trace_object) {
  PyThreadState* tstate = PyThreadState_Get();
  PyInterpreterState* interp = PyThreadState_GetInterpreter(tstate);
  if (!g_filter.active) g_filter.previous = _PyInterpreterState_GetEvalFrameFunc(interp);
  g_filter.tstate = tstate;
  g_filter.is_user = is_user;
  g_filter.context = context;
  g_filter.trace_function = trace_function;
  g_filter.trace_object = trace_object;
  g_filter.nesting = 0;
  g_filter.stack_base = nullptr;
  // pthread_getattr_np reads /proc/self/maps for the main thread: once per thread.
  static thread_local size_t budget = StackBudget();
  g_filter.stack_budget = budget;
  g_filter.active = true;
  _PyInterpreterState_SetEvalFrameFunc(interp, &FilteredEvalFrame);
  // The caller (harness or embedding code) is not user code.
  if (TracerIsOurs(tstate)) tstate->cframe->use_tracing = 0;
}

void RemoveFrameFilter() {
  if (!g_filter.active) return;
  g_filter.active = false;
  PyInterpreterState* interp = PyThreadState_GetInterpreter(g_filter.tstate);
  _PyInterpreterState_SetEvalFrameFunc(
      interp, g_filter.previous != nullptr ? g_filter.previous : &_PyEval_EvalFrameDefault);
}

bool FrameFilterActive() { return g_filter.active; }

bool IsSuspendedGenerator(PyFrameObject* frame) {
  _PyInterpreterFrame* iframe = frame->f_frame;
  if (iframe == nullptr || iframe->owner != FRAME_OWNED_BY_GENERATOR) return false;
  return _PyFrame_GetGenerator(iframe)->gi_frame_state == FRAME_SUSPENDED;
}

}  // namespace egca::tracer::hook

namespace egca::tracer::hook {

PyCodeObject* BorrowedCode(PyFrameObject* frame) { return frame->f_frame->f_code; }

void CollectLocals(PyFrameObject* frame, std::vector<LocalBinding>* out) {
  _PyInterpreterFrame* iframe = frame->f_frame;
  PyCodeObject* code = iframe->f_code;
  if (!(code->co_flags & CO_OPTIMIZED)) {
    PyObject* ns = iframe->f_locals;
    if (ns != nullptr && PyDict_Check(ns)) {
      Py_ssize_t pos = 0;
      PyObject *key, *value;
      while (PyDict_Next(ns, &pos, &key, &value)) {
        if (PyUnicode_Check(key)) out->push_back({key, value});
      }
    }
    return;  // cell/free slots of class bodies (__class__) are implementation detail
  }
  PyObject* names = code->co_localsplusnames;
  for (int i = 0; i < code->co_nlocalsplus; ++i) {
    _PyLocals_Kind kind = _PyLocals_GetKind(code->co_localspluskinds, i);
    PyObject* value = iframe->localsplus[i];
    if (value == nullptr) continue;
    if (kind & (CO_FAST_CELL | CO_FAST_FREE)) {
      // After the prologue every cell/free slot holds a cell; a plain argument that is
      // also a cell variable is wrapped by MAKE_CELL before RESUME.
      if (!PyCell_Check(value)) {
        if (kind & CO_FAST_FREE) continue;
      } else {
        value = PyCell_GET(value);
        if (value == nullptr) continue;
      }
    }
    out->push_back({PyTuple_GET_ITEM(names, i), value});
  }
}

PyObject* CurrentTraceObject() { return PyThreadState_Get()->c_traceobj; }

}  // namespace egca::tracer::hook

namespace egca::tracer::hook {
namespace {

class LocationReader {
 public:
  LocationReader(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
  bool done() const { return p_ >= end_; }
  int Byte() { return p_ < end_ ? *p_++ : 0; }
  // 6-bit groups, low first; bit 6 continues.
  int Varint() {
    int read = Byte();
    int value = read & 63;
    int shift = 0;
    while ((read & 64) && p_ < end_) {
      read = Byte();
      shift += 6;
      value |= (read & 63) << shift;
    }
    return value;
  }
  int SignedVarint() {
    int u = Varint();
    return (u & 1) ? -(u >> 1) : (u >> 1);
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace

void DecodePositions(PyCodeObject* code, std::vector<PositionRange>* out) {
  PyObject* table = code->co_linetable;
  if (table == nullptr || !PyBytes_Check(table)) return;
  const auto* data = reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(table));
  LocationReader reader(data, data + PyBytes_GET_SIZE(table));
  int line = code->co_firstlineno;
  int unit = 0;
  while (!reader.done()) {
    int first = reader.Byte();
    int kind = (first >> 3) & 15;
    PositionRange r;
    r.begin = unit;
    unit += (first & 7) + 1;
    r.end = unit;
    switch (kind) {
      case 15:  // no location
        break;
      case 14:  // long form
        line += reader.SignedVarint();
        r.line = line;
        r.end_line = line + reader.Varint();
        r.column = reader.Varint() - 1;
        r.end_column = reader.Varint() - 1;
        break;
      case 13:  // no column info
        line += reader.SignedVarint();
        r.line = r.end_line = line;
        break;
      case 10:
      case 11:
      case 12:  // one-line form
        line += kind - 10;
        r.line = r.end_line = line;
        r.column = reader.Byte();
        r.end_column = reader.Byte();
        break;
      default: {  // short form
        int second = reader.Byte();
        r.line = r.end_line = line;
        r.column = (kind << 3) | (second >> 4);
        r.end_column = r.column + (second & 15);
      }
    }
    out->push_back(r);
  }
}

}  // namespace egca::tracer::hook
