// The embedded interpreter as the executor uses it: isolated initialization, the harness
// module, and an owning PyObject* handle.
#pragma once

#include <Python.h>

#include <functional>
#include <string>
#include <vector>

#include "egca/core/status.h"

namespace egca::tracer {

// Owned reference to a Python object (Py_XDECREF on destruction). Requires the GIL for
// every operation that touches the object.
class PyRef {
 public:
  PyRef() = default;
  // Takes ownership of a new reference (may be null).
  static PyRef Steal(PyObject* owned) { return PyRef(owned); }
  // Adds a reference to a borrowed object.
  static PyRef Borrow(PyObject* borrowed) {
    Py_XINCREF(borrowed);
    return PyRef(borrowed);
  }
  ~PyRef() { Py_XDECREF(obj_); }
  PyRef(PyRef&& other) noexcept : obj_(other.obj_) { other.obj_ = nullptr; }
  PyRef& operator=(PyRef&& other) noexcept {
    if (this != &other) {
      Py_XDECREF(obj_);
      obj_ = other.obj_;
      other.obj_ = nullptr;
    }
    return *this;
  }
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;

  PyObject* get() const { return obj_; }  // Borrowed.
  explicit operator bool() const { return obj_ != nullptr; }
  PyObject* release() {  // Returns the owned reference.
    PyObject* o = obj_;
    obj_ = nullptr;
    return o;
  }

 private:
  explicit PyRef(PyObject* owned) : obj_(owned) {}
  PyObject* obj_ = nullptr;
};

struct InterpreterOptions {
  // Imported once so that forked children find them in sys.modules.
  std::vector<std::string> preload_modules;
  // Standard library of the embedded interpreter (Debian's, never a pyenv one).
  std::string stdlib_dir = "/usr/lib/python3.11";
};

// Initializes the interpreter of this process, if not yet initialized, with an isolated
// configuration: no environment variables, no site module (so no site-packages), fixed
// hash seed 0, no signal handlers, no bytecode writing, Debian's stdlib only. Registers
// `_egca_trace` as a builtin module first. Then loads egca's harness and imports
// `preload_modules`. Idempotent; on return the calling thread holds the GIL.
// Errors name the module that failed to import, with the Python exception.
Status InitializeInterpreter(const InterpreterOptions& options);

// Prepares this process for forking test children: fixed os.environ and codec lookup,
// then `exercise` (if given; the executor runs trusted sample tests through the whole
// child path here so that children inherit resolved symbols, quickened bytecode and
// filled caches instead of redoing that work, and its copy-on-write faults, in every
// run), then gc.collect() + gc.freeze(). Call in the fork server after
// InitializeInterpreter, not in processes that run the harness in-process.
Status WarmUpForForking(const std::function<Status()>& exercise = {});

// harness.run_test (borrowed; valid after InitializeInterpreter succeeded).
PyObject* HarnessRunTest();
// harness.prepare_test (borrowed): checks and compiles a test before the candidate runs.
PyObject* HarnessPrepareTest();
// Whether run_test left a traced second run pending (retrace_visible_failures), and running
// it (harness.retrace). HarnessRetrace returns false when none was pending, or when the
// retrace is not the failing run's (an assert test's replay that diverged from it): its
// trace is then dropped.
bool HarnessRetracePending();
bool HarnessRetrace();

// Calls harness.<name>() without arguments (a reused test process's session_begin /
// session_reset). Errors carry the Python exception.
Status CallHarness(const char* name);

// harness.<name>, or the result of calling it when `call`, as bytes (a bytes or str value).
StatusOr<std::string> HarnessBytes(const char* name, bool call);

// "TypeError: message" for the pending Python exception, which is cleared. Requires the GIL.
std::string FetchPythonError();

}  // namespace egca::tracer
