#include "python_runtime.h"

#include <fmt/format.h>

#include <cstring>
#include <string>

#include "egca/tracer/executor.h"
#include "harness_candidate_py.h"
#include "harness_py.h"
#include "harness_session_py.h"
#include "harness_table_py.h"
#include "harness_test_process_py.h"
#include "harness_wire_py.h"
#include "trace_recorder.h"

namespace egca::tracer {
namespace {

// Owned by the process for its lifetime (the interpreter is never finalized: children
// are forked from it and _exit()).
PyObject* g_run_test = nullptr;
PyObject* g_prepare_test = nullptr;
PyObject* g_harness = nullptr;

std::wstring Widen(const std::string& s) { return std::wstring(s.begin(), s.end()); }

Status ConfigStatus(PyStatus status, const char* what) {
  if (PyStatus_Exception(status)) {
    return Internal(
        fmt::format("embedded Python: {}: {}", what, status.err_msg ? status.err_msg : "failed"));
  }
  return Status::Ok();
}

Status InitializeIsolated(const InterpreterOptions& options) {
  if (PyImport_AppendInittab(kTraceModuleName, &PyInit__egca_trace) != 0) {
    return Internal("embedded Python: cannot register the _egca_trace module");
  }
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  // Children inherit the parent's hash secret: fix it so str/bytes hashes, set iteration
  // order and everything derived from them are the same in every run.
  config.use_hash_seed = 1;
  config.hash_seed = 0;
  config.install_signal_handlers = 0;
  config.site_import = 0;
  config.user_site_directory = 0;
  config.write_bytecode = 0;
  config.parse_argv = 0;
  config.safe_path = 1;
  Status status = ConfigStatus(PyConfig_SetString(&config, &config.program_name, L"egca-python"),
                               "program name");
  const std::wstring stdlib = Widen(options.stdlib_dir);
  const std::wstring dynload = Widen(options.stdlib_dir + "/lib-dynload");
  if (status.ok()) {
    config.module_search_paths_set = 1;
    status = ConfigStatus(PyWideStringList_Append(&config.module_search_paths, stdlib.c_str()),
                          "module search path");
  }
  if (status.ok()) {
    status = ConfigStatus(PyWideStringList_Append(&config.module_search_paths, dynload.c_str()),
                          "module search path");
  }
  if (status.ok()) {
    status = ConfigStatus(Py_InitializeFromConfig(&config), "initialization");
  }
  PyConfig_Clear(&config);
  return status;
}

// The harness's rooms (harness.HARNESS_ROOMS), in that order: each file's text is
// executed into the namespace of the module harness.py made, as harness.py itself does
// when it is imported from tracer/src.
struct HarnessRoom {
  const char* name;
  const char* text;
};
constexpr HarnessRoom kHarnessRooms[] = {
    {"harness_wire", kHarnessWirePy},
    {"harness_table", kHarnessTablePy},
    {"harness_candidate", kHarnessCandidatePy},
    {"harness_test_process", kHarnessTestProcessPy},
    {"harness_session", kHarnessSessionPy},
};

Status LoadHarnessRooms(PyObject* module) {
  PyObject* names = PyObject_GetAttrString(module, "HARNESS_ROOMS");  // New reference.
  PyRef owned = PyRef::Steal(names);
  constexpr Py_ssize_t kRooms = sizeof(kHarnessRooms) / sizeof(kHarnessRooms[0]);
  if (names == nullptr || !PyTuple_Check(names) || PyTuple_GET_SIZE(names) != kRooms) {
    PyErr_Clear();
    return Internal("embedded Python: harness.py: HARNESS_ROOMS does not list the embedded rooms");
  }
  PyObject* globals = PyModule_GetDict(module);  // Borrowed.
  for (Py_ssize_t i = 0; i < kRooms; ++i) {
    const HarnessRoom& room = kHarnessRooms[i];
    const char* listed = PyUnicode_AsUTF8(PyTuple_GET_ITEM(names, i));
    if (listed == nullptr || std::strcmp(listed, room.name) != 0) {
      PyErr_Clear();
      return Internal(fmt::format("embedded Python: harness.py: room {} is not {}", i + 1,
                                  room.name));
    }
    const std::string filename = fmt::format("<egca-{}>", room.name);
    PyRef code = PyRef::Steal(Py_CompileString(room.text, filename.c_str(), Py_file_input));
    if (!code) {
      return Internal(fmt::format("embedded Python: {}.py: {}", room.name, FetchPythonError()));
    }
    PyRef done = PyRef::Steal(PyEval_EvalCode(code.get(), globals, globals));
    if (!done) {
      return Internal(fmt::format("embedded Python: {}.py: {}", room.name, FetchPythonError()));
    }
  }
  return Status::Ok();
}

Status LoadHarness() {
  PyRef code = PyRef::Steal(Py_CompileString(kHarnessPy, "<egca-harness>", Py_file_input));
  if (!code) return Internal("embedded Python: harness.py: " + FetchPythonError());
  PyRef module = PyRef::Steal(PyImport_ExecCodeModule("_egca_harness", code.get()));
  if (!module) return Internal("embedded Python: harness.py: " + FetchPythonError());
  EGCA_RETURN_IF_ERROR(LoadHarnessRooms(module.get()));
  // Not left in sys.modules: the candidate should not find the harness by name.
  if (PyDict_DelItemString(PyImport_GetModuleDict(), "_egca_harness") != 0) PyErr_Clear();
  PyObject* run_test = PyObject_GetAttrString(module.get(), "run_test");
  if (run_test == nullptr) return Internal("embedded Python: harness.py: " + FetchPythonError());
  PyObject* prepare_test = PyObject_GetAttrString(module.get(), "prepare_test");
  if (prepare_test == nullptr) {
    return Internal("embedded Python: harness.py: " + FetchPythonError());
  }
  g_run_test = run_test;
  g_prepare_test = prepare_test;
  g_harness = module.release();
  return Status::Ok();
}

}  // namespace

std::string FetchPythonError() {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  PyRef t = PyRef::Steal(type), v = PyRef::Steal(value), tb = PyRef::Steal(traceback);
  if (!t) return "unknown Python error";
  std::string text = reinterpret_cast<PyTypeObject*>(t.get())->tp_name;
  if (v) {
    PyRef str = PyRef::Steal(PyObject_Str(v.get()));
    const char* utf8 = str ? PyUnicode_AsUTF8(str.get()) : nullptr;
    if (utf8 != nullptr && *utf8 != '\0') text += std::string(": ") + utf8;
    if (utf8 == nullptr) PyErr_Clear();
  }
  return text;
}

Status InitializeInterpreter(const InterpreterOptions& options) {
  if (g_run_test != nullptr) return Status::Ok();
  if (!Py_IsInitialized()) EGCA_RETURN_IF_ERROR(InitializeIsolated(options));
  EGCA_RETURN_IF_ERROR(LoadHarness());
  for (const std::string& name : options.preload_modules) {
    PyRef module = PyRef::Steal(PyImport_ImportModule(name.c_str()));
    if (!module) {
      return Internal(
          fmt::format("embedded Python: cannot preload module '{}': {}", name, FetchPythonError()));
    }
  }
  return Status::Ok();
}

Status WarmUpForForking(const std::function<Status()>& exercise) {
  if (g_harness == nullptr) return FailedPrecondition("embedded Python: harness not loaded");
  PyRef result = PyRef::Steal(PyObject_CallMethod(g_harness, "warm_up", nullptr));
  if (!result) return Internal("embedded Python: harness.warm_up: " + FetchPythonError());
  if (exercise) EGCA_RETURN_IF_ERROR(exercise());
  result = PyRef::Steal(PyObject_CallMethod(g_harness, "freeze", nullptr));
  if (!result) return Internal("embedded Python: harness.freeze: " + FetchPythonError());
  return Status::Ok();
}

PyObject* HarnessRunTest() { return g_run_test; }
PyObject* HarnessPrepareTest() { return g_prepare_test; }

bool HarnessRetrace() {
  if (g_harness == nullptr) return false;
  PyRef pending = PyRef::Steal(PyObject_CallMethod(g_harness, "retrace_pending", nullptr));
  if (!pending || !PyObject_IsTrue(pending.get())) {
    PyErr_Clear();
    return false;
  }
  PyRef done = PyRef::Steal(PyObject_CallMethod(g_harness, "retrace", nullptr));
  if (!done) {
    PyErr_Clear();  // the trace says how far it got
    return true;
  }
  // False: the retrace is not the failing run's (a replay that diverged from it).
  const int kept = PyObject_IsTrue(done.get());
  if (kept < 0) PyErr_Clear();
  return kept != 0;
}

Status CallHarness(const char* name) {
  if (g_harness == nullptr) return Internal("embedded Python: the harness is not loaded");
  PyRef result = PyRef::Steal(PyObject_CallMethod(g_harness, name, nullptr));
  if (!result) return Internal(std::string("embedded Python: harness.") + name + ": " + FetchPythonError());
  return Status::Ok();
}

StatusOr<std::string> HarnessBytes(const char* name, bool call) {
  if (g_harness == nullptr) return Internal("embedded Python: the harness is not loaded");
  PyRef value = PyRef::Steal(call ? PyObject_CallMethod(g_harness, name, nullptr)
                                  : PyObject_GetAttrString(g_harness, name));
  if (!value) return Internal(std::string("embedded Python: harness.") + name + ": " + FetchPythonError());
  char* data = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_Check(value.get())) {
    if (PyBytes_AsStringAndSize(value.get(), &data, &size) != 0) data = nullptr;
  } else if (PyUnicode_Check(value.get())) {
    const char* utf8 = PyUnicode_AsUTF8AndSize(value.get(), &size);
    data = const_cast<char*>(utf8);
  }
  if (data == nullptr) {
    PyErr_Clear();
    return Internal(std::string("embedded Python: harness.") + name + " is not bytes or str");
  }
  return std::string(data, static_cast<size_t>(size));
}

bool HarnessRetracePending() {
  if (g_harness == nullptr) return false;
  PyRef pending = PyRef::Steal(PyObject_CallMethod(g_harness, "retrace_pending", nullptr));
  const bool yes = pending && PyObject_IsTrue(pending.get()) == 1;
  PyErr_Clear();
  return yes;
}

std::vector<std::string> DefaultPreloadModules() {
  return {"collections", "itertools", "math",     "heapq",  "bisect",    "functools",
          "re",          "string",    "json",     "typing", "fractions", "decimal",
          "random",      "copy",      "operator", "sys",    "io",        "statistics",
          "datetime",    "hashlib",   "array",    "time",   "traceback"};
}

}  // namespace egca::tracer
