#include "plain_value_encode.h"

#include <cstdint>
#include <cstring>

#include "plain_value.h"
#include "python_runtime.h"

namespace egca::tracer {
namespace {

class Encoder {
 public:
  Encoder(size_t max_bytes, std::string* out, std::string* why)
      : max_bytes_(max_bytes), out_(out), why_(why) {}

  bool Value(PyObject* v, int depth) {
    if (depth > kMaxPlainDepth) return Fail("nested deeper than 100");
    if (out_->size() > max_bytes_) return Fail("larger than the result limit");
    if (v == Py_None) return Tag('N');
    if (v == Py_True) return Tag('T');
    if (v == Py_False) return Tag('F');
    if (PyLong_CheckExact(v)) return Int(v);
    if (PyFloat_CheckExact(v)) return Tag('f') && Double(PyFloat_AS_DOUBLE(v));
    if (PyComplex_CheckExact(v)) {
      Py_complex c = reinterpret_cast<PyComplexObject*>(v)->cval;
      return Tag('c') && Double(c.real) && Double(c.imag);
    }
    if (PyUnicode_CheckExact(v)) {
      Py_ssize_t size = 0;
      const char* utf8 = PyUnicode_AsUTF8AndSize(v, &size);
      if (utf8 == nullptr) {
        PyErr_Clear();
        return Fail("str with lone surrogates");
      }
      return Bytes('s', utf8, static_cast<size_t>(size));
    }
    if (PyBytes_CheckExact(v)) {
      return Bytes('b', PyBytes_AS_STRING(v), static_cast<size_t>(PyBytes_GET_SIZE(v)));
    }
    if (PyList_CheckExact(v)) {
      const Py_ssize_t n = PyList_GET_SIZE(v);
      if (!Tag('l') || !Count(n)) return false;
      for (Py_ssize_t i = 0; i < n; ++i) {
        if (!Value(PyList_GET_ITEM(v, i), depth + 1)) return false;
      }
      return true;
    }
    if (PyTuple_CheckExact(v)) {
      const Py_ssize_t n = PyTuple_GET_SIZE(v);
      if (!Tag('t') || !Count(n)) return false;
      for (Py_ssize_t i = 0; i < n; ++i) {
        if (!Value(PyTuple_GET_ITEM(v, i), depth + 1)) return false;
      }
      return true;
    }
    if (PyDict_CheckExact(v)) {
      if (!Tag('d') || !Count(PyDict_GET_SIZE(v))) return false;
      Py_ssize_t pos = 0;
      PyObject *key = nullptr, *item = nullptr;  // Borrowed.
      while (PyDict_Next(v, &pos, &key, &item)) {
        if (!Value(key, depth + 1) || !Value(item, depth + 1)) return false;
      }
      return true;
    }
    if (PySet_CheckExact(v) || PyFrozenSet_CheckExact(v)) {
      if (!Tag(PySet_CheckExact(v) ? 'S' : 'z') || !Count(PySet_GET_SIZE(v))) return false;
      Py_ssize_t pos = 0;
      PyObject* key = nullptr;  // Borrowed.
      Py_hash_t hash = 0;
      while (_PySet_NextEntry(v, &pos, &key, &hash)) {
        if (!Value(key, depth + 1)) return false;
      }
      return true;
    }
    return Fail(Py_TYPE(v)->tp_name);
  }

 private:
  bool Fail(const char* why) {
    if (why_->empty()) *why_ = why;
    return false;
  }
  bool Tag(char tag) {
    out_->push_back(tag);
    return true;
  }
  void Fixed(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  bool Double(double d) {
    uint64_t raw = 0;
    std::memcpy(&raw, &d, sizeof(raw));
    Fixed(raw, 8);
    return true;
  }
  bool Count(Py_ssize_t n) {
    if (n < 0 || static_cast<uint64_t>(n) > UINT32_MAX) return Fail("too many elements");
    Fixed(static_cast<uint64_t>(n), 4);
    return true;
  }
  bool Bytes(char tag, const char* data, size_t size) {
    if (size > UINT32_MAX || size > max_bytes_) return Fail("larger than the result limit");
    Tag(tag);
    Fixed(size, 4);
    out_->append(data, size);
    return true;
  }
  bool Int(PyObject* v) {
    int overflow = 0;
    const long long small = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow == 0 && !(small == -1 && PyErr_Occurred())) {
      Tag('i');
      Fixed(static_cast<uint64_t>(small), 8);
      return true;
    }
    PyErr_Clear();
    // int's own repr (an exact int: no program code), bounded by int_max_str_digits.
    PyRef text = PyRef::Steal(PyLong_Type.tp_repr(v));
    Py_ssize_t size = 0;
    const char* digits = text ? PyUnicode_AsUTF8AndSize(text.get(), &size) : nullptr;
    if (digits == nullptr) {
      PyErr_Clear();
      return Fail("int too large to encode");
    }
    return Bytes('I', digits, static_cast<size_t>(size));
  }

  size_t max_bytes_;
  std::string* out_;
  std::string* why_;
};

}  // namespace

bool EncodePlainValue(PyObject* value, size_t max_bytes, std::string* out, std::string* why) {
  why->clear();
  Encoder encoder(max_bytes, out, why);
  const bool ok = encoder.Value(value, 0);
  if (PyErr_Occurred()) PyErr_Clear();
  return ok && out->size() <= max_bytes;
}

}  // namespace egca::tracer
