// In-process tracing for the tracer's own tests and benchmarks: one embedded interpreter
// per test binary with `_egca_trace` registered, and a helper that runs a program the way
// the harness does (compiled as kUserFilename, start right before, stop right after).
#pragma once

#include <Python.h>

#include <string>

#include "egca/tracer/trace.pb.h"
#include "egca/tracer/trace_options.h"
#include "trace_recorder.h"

namespace egca::tracer::testing {

// Initializes the interpreter once (with _egca_trace) and keeps it for the process.
inline void EnsurePython() {
  static bool done = [] {
    PyImport_AppendInittab(kTraceModuleName, &PyInit__egca_trace);
    Py_InitializeEx(0);
    return true;
  }();
  (void)done;
}

struct TracedRun {
  proto::Trace trace;
  std::string error;   // compile error or uncaught exception type ("" if none)
  std::string stdout_text;
};

// Compiles and runs `source` as the user's program with stdin `input`, traced with
// `options` (enabled forced on), and returns the trace. Output goes to a StringIO.
// With `serialized`, the trace is taken with TakeSerializedTrace() into *serialized (and
// parsed into the returned run's trace) instead of TakeTrace().
inline TracedRun RunTraced(const std::string& source, const std::string& input,
                           TraceOptions options, std::string* serialized = nullptr) {
  EnsurePython();
  options.enabled = true;
  TracedRun run;
  PyObject* code = Py_CompileString(source.c_str(), kUserFilename, Py_file_input);
  if (code == nullptr) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    run.error = t ? reinterpret_cast<PyTypeObject*>(t)->tp_name : "compile error";
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    return run;
  }
  PyObject* io = PyImport_ImportModule("io");
  PyObject* sys = PyImport_ImportModule("sys");
  PyObject* out = PyObject_CallMethod(io, "StringIO", nullptr);
  PyObject* in = PyObject_CallMethod(io, "StringIO", "s", input.c_str());
  PyObject* old_out = PyObject_GetAttrString(sys, "stdout");
  PyObject* old_in = PyObject_GetAttrString(sys, "stdin");
  PyObject_SetAttrString(sys, "stdout", out);
  PyObject_SetAttrString(sys, "stdin", in);

  PyObject* globals = PyDict_New();
  PyDict_SetItemString(globals, "__name__", PyUnicode_FromString("__main__"));
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  PyObject* module = PyImport_ImportModule(kTraceModuleName);

  ConfigureTrace(options, source);
  PyObject* started = PyObject_CallMethod(module, "start", "s", kUserFilename);
  Py_XDECREF(started);
  PyObject* result = PyEval_EvalCode(code, globals, globals);
  PyObject *t = nullptr, *v = nullptr, *tb = nullptr;
  if (result == nullptr) PyErr_Fetch(&t, &v, &tb);
  PyObject* stopped = PyObject_CallMethod(module, "stop", nullptr);
  Py_XDECREF(stopped);
  if (serialized != nullptr) {
    if (TakeSerializedTrace(serialized)) run.trace.ParseFromString(*serialized);
  } else {
    TakeTrace(&run.trace);
  }
  if (result == nullptr) {
    run.error = t ? reinterpret_cast<PyTypeObject*>(t)->tp_name : "error";
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
  }
  Py_XDECREF(result);

  PyObject* text = PyObject_CallMethod(out, "getvalue", nullptr);
  if (text != nullptr) {
    const char* s = PyUnicode_AsUTF8(text);
    if (s != nullptr) run.stdout_text = s;
    Py_DECREF(text);
  }
  PyObject_SetAttrString(sys, "stdout", old_out);
  PyObject_SetAttrString(sys, "stdin", old_in);
  PyDict_Clear(globals);
  Py_DECREF(globals);
  Py_XDECREF(module);
  Py_XDECREF(old_out);
  Py_XDECREF(old_in);
  Py_XDECREF(out);
  Py_XDECREF(in);
  Py_XDECREF(sys);
  Py_XDECREF(io);
  Py_DECREF(code);
  PyErr_Clear();
  return run;
}

}  // namespace egca::tracer::testing
