// egca._egca: the compiled half of `import egca` (the pure-Python half is tools/python/egca).
// Each Bind* lives in its own file: data sets, routing, credit.
#include "common.h"
#include "egca/core/files.h"

namespace egca::python {

void BindData(py::module_& m);
void BindRouting(py::module_& m);
void BindCredit(py::module_& m);

std::string Utf8Argument(const py::handle& value, const std::string& what) {
  std::string bytes;
  if (py::isinstance<py::bytes>(value)) {
    bytes = value.cast<std::string>();
  } else if (py::isinstance<py::str>(value)) {
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(value.ptr(), &size);
    if (data == nullptr) {
      PyErr_Clear();
      Raise(PyExc_ValueError, what + " is not valid UTF-8 (a str with a lone surrogate)");
    }
    bytes.assign(data, static_cast<size_t>(size));
  } else {
    Raise(PyExc_TypeError, what + " must be str or bytes, not " +
                               std::string(Py_TYPE(value.ptr())->tp_name));
  }
  if (long at = FindInvalidUtf8(bytes); at >= 0) {
    Raise(PyExc_ValueError, what + " is not valid UTF-8 (byte " + std::to_string(at) + ")");
  }
  return bytes;
}

}  // namespace egca::python

PYBIND11_MODULE(_egca, m) {
  m.doc() = "egca: execution-grounded credit assignment for RL on code (compiled core)";
  egca::python::BindData(m);
  egca::python::BindRouting(m);
  egca::python::BindCredit(m);
}
