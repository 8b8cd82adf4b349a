// Shared by the binding files of egca._egca: egca::Status -> Python exceptions, JSON ->
// Python objects, UTF-8 checks. Everything here runs with the GIL held.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "egca/core/status.h"

namespace egca::python {

namespace py = pybind11;

// Raises `type` with `message` (the caller holds the GIL).
[[noreturn]] inline void Raise(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

// A failed Status as the Python exception a caller expects: INVALID_ARGUMENT -> ValueError,
// NOT_FOUND -> FileNotFoundError, DATA_LOSS -> OSError, UNIMPLEMENTED ->
// NotImplementedError, anything else -> RuntimeError. `context` prefixes the message.
inline void ThrowIfError(const Status& status, const std::string& context = "") {
  if (status.ok()) return;
  std::string message = context.empty() ? status.message() : context + ": " + status.message();
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
      Raise(PyExc_ValueError, message);
    case StatusCode::kNotFound:
      Raise(PyExc_FileNotFoundError, message);
    case StatusCode::kDataLoss:
      Raise(PyExc_OSError, message);
    case StatusCode::kUnimplemented:
      Raise(PyExc_NotImplementedError, message);
    default:
      Raise(PyExc_RuntimeError, "egca: " + status.ToString());
  }
}

template <typename T>
T Unwrap(StatusOr<T>&& value, const std::string& context = "") {
  if (!value.ok()) ThrowIfError(value.status(), context);
  return std::move(value).value();
}

// A JSON document as plain Python objects (dict, list, str, int, float, bool, None).
template <typename Json>
py::object ToPython(const Json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return py::none();
    case nlohmann::json::value_t::boolean:
      return py::bool_(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(j.template get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(j.template get<double>());
    case nlohmann::json::value_t::string:
      return py::str(j.template get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      py::list out;
      for (const auto& v : j) out.append(ToPython(v));
      return std::move(out);
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (auto it = j.begin(); it != j.end(); ++it) out[py::str(it.key())] = ToPython(it.value());
      return std::move(out);
    }
    default:
      return py::none();
  }
}

// A Python str or bytes argument as UTF-8 bytes. A str with lone surrogates or bytes that
// are not UTF-8 raise ValueError naming `what` and the byte.
std::string Utf8Argument(const py::handle& value, const std::string& what);

}  // namespace egca::python
