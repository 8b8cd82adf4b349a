// The child's side of plain values (plain_value.h): a Python object made only of exactly
// None, bool, int, float, complex, str, bytes, list, tuple, dict, set and frozenset, in
// the canonical encoding. Reads the objects' storage through the C API and calls no
// Python code (no __eq__, __hash__, __iter__ or __repr__ of the program runs).
#pragma once

#include <Python.h>

#include <cstddef>
#include <string>

namespace egca::tracer {

// Appends the encoding of `value` to *out. False when the value is not plain data (then
// *why names what was found: a type name, "nested deeper than 100", "larger than N
// bytes"), with *out unspecified. Requires the GIL; leaves no Python error set.
bool EncodePlainValue(PyObject* value, size_t max_bytes, std::string* out, std::string* why);

}  // namespace egca::tracer
