// The C-level trace function and the `_egca_trace` module (see trace_recorder.h).
//
// Hot path: TraceFunction() switches on the event after one cached lookup of the frame's
// code object. Non-user code returns at once (and has its line events switched off); user
// code gets a snapshot: changed locals found by comparing each local's structural hash
// with the frame's previous one, only changed values rendered.
#include "trace_recorder.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <structmember.h>

#include "egca/core/span.h"
#include "python_compat.h"
#include "source_digest.h"
#include "value_encoder.h"

namespace egca::tracer {
namespace hook {
namespace {

// _egca_trace.TraceStopped: a BaseException (so `except Exception` in the program does not
// swallow it), created once per process.
PyObject* TraceStoppedType() {
  static PyObject* type = PyErr_NewException("_egca_trace.TraceStopped", PyExc_BaseException,
                                             nullptr);  // lives as long as the process
  return type;
}

// Saves and restores the thread's exception state around one event (EXCEPTION events
// arrive with the exception fetched; nothing we do may leave a new one set).
class ErrorState {
 public:
  ErrorState() { PyErr_Fetch(&type_, &value_, &tb_); }
  ~ErrorState() {
    PyErr_Clear();
    PyErr_Restore(type_, value_, tb_);
  }
  ErrorState(const ErrorState&) = delete;
  ErrorState& operator=(const ErrorState&) = delete;

 private:
  PyObject* type_ = nullptr;  // Owned (handed back by PyErr_Restore).
  PyObject* value_ = nullptr;
  PyObject* tb_ = nullptr;
};

// Per code object, computed once.
struct CodeInfo {
  bool is_user = false;
  bool is_generator = false;
  bool is_namespace = false;  // module or class body: locals are a namespace dict
  uint32_t index = 0;         // into Trace.code (user code only)
  bool spans_ready = false;
  int32_t span_base = 0;            // line of spans[0]
  std::vector<proto::Span> spans;   // statement span per line, from span_base
};

// The hot path records events as flat records; the proto::Trace is built once, when the
// trace is taken (Materialize). Texts of encoded values live in one string pool.
struct ValueRec {
  uint32_t text_begin = 0;  // into Recorder::text_pool_
  uint32_t text_len = 0;
  uint64_t hash = 0;
  bool partial = false;
};

struct VarRec {
  uint32_t name = 0;  // into Recorder::names_
  ValueRec value;
};

struct EventRec {
  proto::EventKind kind = proto::LINE;
  uint32_t code = 0, line = 0, depth = 0, frame = 0, prev_line = 0;
  const proto::Span* span = nullptr;  // Borrowed from CodeInfo::spans (never resized)
  uint32_t vars_begin = 0, vars_end = 0;  // into Recorder::vars_
  uint32_t dels_begin = 0, dels_end = 0;  // into Recorder::dels_
  uint32_t text_mark = 0;                 // text_pool_ size before this event
  bool is_yield = false, is_resume = false, unwinding = false, has_return = false;
  ValueRec return_value;
  int32_t exception = -1;  // into Recorder::exceptions_
  uint32_t output_begin = 0, output_len = 0;  // into Recorder::output_pool_
};

struct VarState {
  PyObject* name = nullptr;  // Owned.
  uint32_t name_id = 0;
  uint64_t hash = 0;
  uint64_t seen = 0;         // snapshot number of the frame when last bound
  // Shape of the value at the previous snapshot (see ShadowBuilder): equal shapes mean an
  // equal structural hash, so the O(size) hash is skipped. Empty when the value has parts
  // the shape cannot vouch for (then the value is hashed at every snapshot).
  std::vector<uintptr_t> shape;
  std::vector<PyObject*> shape_refs;  // Owned: the leaf objects named in `shape`
  // The value bound at the previous snapshot if it had no shape, else null. Compared by
  // address only, never dereferenced (it may have died since).
  PyObject* no_shape = nullptr;
};

// The shape of a value: everything its structural hash (value_encoder.h) reads, as a flat
// word sequence that is O(1) per element to build and compare (no hashing, no encoding).
// Containers (exact list, tuple, dict, set, frozenset; dict subclasses written in C such
// as defaultdict) contribute their type and length
// and then their elements in the order the hash walks them (dicts: insertion order, key
// then value; sets: table order); immutable leaves (exact int, float, str, bytes; None,
// True, False) contribute their address; functions their type and the address of their
// qualname. Two equal shapes therefore describe equal values, provided the leaves named in
// the older shape are still the same objects: the recorder keeps a reference to each of
// them, so their addresses cannot be reused. Containers are deliberately not referenced
// (their identity is not part of the shape): releasing a leaf (an int, a str) never runs
// Python code, releasing a container could run a user __del__ inside the trace function.
// A new container at a dead one's address with the same contents has the same hash anyway.
//
// Lengths and qualnames are stored as odd words (`x << 1 | 1`, `address | 1`), which no
// object address is: that lets Matches() compare a run of list/tuple items with one
// memcmp against the stored words, since an item can only equal a stored word that is a
// leaf it is (or a type object, whose odd companion word then fails the match).
//
// The walk spends the hash's element budget (TraceOptions::hash_budget) exactly as the
// encoder does, one unit per list/tuple item, dict entry and set entry, and stops where
// the hash stops: the shape never costs more than the hash it replaces, and still covers
// everything the hash reads.
//
// No shape for anything else: instances of Python classes, deques, bytearrays, other
// subclasses of builtin containers, containers nested max_hash_depth deep. A different
// shape does not mean a changed value (a set rehashed into a new order, a list replaced
// by an equal copy): the caller then compares hashes as before.
class ShadowBuilder {
 public:
  // `visited` is scratch for instance back-references; `encoder` pins the types of
  // instances named in a shape (a type word must keep naming the same type).
  ShadowBuilder(uint32_t max_depth, int64_t budget,
                std::unordered_map<PyObject*, uint32_t>* visited, ValueEncoder* encoder)
      : max_depth_(max_depth), budget_(budget), visited_(visited), encoder_(encoder) {
    visited_->clear();
  }

  // Appends the shape of `value` to *words and its leaves (borrowed) to *leaves. False if
  // the value has no shape (then the vectors hold a partial result).
  bool Build(PyObject* value, std::vector<uintptr_t>* words, std::vector<PyObject*>* leaves) {
    words_ = words;
    leaves_ = leaves;
    expect_ = nullptr;
    return Element(value, 0);
  }

  // True if `value` has exactly the shape `expect` (built by Build, its leaves still
  // referenced). Stops at the first difference.
  bool Matches(PyObject* value, const std::vector<uintptr_t>& expect) {
    expect_ = &expect;
    pos_ = 0;
    return Element(value, 0) && pos_ == expect.size();
  }

 private:
  static uintptr_t Odd(uintptr_t x) { return (x << 1) | 1; }

  bool Emit(uintptr_t word) {
    if (expect_ == nullptr) {
      words_->push_back(word);
      return true;
    }
    return pos_ < expect_->size() && (*expect_)[pos_++] == word;
  }

  bool Element(PyObject* v, uint32_t depth) {
    PyTypeObject* type = Py_TYPE(v);
    if (v == Py_None || type == &PyBool_Type) {  // static objects: never freed
      return Emit(reinterpret_cast<uintptr_t>(v));
    }
    if (type == &PyLong_Type || type == &PyUnicode_Type || type == &PyFloat_Type ||
        type == &PyBytes_Type) {
      if (!Emit(reinterpret_cast<uintptr_t>(v))) return false;
      if (expect_ == nullptr) leaves_->push_back(v);
      return true;
    }
    return Composite(v, type, depth);
  }

  bool Head(PyTypeObject* type, Py_ssize_t n) {
    return Emit(reinterpret_cast<uintptr_t>(type)) && Emit(Odd(static_cast<uintptr_t>(n)));
  }

  bool Items(PyObject* const* items, Py_ssize_t n, uint32_t depth) {
    if (expect_ != nullptr && budget_ > 0 && n > 0) {
      // Unchanged runs of leaves: one memcmp (see the class comment for why it is exact).
      size_t m = static_cast<size_t>(std::min<int64_t>(n, budget_));
      if (pos_ + m <= expect_->size() &&
          std::memcmp(expect_->data() + pos_, items, m * sizeof(PyObject*)) == 0) {
        pos_ += m;
        budget_ -= static_cast<int64_t>(m);
        return true;
      }
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (budget_ <= 0) return true;  // the hash stops here too
      --budget_;
      if (!Element(items[i], depth + 1)) return false;
    }
    return true;
  }

  bool Composite(PyObject* v, PyTypeObject* type, uint32_t depth) {
    if (depth >= max_depth_) return false;
    if (type == &PyList_Type) {
      Py_ssize_t n = PyList_GET_SIZE(v);
      return Head(type, n) && Items(reinterpret_cast<PyListObject*>(v)->ob_item, n, depth);
    }
    if (type == &PyTuple_Type) {
      Py_ssize_t n = PyTuple_GET_SIZE(v);
      return Head(type, n) && Items(reinterpret_cast<PyTupleObject*>(v)->ob_item, n, depth);
    }
    // Dict subclasses written in C (defaultdict, OrderedDict) hash as their type's name
    // plus the entries; a static type never dies, so its address names it for good.
    if (type == &PyDict_Type || (PyDict_Check(v) && !(type->tp_flags & Py_TPFLAGS_HEAPTYPE))) {
      if (!Head(type, PyDict_GET_SIZE(v))) return false;
      Py_ssize_t pos = 0;
      PyObject *key, *value;
      while (PyDict_Next(v, &pos, &key, &value)) {
        if (budget_ <= 0) return true;
        --budget_;
        if (!Element(key, depth + 1) || !Element(value, depth + 1)) return false;
      }
      return true;
    }
    if (type == &PySet_Type || type == &PyFrozenSet_Type) {
      if (!Head(type, PySet_GET_SIZE(v))) return false;
      Py_ssize_t pos = 0;
      PyObject* key;
      Py_hash_t ignored;
      while (_PySet_NextEntry(v, &pos, &key, &ignored)) {
        if (budget_ <= 0) return true;
        --budget_;
        if (!Element(key, depth + 1)) return false;
      }
      return true;
    }
    if (type->tp_flags & Py_TPFLAGS_HEAPTYPE) return Instance(v, type, depth);
    if (type == &PyFunction_Type) {
      // The hash is the qualname's text; `f.__qualname__ = ...` replaces the object.
      PyObject* qualname = reinterpret_cast<PyFunctionObject*>(v)->func_qualname;
      if (qualname == nullptr || !PyUnicode_CheckExact(qualname)) return false;
      if (!Emit(reinterpret_cast<uintptr_t>(type)) ||
          !Emit(reinterpret_cast<uintptr_t>(qualname) | 1)) {
        return false;
      }
      if (expect_ == nullptr) leaves_->push_back(qualname);
      return true;
    }
    return false;
  }

  // Instances of plain Python classes (ValueEncoder::VisitInstance): the type, then the
  // instance dict's entries (key, value) in order. Only classes whose MRO is heap types
  // without __slots__ members down to `object`, with the default metaclass (so no enums,
  // exceptions, builtin-container subclasses): their hash reads exactly the type name and
  // the dict. An instance met again in the same walk (shared node, or a cycle back to an
  // ancestor) is written as a back-reference to its first visit, an odd word where an
  // element's first word (an address) is always even: equal shapes then mean the same
  // rooted graph of the same leaves, hence the same hash, cycles included. The walk spends
  // one budget unit per field, as the hash does, but visits a shared instance once, so it
  // stops no earlier than the hash and still covers everything the hash reads.
  bool Instance(PyObject* v, PyTypeObject* type, uint32_t depth) {
    auto [it, fresh] = visited_->emplace(v, static_cast<uint32_t>(visited_->size()));
    if (!fresh) return Emit(Odd(it->second));
    if (!PlainClass(type)) return false;
    PyObject** dict_ptr = _PyObject_GetDictPtr(v);
    PyObject* dict = dict_ptr != nullptr ? *dict_ptr : nullptr;
    if (dict != nullptr && !PyDict_CheckExact(dict)) return false;
    Py_ssize_t n = dict != nullptr ? PyDict_GET_SIZE(dict) : 0;
    if (!Emit(reinterpret_cast<uintptr_t>(type)) || !Emit(Odd(static_cast<uintptr_t>(n)))) {
      return false;
    }
    if (expect_ == nullptr) encoder_->PinType(type);
    if (dict == nullptr) return true;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
      if (budget_ <= 0) return true;  // the hash stops here too
      --budget_;
      if (!Element(key, depth + 1) || !Element(value, depth + 1)) return false;
    }
    return true;
  }

  static bool PlainClass(PyTypeObject* type) {
    if (Py_TYPE(type) != &PyType_Type) return false;  // metaclasses: enums, ABCs, ...
    PyObject* mro = type->tp_mro;
    if (mro == nullptr || !PyTuple_Check(mro) || PyTuple_GET_SIZE(mro) < 2) return false;
    Py_ssize_t n = PyTuple_GET_SIZE(mro);
    if (PyTuple_GET_ITEM(mro, n - 1) != reinterpret_cast<PyObject*>(&PyBaseObject_Type)) {
      return false;
    }
    for (Py_ssize_t k = 0; k + 1 < n; ++k) {
      auto* t = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, k));
      if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE)) return false;
      if (t->tp_members == nullptr) continue;
      for (PyMemberDef* m = t->tp_members; m->name != nullptr; ++m) {
        if (m->type != T_OBJECT_EX || (m->flags & READONLY)) continue;
        if (std::strcmp(m->name, "__weakref__") == 0 || std::strcmp(m->name, "__dict__") == 0) {
          continue;
        }
        return false;  // a __slots__ member: hashed too, not in the shape
      }
    }
    return true;
  }

  uint32_t max_depth_;
  int64_t budget_;
  std::unordered_map<PyObject*, uint32_t>* visited_;  // instance -> first-visit number
  ValueEncoder* encoder_;
  std::vector<uintptr_t>* words_ = nullptr;     // Build: output
  std::vector<PyObject*>* leaves_ = nullptr;    // Build: output
  const std::vector<uintptr_t>* expect_ = nullptr;  // Matches: the stored shape
  size_t pos_ = 0;                                  // Matches: next word of *expect_
};

struct FrameState {
  PyFrameObject* frame = nullptr;  // Borrowed; the frame is alive while it is on the stack
  uint32_t id = 0;
  uint32_t last_line = 0;
  uint64_t snapshot = 0;
  std::vector<VarState> vars;
  std::string pending_output;  // written to sys.stdout since the frame's previous event
};

// Output recorded per trace (Event.output); past it Trace.output_truncated is set.
constexpr size_t kMaxRecordedOutput = 64 << 10;

class Recorder;
Recorder& TheRecorder();
// A new OutputTee over `stream` (below), or null with a Python error set.
PyObject* NewOutputTee(PyObject* stream);

class Recorder {
 public:
  Recorder() { ClearRun(); }
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  void Configure(const TraceOptions& options, std::string_view source) {
    Reset();
    options_ = options;
    source_.assign(source);
    line_index_ = std::make_unique<LineIndex>(source_);
    configured_ = true;
  }

  // Installs the trace function. Errors are Python exceptions (returns false).
  bool Start(PyObject* filename) {
    if (active_) {
      PyErr_SetString(PyExc_RuntimeError, "_egca_trace: already started");
      return false;
    }
    if (!configured_) {
      TraceOptions defaults;
      defaults.enabled = true;
      Configure(defaults, {});
    }
    if (!run_clear_) ClearRun();  // Configure() just cleared it
    run_clear_ = false;
    Py_INCREF(filename);
    filename_ = filename;
    marker_ = PyCapsule_New(this, "egca.trace", nullptr);
    if (marker_ == nullptr) return false;
    encoder_ = std::make_unique<ValueEncoder>(options_);
    InitTraceHeader();
    if (options_.record_variables) InstallOutputTee();
    start_time_ = std::chrono::steady_clock::now();
    active_ = true;
    installed_ = true;
    PyEval_SetTrace(&Recorder::TraceFunction, marker_);
    if (options_.frame_filter) {
      InstallFrameFilter(&Recorder::IsUserCode, this, &Recorder::TraceFunction, marker_);
    }
    return true;
  }

  // stop() as called through the module. The harness calls it after the user's code has
  // returned; a call while user frames are still running comes from the program itself
  // (`import _egca_trace`): it is refused and the trace marked as tampered with.
  void StopFromPython() {
    if (active_ && installed_ && !stack_.empty()) {
      trace_->set_tracer_displaced(true);
      return;
    }
    Stop();
  }

  void Stop() {
    if (!active_) return;
    if (installed_ && CurrentTraceObject() != marker_) trace_->set_tracer_displaced(true);
    RemoveFrameFilter();
    PyEval_SetTrace(nullptr, nullptr);
    RemoveOutputTee();
    installed_ = false;
    active_ = false;
    trace_->set_traced_seconds(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time_).count());
  }

  void Take(proto::Trace* out) {
    Stop();
    out->CopyFrom(*trace_);  // header and code table only: events are built next
    Materialize(out);
    Reset();
  }

  bool TakeSerialized(std::string* out) {
    Stop();
    bool ok = SerializeDirect(out);
    Reset();
    return ok;
  }

  bool active() const { return active_; }

  // sys.stdout's write() through the tee: `text` (a str) is what the program wrote. Held
  // by the innermost user frame until its next event (Record). Never raises.
  void NoteOutput(PyObject* text) {
    if (!active_ || !recording_ || stack_.empty()) return;
    Py_ssize_t n = 0;
    const char* data = PyUnicode_AsUTF8AndSize(text, &n);
    if (data == nullptr) {  // lone surrogates: no UTF-8 form; such output is not recorded
      PyErr_Clear();
      return;
    }
    size_t room = kMaxRecordedOutput - std::min(kMaxRecordedOutput, output_recorded_);
    size_t take = std::min(room, static_cast<size_t>(n));
    if (take < static_cast<size_t>(n)) trace_->set_output_truncated(true);
    stack_.back()->pending_output.append(data, take);
    output_recorded_ += take;
  }

  // stop_run() as called through the module (the harness's time budget): nothing more is
  // recorded and the program is stopped at its next user line (see StopEvent).
  void StopRun() {
    if (!active_) return;
    StopRecording(proto::TIME_BUDGET);
    stopping_ = installed_;
  }

 private:
  // Replaces sys.stdout (and sys.__stdout__ when it is the same stream, as the harness sets
  // them) with an OutputTee for the run; Stop() puts the stream back if the program did not
  // replace it itself. The tee forwards every write, so what the program prints is unchanged.
  void InstallOutputTee() {
    PyObject* out = PySys_GetObject("stdout");  // Borrowed.
    if (out == nullptr || out == Py_None) return;
    PyObject* tee = NewOutputTee(out);
    if (tee == nullptr) {
      PyErr_Clear();
      return;
    }
    tee_dunder_ = PySys_GetObject("__stdout__") == out;
    if (PySys_SetObject("stdout", tee) < 0 ||
        (tee_dunder_ && PySys_SetObject("__stdout__", tee) < 0)) {
      PyErr_Clear();
      PySys_SetObject("stdout", out);
      Py_DECREF(tee);
      return;
    }
    Py_INCREF(out);
    saved_stdout_ = out;
    tee_ = tee;
  }

  void RemoveOutputTee() {
    if (tee_ == nullptr) return;
    ErrorState saved;
    if (PySys_GetObject("stdout") == tee_) PySys_SetObject("stdout", saved_stdout_);
    if (tee_dunder_ && PySys_GetObject("__stdout__") == tee_) {
      PySys_SetObject("__stdout__", saved_stdout_);
    }
    Py_CLEAR(tee_);
    Py_CLEAR(saved_stdout_);
  }

  static int TraceFunction(PyObject* obj, PyFrameObject* frame, int what, PyObject* arg) {
    auto* self = static_cast<Recorder*>(PyCapsule_GetPointer(obj, "egca.trace"));
    if (self == nullptr) {
      PyErr_Clear();
      return 0;
    }
    if (self->stopping_) return self->StopEvent(frame, what);
    try {
      self->OnEvent(frame, what, arg);
    } catch (const std::exception&) {
      // Out of memory while recording: stop tracing, keep what we have.
      self->Truncate(proto::MAX_BYTES);
    }
    return 0;  // never raise into the user's program
  }

  // After a cap with stop_at_limit (or stop_run()): a user frame's CALL/LINE raises
  // TraceStopped, again at every later user line, so a program that catches it is stopped
  // at its next line all the same. Other frames run on untraced.
  int StopEvent(PyFrameObject* frame, int what) {
    if (what != PyTrace_CALL && what != PyTrace_LINE) return 0;
    if (!Lookup(BorrowedCode(frame))->is_user) {
      DisableLineEvents(frame);
      return 0;
    }
    PyErr_SetString(TraceStoppedType(),
                    "egca: tracing stopped (trace cap or time budget), the run is cut short");
    return -1;
  }

  // The frame filter's predicate (python_compat.h): frames of user code run in tracing
  // mode, all others untraced.
  static bool IsUserCode(PyCodeObject* code, void* self) {
    return static_cast<Recorder*>(self)->Lookup(code)->is_user;
  }

  CodeInfo* Lookup(PyCodeObject* code) {
    if (code == last_code_) return last_info_;
    auto it = codes_.find(code);
    if (it == codes_.end()) {
      CodeInfo info;
      info.is_user = code->co_filename == filename_ ||
                     PyUnicode_Compare(code->co_filename, filename_) == 0;
      if (PyErr_Occurred()) PyErr_Clear();
      if (info.is_user) {
        info.is_generator = IsGeneratorCode(code);
        info.is_namespace = !(code->co_flags & CO_OPTIMIZED);
        info.index = static_cast<uint32_t>(trace_->code_size());
        proto::CodeObject* co = trace_->add_code();
        co->set_qualname(Utf8(code->co_qualname));
        co->set_name(Utf8(code->co_name));
        co->set_first_line(static_cast<uint32_t>(code->co_firstlineno));
      }
      // Holding the code object keeps its address from being reused by another code
      // object while the cache entry lives.
      Py_INCREF(code);
      it = codes_.emplace(code, std::move(info)).first;
    }
    last_code_ = code;
    last_info_ = &it->second;
    return last_info_;
  }

  void OnEvent(PyFrameObject* frame, int what, PyObject* arg) {
    PyCodeObject* code = BorrowedCode(frame);
    CodeInfo* info = Lookup(code);
    if (!info->is_user) {
      if (what == PyTrace_CALL || what == PyTrace_LINE) DisableLineEvents(frame);
      return;
    }
    ErrorState saved;
    switch (what) {
      case PyTrace_CALL: {
        FrameState* state = nullptr;
        bool resume = false;
        if (info->is_generator) {
          auto it = suspended_.find(frame);
          if (it != suspended_.end()) {
            state = it->second;
            suspended_.erase(it);
            resume = true;
          }
        }
        if (state == nullptr) {
          state = NewFrameState();
          state->id = next_frame_id_++;
        }
        state->frame = frame;
        stack_.push_back(state);
        if (options_.record_calls) Record(proto::CALL, frame, info, state, resume);
        return;
      }
      case PyTrace_LINE: {
        if (!options_.record_lines) return;
        FrameState* state = FindFrame(frame);
        if (state != nullptr) Record(proto::LINE, frame, info, state, false);
        return;
      }
      case PyTrace_RETURN: {
        FrameState* state = FindFrame(frame);
        if (state == nullptr) return;
        bool yielded = arg != nullptr && info->is_generator && IsSuspendedGenerator(frame);
        if (options_.record_returns && recording_) {
          EventRec* event = Record(proto::RETURN, frame, info, state, false);
          if (event != nullptr) {
            event->is_yield = yielded;
            if (arg == nullptr) {
              event->unwinding = true;
            } else {
              encoder_->BeginSnapshot();
              event->has_return = true;
              event->return_value = EncodeToPool(arg);
              encoder_->EndSnapshot();
            }
            Commit();
          }
        }
        PopFrame(state);
        if (yielded) {
          suspended_[frame] = state;
        } else {
          ReleaseFrameState(state);
        }
        return;
      }
      case PyTrace_EXCEPTION: {
        if (!options_.record_exceptions) return;
        FrameState* state = FindFrame(frame);
        if (state == nullptr) return;
        EventRec* event = Record(proto::EXCEPTION, frame, info, state, false);
        if (event == nullptr) return;
        if (arg != nullptr && PyTuple_Check(arg) && PyTuple_GET_SIZE(arg) >= 2) {
          PyObject* type = PyTuple_GET_ITEM(arg, 0);
          PyObject* value = PyTuple_GET_ITEM(arg, 1);
          std::pair<std::string, std::string> ex;
          if (PyType_Check(type)) ex.first = TypeName(reinterpret_cast<PyTypeObject*>(type));
          if (PyExceptionInstance_Check(value)) ex.second = ExceptionMessage(value);
          event = &events_.back();  // ExceptionMessage() does not record, but stay safe
          event->exception = static_cast<int32_t>(exceptions_.size());
          exceptions_.push_back(std::move(ex));
        }
        Commit();
        return;
      }
      default:
        return;
    }
  }

  // User frames run in stack order (a generator leaves the stack at each yield), so the
  // current frame is almost always the top.
  FrameState* FindFrame(PyFrameObject* frame) {
    for (size_t i = stack_.size(); i > 0; --i) {
      if (stack_[i - 1]->frame == frame) return stack_[i - 1];
    }
    return nullptr;
  }

  void PopFrame(FrameState* state) {
    if (!stack_.empty() && stack_.back() == state) {
      stack_.pop_back();
      return;
    }
    auto it = std::find(stack_.begin(), stack_.end(), state);
    if (it != stack_.end()) stack_.erase(it);
  }

  // Frame states are pooled: a call costs no allocation once the pool is warm.
  FrameState* NewFrameState() {
    if (pool_.empty()) {
      owned_states_.push_back(std::make_unique<FrameState>());
      return owned_states_.back().get();
    }
    FrameState* state = pool_.back();
    pool_.pop_back();
    return state;
  }

  void ReleaseFrameState(FrameState* state) {
    ReleaseVars(state);
    state->frame = nullptr;
    state->last_line = 0;
    state->snapshot = 0;
    state->pending_output.clear();
    pool_.push_back(state);
  }

  // Records the event (where, kind, depth, changed locals). CALL/LINE events are
  // committed here; RETURN/EXCEPTION events are returned uncommitted (the last record)
  // for the caller to complete and Commit(). Returns null once recording has stopped.
  EventRec* Record(proto::EventKind kind, PyFrameObject* frame, CodeInfo* info,
                   FrameState* state, bool resume) {
    if (!recording_) return nullptr;
    if (events_.size() >= options_.max_events) {
      Truncate(proto::MAX_EVENTS);
      return nullptr;
    }
    int raw_line = PyFrame_GetLineNumber(frame);
    // A module body's RESUME sits on artificial line 0; report its first line instead.
    if (raw_line <= 0) raw_line = BorrowedCode(frame)->co_firstlineno;
    uint32_t line = static_cast<uint32_t>(std::max(0, raw_line));
    EventRec& event = events_.emplace_back();
    event.kind = kind;
    event.code = info->index;
    event.line = line;
    event.span = SpanFor(BorrowedCode(frame), info, line);
    event.depth = static_cast<uint32_t>(stack_.size());
    event.frame = state->id;
    event.prev_line = state->last_line;
    event.is_resume = resume;
    event.text_mark = static_cast<uint32_t>(text_pool_.size());
    event.vars_begin = event.vars_end = static_cast<uint32_t>(vars_.size());
    event.dels_begin = event.dels_end = static_cast<uint32_t>(dels_.size());
    state->last_line = line;
    if (options_.record_variables) Snapshot(frame, state);
    // A new frame: what its caller wrote earlier in the calling statement goes first.
    FrameState* writer = state;
    if (kind == proto::CALL && stack_.size() >= 2) writer = stack_[stack_.size() - 2];
    if (!writer->pending_output.empty()) {
      EventRec& e = events_.back();
      e.output_begin = static_cast<uint32_t>(output_pool_.size());
      e.output_len = static_cast<uint32_t>(writer->pending_output.size());
      output_pool_.append(writer->pending_output);
      writer->pending_output.clear();
    }
    if (kind == proto::CALL || kind == proto::LINE) {
      Commit();
      return nullptr;
    }
    return &events_.back();
  }

  // Upper bound of the serialized size of the last event (so max_bytes is never exceeded);
  // drops it and truncates the trace if it does not fit.
  void Commit() {
    if (!recording_ || events_.empty()) return;
    EventRec& e = events_.back();
    // Scalars and span: at most 82 bytes; each variable 35 + name + text; a return value
    // 26 + text; an exception 18 + type + message.
    uint64_t size = 82;
    for (uint32_t i = e.vars_begin; i < e.vars_end; ++i) {
      size += 35 + names_[vars_[i].name].size() + vars_[i].value.text_len;
    }
    for (uint32_t i = e.dels_begin; i < e.dels_end; ++i) size += 6 + names_[dels_[i]].size();
    if (e.has_return) size += 26 + e.return_value.text_len;
    size += e.output_len == 0 ? 0 : 6 + e.output_len;
    if (e.exception >= 0) {
      const auto& ex = exceptions_[static_cast<size_t>(e.exception)];
      size += 18 + ex.first.size() + ex.second.size();
    }
    if (event_bytes_ + size > options_.max_bytes) {
      vars_.resize(e.vars_begin);
      dels_.resize(e.dels_begin);
      text_pool_.resize(e.text_mark);
      if (e.output_len > 0) output_pool_.resize(e.output_begin);
      if (e.exception >= 0) exceptions_.pop_back();
      events_.pop_back();
      Truncate(proto::MAX_BYTES);
      return;
    }
    event_bytes_ += size;
  }

  ValueRec EncodeToPool(PyObject* value) {
    ValueRec rec;
    rec.text_begin = static_cast<uint32_t>(text_pool_.size());
    ValueDigest digest = encoder_->EncodeText(value, &text_pool_);
    rec.text_len = static_cast<uint32_t>(text_pool_.size()) - rec.text_begin;
    rec.hash = digest.hash;
    rec.partial = digest.partial;
    return rec;
  }

  uint32_t NameId(PyObject* name) {
    auto it = name_ids_.find(name);
    if (it != name_ids_.end()) return it->second;
    Py_INCREF(name);
    uint32_t id = static_cast<uint32_t>(names_.size());
    names_.push_back(Utf8(name));
    name_ids_.emplace(name, id);
    return id;
  }

  // --- Wire format written straight from the event records (TakeSerialized): the bytes
  // SerializeToString() gives for the Trace that Materialize() builds (fields in number
  // order, proto3 defaults omitted), without building a message per event and value.
  using Out = google::protobuf::io::CodedOutputStream;
  static constexpr uint32_t kVarint = 0, kFixed64 = 1, kDelimited = 2;
  static constexpr uint32_t Tag(uint32_t field, uint32_t wire) { return field << 3 | wire; }

  static size_t ScalarSize(uint64_t v) { return v == 0 ? 0 : 1 + Out::VarintSize64(v); }
  static size_t DelimitedSize(size_t n) { return 1 + Out::VarintSize64(n) + n; }
  static size_t StringSize(size_t n) { return n == 0 ? 0 : DelimitedSize(n); }

  static uint8_t* PutScalar(uint32_t field, uint64_t v, uint8_t* p) {
    if (v == 0) return p;
    p = Out::WriteTagToArray(Tag(field, kVarint), p);
    return Out::WriteVarint64ToArray(v, p);
  }
  static uint8_t* PutHeader(uint32_t field, size_t n, uint8_t* p) {
    p = Out::WriteTagToArray(Tag(field, kDelimited), p);
    return Out::WriteVarint64ToArray(n, p);
  }
  static uint8_t* PutBytes(uint32_t field, const char* data, size_t n, bool always, uint8_t* p) {
    if (n == 0 && !always) return p;
    p = PutHeader(field, n, p);
    std::memcpy(p, data, n);
    return p + n;
  }

  size_t ValueSize(const ValueRec& v) const {
    return StringSize(v.text_len) + (v.hash != 0 ? 9 : 0) + (v.partial ? 2 : 0);
  }
  uint8_t* PutValue(uint32_t field, const ValueRec& v, uint8_t* p) const {
    p = PutHeader(field, ValueSize(v), p);
    p = PutBytes(1, text_pool_.data() + v.text_begin, v.text_len, false, p);
    if (v.hash != 0) {
      p = Out::WriteTagToArray(Tag(2, kFixed64), p);
      p = Out::WriteLittleEndian64ToArray(v.hash, p);
    }
    return PutScalar(3, v.partial ? 1 : 0, p);
  }
  size_t VarSize(const VarRec& v) const {
    return StringSize(names_[v.name].size()) + DelimitedSize(ValueSize(v.value));
  }
  static size_t SpanSize(const proto::Span& s) {
    return ScalarSize(s.start_line()) + ScalarSize(s.start_col()) + ScalarSize(s.end_line()) +
           ScalarSize(s.end_col()) + ScalarSize(s.begin_byte()) + ScalarSize(s.end_byte());
  }
  size_t ExceptionSize(const std::pair<std::string, std::string>& ex) const {
    return StringSize(ex.first.size()) + StringSize(ex.second.size());
  }
  size_t EventSize(const EventRec& e) const {
    size_t n = ScalarSize(e.kind) + ScalarSize(e.code) + ScalarSize(e.line) +
               ScalarSize(e.depth) + ScalarSize(e.frame) + ScalarSize(e.prev_line);
    if (e.span != nullptr) n += DelimitedSize(SpanSize(*e.span));
    for (uint32_t i = e.vars_begin; i < e.vars_end; ++i) n += DelimitedSize(VarSize(vars_[i]));
    for (uint32_t i = e.dels_begin; i < e.dels_end; ++i) {
      n += DelimitedSize(names_[dels_[i]].size());
    }
    if (e.has_return) n += DelimitedSize(ValueSize(e.return_value));
    n += (e.is_yield ? 2 : 0) + (e.is_resume ? 2 : 0) + (e.unwinding ? 2 : 0);
    if (e.exception >= 0) {
      n += DelimitedSize(ExceptionSize(exceptions_[static_cast<size_t>(e.exception)]));
    }
    n += StringSize(e.output_len);
    return n;
  }
  uint8_t* PutEvent(const EventRec& e, uint8_t* p) const {
    p = PutScalar(1, static_cast<uint64_t>(e.kind), p);
    p = PutScalar(2, e.code, p);
    p = PutScalar(3, e.line, p);
    if (e.span != nullptr) {
      const proto::Span& s = *e.span;
      p = PutHeader(4, SpanSize(s), p);
      p = PutScalar(1, s.start_line(), p);
      p = PutScalar(2, s.start_col(), p);
      p = PutScalar(3, s.end_line(), p);
      p = PutScalar(4, s.end_col(), p);
      p = PutScalar(5, s.begin_byte(), p);
      p = PutScalar(6, s.end_byte(), p);
    }
    p = PutScalar(5, e.depth, p);
    p = PutScalar(6, e.frame, p);
    p = PutScalar(7, e.prev_line, p);
    for (uint32_t i = e.vars_begin; i < e.vars_end; ++i) {
      const VarRec& v = vars_[i];
      const std::string& name = names_[v.name];
      p = PutHeader(8, VarSize(v), p);
      p = PutBytes(1, name.data(), name.size(), false, p);
      p = PutValue(2, v.value, p);
    }
    for (uint32_t i = e.dels_begin; i < e.dels_end; ++i) {
      const std::string& name = names_[dels_[i]];
      p = PutBytes(9, name.data(), name.size(), true, p);
    }
    if (e.has_return) p = PutValue(10, e.return_value, p);
    p = PutScalar(11, e.is_yield ? 1 : 0, p);
    p = PutScalar(12, e.is_resume ? 1 : 0, p);
    p = PutScalar(13, e.unwinding ? 1 : 0, p);
    if (e.exception >= 0) {
      const auto& ex = exceptions_[static_cast<size_t>(e.exception)];
      p = PutHeader(14, ExceptionSize(ex), p);
      p = PutBytes(1, ex.first.data(), ex.first.size(), false, p);
      p = PutBytes(2, ex.second.data(), ex.second.size(), false, p);
    }
    p = PutBytes(15, output_pool_.data() + e.output_begin, e.output_len, false, p);
    return p;
  }

  // The whole Trace: header fields 1-3 from trace_, the events (4), then fields 5-10.
  bool SerializeDirect(std::string* out) {
    event_sizes_.resize(events_.size());
    uint64_t event_bytes = 0;
    for (size_t i = 0; i < events_.size(); ++i) {
      event_sizes_[i] = EventSize(events_[i]);
      event_bytes += DelimitedSize(event_sizes_[i]);
    }
    trace_->set_event_bytes(event_bytes);
    // Fields 1-3 and 5-10 are small: serialize them through the message, split in two.
    proto::Trace head;
    head.set_source_sha256(trace_->source_sha256());
    head.set_filename(trace_->filename());
    *head.mutable_code() = trace_->code();
    proto::Trace tail(*trace_);
    tail.clear_source_sha256();
    tail.clear_filename();
    tail.clear_code();
    size_t head_size = head.ByteSizeLong(), tail_size = tail.ByteSizeLong();
    size_t total = head_size + event_bytes + tail_size;
    if (total > static_cast<size_t>(std::numeric_limits<int>::max())) return false;
    out->resize(total);
    auto* p = reinterpret_cast<uint8_t*>(out->data());
    p = head.SerializeWithCachedSizesToArray(p);
    for (size_t i = 0; i < events_.size(); ++i) {
      p = PutHeader(4, event_sizes_[i], p);
      p = PutEvent(events_[i], p);
    }
    p = tail.SerializeWithCachedSizesToArray(p);
    return p == reinterpret_cast<uint8_t*>(out->data()) + total;
  }

  // Builds the events into `out` (on out's arena, if any).
  void Materialize(proto::Trace* out) {
    auto fill = [&](const ValueRec& v, proto::Value* pv) {
      pv->set_text(text_pool_.data() + v.text_begin, v.text_len);
      pv->set_hash(v.hash);
      if (v.partial) pv->set_partial(true);
    };
    out->mutable_events()->Reserve(static_cast<int>(events_.size()));
    uint64_t bytes = 0;
    for (const EventRec& e : events_) {
      proto::Event* pe = out->add_events();
      pe->set_kind(e.kind);
      pe->set_code(e.code);
      pe->set_line(e.line);
      if (e.span != nullptr) *pe->mutable_span() = *e.span;
      pe->set_depth(e.depth);
      pe->set_frame(e.frame);
      pe->set_prev_line(e.prev_line);
      for (uint32_t i = e.vars_begin; i < e.vars_end; ++i) {
        proto::Variable* pv = pe->add_changed();
        pv->set_name(names_[vars_[i].name]);
        fill(vars_[i].value, pv->mutable_value());
      }
      for (uint32_t i = e.dels_begin; i < e.dels_end; ++i) pe->add_deleted(names_[dels_[i]]);
      if (e.has_return) fill(e.return_value, pe->mutable_return_value());
      if (e.is_yield) pe->set_is_yield(true);
      if (e.is_resume) pe->set_is_resume(true);
      if (e.unwinding) pe->set_unwinding(true);
      if (e.exception >= 0) {
        const auto& ex = exceptions_[static_cast<size_t>(e.exception)];
        pe->mutable_exception()->set_type(ex.first);
        pe->mutable_exception()->set_message(ex.second);
      }
      if (e.output_len > 0) pe->set_output(output_pool_.data() + e.output_begin, e.output_len);
      size_t n = pe->ByteSizeLong();
      bytes += 1 + google::protobuf::io::CodedOutputStream::VarintSize64(n) + n;
    }
    out->set_event_bytes(bytes);
  }

  void Snapshot(PyFrameObject* frame, FrameState* state) {
    uint64_t snapshot = ++state->snapshot;
    encoder_->BeginSnapshot();
    locals_.clear();
    CollectLocals(frame, &locals_);
    bool is_namespace = !(BorrowedCode(frame)->co_flags & CO_OPTIMIZED);
    size_t hint = 0;
    for (const LocalBinding& local : locals_) {
      if (IsHidden(local.name, is_namespace)) continue;
      VarState* var = FindVar(state, local.name, &hint);
      PyObject* value = local.value;
      bool was_bound = var != nullptr && var->seen == snapshot - 1;
      // Same shape as at the previous snapshot: same hash, nothing to hash or encode.
      if (was_bound && !var->shape.empty() &&
          ShadowBuilder(options_.max_hash_depth, options_.hash_budget, &visited_,
                        encoder_.get())
              .Matches(value, var->shape)) {
        var->seen = snapshot;
        continue;
      }
      shape_.clear();
      shape_refs_.clear();
      // A value that had no shape at the previous snapshot and is still the same object is
      // not walked again (a graph deeper than max_hash_depth would be walked to its depth
      // limit at every event only to fail); it is hashed, as it was then.
      bool try_shape = var == nullptr || var->no_shape != value;
      bool shaped = try_shape && ShadowBuilder(options_.max_hash_depth, options_.hash_budget,
                                               &visited_, encoder_.get())
                                     .Build(value, &shape_, &shape_refs_);
      if (!shaped) {
        shape_.clear();
        shape_refs_.clear();
      }
      ValueDigest digest = encoder_->Hash(value);
      bool changed = !was_bound || var->hash != digest.hash;
      if (var == nullptr) {
        Py_INCREF(local.name);
        VarState fresh;
        fresh.name = local.name;
        fresh.name_id = NameId(local.name);
        state->vars.push_back(std::move(fresh));
        var = &state->vars.back();
        hint = state->vars.size();
      }
      KeepShape(var);
      var->no_shape = shaped ? nullptr : value;
      var->seen = snapshot;
      if (!changed) continue;
      var->hash = digest.hash;
      vars_.push_back(VarRec{var->name_id, EncodeToPool(local.value)});
    }
    events_.back().vars_end = static_cast<uint32_t>(vars_.size());
    encoder_->EndSnapshot();
    for (VarState& var : state->vars) {
      if (var.seen == snapshot - 1) {  // bound at the previous snapshot, unbound now
        dels_.push_back(var.name_id);
        var.seen = 0;
        ReleaseShape(&var);
      }
    }
    events_.back().dels_end = static_cast<uint32_t>(dels_.size());
  }

  // Makes the shape just built (shape_, shape_refs_; empty if the value has none) the
  // variable's, taking references to its leaves and dropping those of the old one. The
  // leaves are ints, floats, strs and bytes: releasing them runs no Python code.
  void KeepShape(VarState* var) {
    for (PyObject* leaf : shape_refs_) Py_INCREF(leaf);
    for (PyObject* leaf : var->shape_refs) Py_DECREF(leaf);
    var->shape.swap(shape_);
    var->shape_refs.swap(shape_refs_);
  }

  static void ReleaseShape(VarState* var) {
    for (PyObject* leaf : var->shape_refs) Py_DECREF(leaf);
    var->shape_refs.clear();
    var->shape.clear();
    var->no_shape = nullptr;
  }

  static VarState* FindVar(FrameState* state, PyObject* name, size_t* hint) {
    // Locals come in the same order at every snapshot, so the next slot usually matches.
    std::vector<VarState>& vars = state->vars;
    if (*hint < vars.size() && vars[*hint].name == name) return &vars[(*hint)++];
    for (size_t i = 0; i < vars.size(); ++i) {
      if (vars[i].name == name ||
          (PyUnicode_Check(vars[i].name) && PyUnicode_Compare(vars[i].name, name) == 0)) {
        *hint = i + 1;
        return &vars[i];
      }
    }
    if (PyErr_Occurred()) PyErr_Clear();
    return nullptr;
  }

  // Names that are not the user's state: the hidden iterator argument of comprehensions
  // (".0") and the bookkeeping entries CPython puts in module and class namespaces.
  static bool IsHidden(PyObject* name, bool is_namespace) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(name);
    if (n == 0 || PyUnicode_KIND(name) != PyUnicode_1BYTE_KIND) return false;
    const char* s = static_cast<const char*>(PyUnicode_DATA(name));
    if (s[0] == '.') return true;
    if (!is_namespace || n < 4 || s[0] != '_' || s[1] != '_') return false;
    static const char* const kBookkeeping[] = {
        "__name__", "__builtins__", "__doc__", "__loader__", "__spec__", "__package__",
        "__file__", "__cached__", "__module__", "__qualname__", "__annotations__",
        "__classcell__",
    };
    for (const char* k : kBookkeeping) {
      if (std::strcmp(s, k) == 0) return true;
    }
    return false;
  }

  const proto::Span* SpanFor(PyCodeObject* code, CodeInfo* info, uint32_t line) {
    if (!info->spans_ready) ComputeSpans(code, info);
    int32_t k = static_cast<int32_t>(line) - info->span_base;
    if (k < 0 || k >= static_cast<int32_t>(info->spans.size())) return nullptr;
    const proto::Span& span = info->spans[static_cast<size_t>(k)];
    return span.start_line() == 0 ? nullptr : &span;
  }

  // Statement span per line: union of the positions of the instructions that start on
  // the line (co_positions, PEP 657), widened to the line's first non-blank column.
  void ComputeSpans(PyCodeObject* code, CodeInfo* info) {
    info->spans_ready = true;
    struct Range {
      int sl = 0, sc = 0, el = 0, ec = 0;
      bool any = false, cols = false;
    };
    std::unordered_map<int, Range> ranges;
    int min_line = 0, max_line = 0;
    positions_.clear();
    DecodePositions(code, &positions_);
    for (const PositionRange& p : positions_) {
      int sl = p.line, el = p.end_line, sc = p.column, ec = p.end_column;
      if (sl <= 0) continue;
      Range& r = ranges[sl];
      if (!r.any) {
        r.any = true;
        r.sl = sl;
        r.el = sl;
      }
      // Zero-width positions (RESUME at a def line) carry no column information.
      if (sc >= 0 && ec >= 0 && el >= sl && !(el == sl && ec <= sc)) {
        if (!r.cols) {
          r.cols = true;
          r.sc = sc;
          r.el = el;
          r.ec = ec;
        } else {
          if (sc < r.sc) r.sc = sc;
          if (el > r.el || (el == r.el && ec > r.ec)) {
            r.el = el;
            r.ec = ec;
          }
        }
      }
      if (min_line == 0 || sl < min_line) min_line = sl;
      if (sl > max_line) max_line = sl;
    }
    if (min_line == 0) return;
    // Lambdas and comprehensions start in the middle of their enclosing statement's line:
    // on that line their span is their own instructions, not the whole line.
    bool inline_code = false;
    if (PyUnicode_Check(code->co_name) && PyUnicode_READ_CHAR(code->co_name, 0) == '<') {
      inline_code = PyUnicode_CompareWithASCIIString(code->co_name, "<module>") != 0;
    }
    info->span_base = min_line;
    info->spans.resize(static_cast<size_t>(max_line - min_line + 1));
    for (auto& [line, r] : ranges) {
      proto::Span& span = info->spans[static_cast<size_t>(line - min_line)];
      bool have_text = line_index_ && line <= line_index_->line_count();
      std::string_view text = have_text ? line_index_->LineText(line) : std::string_view();
      size_t first = text.find_first_not_of(" \t\f");
      size_t last = text.find_last_not_of(" \t\f\r");
      int sc = r.cols ? r.sc : 0;
      int el = r.cols ? r.el : line;
      int ec = r.cols ? r.ec : 0;
      bool widen = !(inline_code && line == code->co_firstlineno && r.cols);
      if (widen && have_text && first != std::string_view::npos) {
        if (!r.cols || static_cast<size_t>(sc) > first) sc = static_cast<int>(first);
        if (!r.cols) {
          el = line;
          ec = static_cast<int>(last + 1);
        }
        // A compound statement's header (`for ...:`, `if ...:`, `def ...:`) shares
        // instructions positioned over the whole statement (loop jumps, MAKE_FUNCTION);
        // its span is the header line, up to the colon.
        size_t colon = HeaderColon(text);
        if (colon != std::string_view::npos && (el > line || ec <= static_cast<int>(colon))) {
          el = line;
          ec = static_cast<int>(colon + 1);
        }
      }
      span.set_start_line(static_cast<uint32_t>(line));
      span.set_start_col(static_cast<uint32_t>(sc));
      span.set_end_line(static_cast<uint32_t>(el));
      span.set_end_col(static_cast<uint32_t>(ec));
      if (have_text) {
        span.set_begin_byte(line_index_->Offset({line, sc}));
        span.set_end_byte(line_index_->Offset({el, ec}));
      }
    }
  }

  // Column of the colon ending a compound-statement header on this line (comment and
  // string contents ignored), or npos.
  static size_t HeaderColon(std::string_view text) {
    char quote = 0;
    size_t end = text.size();
    for (size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if (quote != 0) {
        if (c == '\\') {
          ++i;
        } else if (c == quote) {
          quote = 0;
        }
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '#') {
        end = i;
        break;
      }
    }
    size_t last = text.find_last_not_of(" \t\f\r", end == 0 ? 0 : end - 1);
    if (end == 0 || last == std::string_view::npos || text[last] != ':') {
      return std::string_view::npos;
    }
    return last;
  }

  std::string ExceptionMessage(PyObject* exc) {
    // From args, never through a user-defined __str__: one str arg prints as itself.
    PyObject* args = reinterpret_cast<PyBaseExceptionObject*>(exc)->args;
    if (args == nullptr || !PyTuple_Check(args) || PyTuple_GET_SIZE(args) == 0) return {};
    if (PyTuple_GET_SIZE(args) == 1) {
      PyObject* only = PyTuple_GET_ITEM(args, 0);
      if (PyUnicode_CheckExact(only)) {
        std::string s = Utf8(only);
        if (s.size() > options_.max_repr_bytes) {
          size_t end = options_.max_repr_bytes;
          while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
          s.resize(end);
          s.append("\xE2\x80\xA6");
        }
        return s;
      }
      return encoder_->Render(only);
    }
    return encoder_->Render(args);
  }

  // Records nothing more; the trace says why (a no-op once recording has stopped).
  void StopRecording(proto::Truncation why) {
    if (!recording_) return;
    recording_ = false;
    trace_->set_truncated(true);
    trace_->set_truncation(why);
  }

  void Truncate(proto::Truncation why) {
    if (!recording_) return;
    StopRecording(why);
    if (options_.stop_at_limit && installed_) {
      stopping_ = true;  // keep the trace function: it stops the program (StopEvent)
      return;
    }
    // Nothing more will be recorded: uninstall so the rest of the run runs at full speed.
    if (installed_) {
      if (CurrentTraceObject() != marker_) trace_->set_tracer_displaced(true);
      RemoveFrameFilter();
      PyEval_SetTrace(nullptr, nullptr);
      installed_ = false;
    }
  }

  void InitTraceHeader() {
    trace_->set_source_sha256(Sha256Hex(source_));
    trace_->set_filename(Utf8(filename_));
    proto::TraceOptionsUsed* o = trace_->mutable_options();
    o->set_max_events(options_.max_events);
    o->set_max_bytes(options_.max_bytes);
    o->set_record_lines(options_.record_lines);
    o->set_record_calls(options_.record_calls);
    o->set_record_returns(options_.record_returns);
    o->set_record_exceptions(options_.record_exceptions);
    o->set_record_variables(options_.record_variables);
    o->set_container_prefix(options_.container_prefix);
    o->set_max_string_bytes(options_.max_string_bytes);
    o->set_max_repr_bytes(options_.max_repr_bytes);
    o->set_max_render_depth(options_.max_render_depth);
    o->set_max_hash_depth(options_.max_hash_depth);
    o->set_hash_budget(options_.hash_budget);
    o->set_stop_at_limit(options_.stop_at_limit);
    o->set_max_hash_string_bytes(options_.max_hash_string_bytes);
  }

  static std::string Utf8(PyObject* s) {
    if (s == nullptr || !PyUnicode_Check(s)) return {};
    Py_ssize_t n = 0;
    const char* data = PyUnicode_AsUTF8AndSize(s, &n);
    if (data == nullptr) {
      PyErr_Clear();
      return {};
    }
    return std::string(data, static_cast<size_t>(n));
  }

  static void ReleaseVars(FrameState* state) {
    for (VarState& var : state->vars) {
      ReleaseShape(&var);
      Py_XDECREF(var.name);
    }
    state->vars.clear();
  }

  // Per-run state (between start() and TakeTrace()).
  void ClearRun() {
    for (auto& state : owned_states_) {
      ReleaseVars(state.get());
      state->pending_output.clear();
    }
    stack_.clear();
    suspended_.clear();
    pool_.clear();
    for (auto& state : owned_states_) pool_.push_back(state.get());
    for (auto& [code, info] : codes_) Py_DECREF(code);
    codes_.clear();
    last_code_ = nullptr;
    last_info_ = nullptr;
    for (auto& [name, id] : name_ids_) Py_DECREF(name);
    name_ids_.clear();
    names_.clear();
    events_.clear();
    vars_.clear();
    dels_.clear();
    exceptions_.clear();
    text_pool_.clear();
    output_pool_.clear();
    output_recorded_ = 0;
    Py_CLEAR(filename_);
    Py_CLEAR(marker_);
    encoder_.reset();
    next_frame_id_ = 0;
    event_bytes_ = 0;
    recording_ = true;
    stopping_ = false;
    google::protobuf::ArenaOptions arena_options;
    arena_options.start_block_size = 16 << 10;
    arena_options.max_block_size = 1 << 20;
    trace_ = nullptr;
    arena_ = std::make_unique<google::protobuf::Arena>(arena_options);
    trace_ = google::protobuf::Arena::CreateMessage<proto::Trace>(arena_.get());
    run_clear_ = true;
  }

  void Reset() {
    if (active_) Stop();
    ClearRun();
    configured_ = false;
    options_ = TraceOptions();
    source_.clear();
    line_index_.reset();
  }

  TraceOptions options_;
  std::string source_;
  std::unique_ptr<LineIndex> line_index_;  // over source_
  bool configured_ = false;
  bool active_ = false;      // between start() and stop()
  bool installed_ = false;   // our trace function is (believed to be) installed
  bool recording_ = true;    // false once a cap was hit
  bool stopping_ = false;    // stop_at_limit / stop_run(): user lines raise TraceStopped
  bool run_clear_ = false;   // ClearRun() ran and nothing was recorded since
  PyObject* filename_ = nullptr;  // Owned.
  PyObject* marker_ = nullptr;    // Owned. The trace object handed to PyEval_SetTrace.
  std::unique_ptr<ValueEncoder> encoder_;
  // Events are built on an arena: allocation is a pointer bump and a run's trace is freed
  // in bulk, which halves the per-event cost compared with heap-allocated messages.
  std::unique_ptr<google::protobuf::Arena> arena_;
  proto::Trace* trace_ = nullptr;  // Owned by arena_.
  uint64_t event_bytes_ = 0;
  uint32_t next_frame_id_ = 0;
  std::unordered_map<PyCodeObject*, CodeInfo> codes_;  // keys Owned
  PyCodeObject* last_code_ = nullptr;                  // Borrowed cache of codes_
  CodeInfo* last_info_ = nullptr;
  std::vector<std::unique_ptr<FrameState>> owned_states_;  // every FrameState ever made
  std::vector<FrameState*> pool_;                          // free ones
  std::vector<FrameState*> stack_;  // active user frames, outermost first
  // Suspended generators/coroutines by frame. Keys Borrowed: a suspended generator's frame
  // stays alive until it is resumed or closed, and closing it resumes it (GeneratorExit).
  std::unordered_map<PyFrameObject*, FrameState*> suspended_;
  std::vector<LocalBinding> locals_;       // scratch
  std::vector<uintptr_t> shape_;           // scratch: the shape being built
  std::unordered_map<PyObject*, uint32_t> visited_;  // scratch of ShadowBuilder
  std::vector<PyObject*> shape_refs_;      // scratch: its leaves, Borrowed
  std::vector<PositionRange> positions_;  // scratch
  std::vector<EventRec> events_;
  std::vector<size_t> event_sizes_;  // scratch of SerializeDirect
  std::vector<VarRec> vars_;
  std::vector<uint32_t> dels_;
  std::vector<std::pair<std::string, std::string>> exceptions_;  // type, message
  std::string text_pool_;
  std::string output_pool_;       // Event.output texts
  size_t output_recorded_ = 0;    // bytes noted this run (capped at kMaxRecordedOutput)
  PyObject* tee_ = nullptr;           // Owned. The OutputTee installed as sys.stdout.
  PyObject* saved_stdout_ = nullptr;  // Owned. The stream it wraps.
  bool tee_dunder_ = false;           // sys.__stdout__ was replaced too
  std::vector<std::string> names_;
  std::unordered_map<PyObject*, uint32_t> name_ids_;  // keys Owned
  std::chrono::steady_clock::time_point start_time_;
};

Recorder& TheRecorder() {
  static Recorder* recorder = new Recorder();  // lives as long as the process
  return *recorder;
}

// sys.stdout while a run is traced: every attribute but write() is the wrapped stream's
// (read and set through), and write() forwards to the stream first, then hands the text to
// the recorder. What the program prints is therefore exactly what it would print untraced;
// a program that writes through sys.stdout.buffer or os.write is simply not recorded.
// Not instantiable from Python; the program may hold it, but all it can do with it is write.
struct OutputTee {
  PyObject_HEAD
  PyObject* stream;  // Owned.
};

PyObject* TeeWrite(PyObject* self, PyObject* text) {
  static PyObject* write_name = PyUnicode_InternFromString("write");  // lives as long as the process
  PyObject* result =
      PyObject_CallMethodOneArg(reinterpret_cast<OutputTee*>(self)->stream, write_name, text);
  if (result != nullptr && PyUnicode_Check(text)) TheRecorder().NoteOutput(text);
  return result;
}

PyObject* TeeGetattro(PyObject* self, PyObject* name) {
  if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "write") == 0) {
    return PyObject_GenericGetAttr(self, name);
  }
  return PyObject_GetAttr(reinterpret_cast<OutputTee*>(self)->stream, name);
}

int TeeSetattro(PyObject* self, PyObject* name, PyObject* value) {
  return PyObject_SetAttr(reinterpret_cast<OutputTee*>(self)->stream, name, value);
}

void TeeDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  Py_CLEAR(reinterpret_cast<OutputTee*>(self)->stream);
  type->tp_free(self);
  Py_DECREF(type);  // instances of a heap type hold a reference to it
}

PyMethodDef kTeeMethods[] = {
    {"write", TeeWrite, METH_O, "write(text): the stream's write, recorded by the tracer."},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot kTeeSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(TeeDealloc)},
    {Py_tp_getattro, reinterpret_cast<void*>(TeeGetattro)},
    {Py_tp_setattro, reinterpret_cast<void*>(TeeSetattro)},
    {Py_tp_methods, kTeeMethods},
    {0, nullptr},
};

PyType_Spec kTeeSpec = {"_egca_trace.OutputTee", sizeof(OutputTee), 0,
                        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, kTeeSlots};

PyObject* NewOutputTee(PyObject* stream) {
  static PyObject* type = PyType_FromSpec(&kTeeSpec);  // lives as long as the process
  if (type == nullptr) return nullptr;
  OutputTee* tee = PyObject_New(OutputTee, reinterpret_cast<PyTypeObject*>(type));
  if (tee == nullptr) return nullptr;
  Py_INCREF(stream);
  tee->stream = stream;
  return reinterpret_cast<PyObject*>(tee);
}

PyObject* ModuleStart(PyObject*, PyObject* args) {
  PyObject* filename = nullptr;
  if (!PyArg_ParseTuple(args, "U:start", &filename)) return nullptr;
  if (!TheRecorder().Start(filename)) return nullptr;
  Py_RETURN_NONE;
}

PyObject* ModuleStop(PyObject*, PyObject*) {
  TheRecorder().StopFromPython();
  Py_RETURN_NONE;
}

PyObject* ModuleStopRun(PyObject*, PyObject*) {
  TheRecorder().StopRun();
  Py_RETURN_NONE;
}

PyObject* ModuleIsActive(PyObject*, PyObject*) {
  return PyBool_FromLong(TheRecorder().active());
}

PyMethodDef kMethods[] = {
    {"start", ModuleStart, METH_VARARGS,
     "start(filename): trace frames whose code was compiled with this filename."},
    {"stop", ModuleStop, METH_NOARGS, "stop(): stop tracing (idempotent)."},
    {"is_active", ModuleIsActive, METH_NOARGS, "is_active(): between start() and stop()."},
    {"stop_run", ModuleStopRun, METH_NOARGS,
     "stop_run(): record nothing more and stop the traced program at its next line."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, kTraceModuleName,
    "egca's C-level execution tracer (see egca/tracer/trace_recorder.h).", -1, kMethods,
    nullptr, nullptr, nullptr, nullptr,
};

}  // namespace
}  // namespace hook

void ConfigureTrace(const TraceOptions& options, std::string_view source) {
  hook::TheRecorder().Configure(options, source);
}

void TakeTrace(proto::Trace* out) { hook::TheRecorder().Take(out); }

bool TakeSerializedTrace(std::string* out) { return hook::TheRecorder().TakeSerialized(out); }

}  // namespace egca::tracer

extern "C" PyObject* PyInit__egca_trace(void) {
  PyObject* module = PyModule_Create(&egca::tracer::hook::kModule);
  if (module == nullptr) return nullptr;
  if (PyModule_AddObjectRef(module, "TraceStopped", egca::tracer::hook::TraceStoppedType()) < 0) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
