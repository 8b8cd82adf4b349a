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
