// The only translation unit that sees CPython's internal structs (see python_compat.h).
#define Py_BUILD_CORE 1
#include "python_compat.h"

#include "internal/pycore_code.h"
#include "internal/pycore_frame.h"

namespace egca::tracer::hook {

void DisableLineEvents(PyFrameObject* frame) {
  frame->f_trace_lines = 0;
  frame->f_trace_opcodes = 0;
}

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
