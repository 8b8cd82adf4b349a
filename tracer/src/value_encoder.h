// Canonical, bounded encoding of Python values for trace snapshots.
//
// Two results per value: a 64-bit structural hash of the whole value (what change
// detection and the divergence engine compare) and a bounded text rendering (what people
// read). Both are deterministic across processes: no addresses, no PYTHONHASHSEED, sets
// hashed order-independently and rendered in sorted order of their elements' renderings,
// dicts in insertion order.
//
// The encoder never runs Python code it does not control: no __repr__/__str__/__eq__/
// __hash__/__getattr__ of user classes is called. Instances of classes written in Python
// are encoded from their __dict__ / __slots__ storage; containers are walked with the
// concrete C API; other C types are rendered through their (C) repr only if they are on
// a short allowlist of types whose repr is small and address-free, else as `<type>`.
// All work is bounded by TraceOptions (hash_budget, depths, prefixes, byte caps).
//
// Requires the GIL. Never leaves a Python exception set.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "egca/tracer/trace.pb.h"
#include "egca/tracer/trace_options.h"

namespace egca::tracer::hook {

struct ValueDigest {
  uint64_t hash = 0;
  bool partial = false;  // the hash covers only part of the value (a budget was hit)
};

class ValueEncoder {
 public:
  explicit ValueEncoder(const TraceOptions& options);

  // Starts a snapshot: containers and instances hashed until the next BeginSnapshot()
  // are memoized by identity (shared sub-structure, e.g. graph nodes reachable from
  // several variables, is hashed once). Valid because no Python code runs in between.
  void BeginSnapshot();
  // Ends it; outside a snapshot every Hash/Encode/Render call memoizes only for itself.
  void EndSnapshot();

  // Hash only: the cheap path used for change detection. Borrowed `value`.
  ValueDigest Hash(PyObject* value);
  // Hash and rendering. Borrowed `value`; fills every field of *out.
  void Encode(PyObject* value, proto::Value* out);
  // Hash and rendering, the rendering appended to *text. Borrowed `value`.
  ValueDigest EncodeText(PyObject* value, std::string* text);
  // Rendering only, for callers that need text (exception messages). Borrowed.
  std::string Render(PyObject* value);
  // Keeps a reference to `type` for the encoder's lifetime (as hashing an instance of it
  // does), so its address names it for good. Borrowed.
  void PinType(PyTypeObject* type) { InfoFor(type); }

 private:
  struct Walk {
    int64_t budget = 0;      // container elements left to hash
    bool partial = false;    // some part of the value was not hashed
    bool truncated = false;  // some part of the value was not rendered
    uint32_t cycles = 0;     // cycle markers produced (their hash depends on the path)
    bool mutable_seen = false;  // a mutable object was visited (dict cache eligibility)
    bool render_only = false;   // re-rendering a value whose hash is memoized
    std::vector<PyObject*> stack;  // containers being walked (cycle detection). Borrowed.
  };
  struct TypeInfo {
    std::string name;  // TypeName()
    uint64_t hash = 0;
  };
  struct Memo {
    uint64_t hash;
    bool partial;
    int64_t consumed;  // hash budget the full walk used
    bool mutable_inside;
    bool cyclic;       // the hash contains a cycle marker (depends on the walk's entry)
  };
  struct DictCache {
    uint64_t version;  // PyDictObject::ma_version_tag when hashed
    uint64_t hash;
    int64_t consumed;
  };

  const TypeInfo& InfoFor(PyTypeObject* type);
  uint64_t VisitComposite(PyObject* v, uint32_t depth, std::string* text, Walk& walk);

  // Returns the hash of `v`; appends its rendering to *text unless text is null.
  uint64_t Visit(PyObject* v, uint32_t depth, std::string* text, Walk& walk);
  uint64_t VisitObject(PyObject* v, uint32_t depth, std::string* text, Walk& walk);
  uint64_t VisitSequence(PyObject* v, PyObject* const* items, Py_ssize_t n, uint64_t tag,
                         const char* open, const char* close, uint32_t depth,
                         std::string* text, Walk& walk);
  uint64_t VisitDict(PyObject* v, uint32_t depth, std::string* text, Walk& walk);
  uint64_t VisitDictEntries(PyObject* v, uint32_t depth, std::string* text, Walk& walk);
  uint64_t VisitSet(PyObject* v, uint32_t depth, std::string* text, Walk& walk);
  uint64_t VisitIterable(PyObject* v, uint64_t tag, const char* open, const char* close,
                         uint32_t depth, std::string* text, Walk& walk);
  uint64_t VisitInstance(PyObject* v, uint32_t depth, std::string* text, Walk& walk);
  uint64_t VisitString(PyObject* v, std::string* text, Walk& walk);
  uint64_t VisitBytes(const char* data, Py_ssize_t n, const char* prefix, uint64_t tag,
                      std::string* text, Walk& walk);
  uint64_t VisitInt(PyObject* v, std::string* text, Walk& walk);
  uint64_t VisitRepr(PyObject* v, std::string* text, Walk& walk);

  bool TextFull(const std::string* text) const;
  void Finish(const Walk& walk, uint64_t hash, std::string* text, size_t base) const;

  TraceOptions options_;
  PyTypeObject* deque_type_ = nullptr;  // collections.deque; borrowed (module keeps it)
  std::unordered_map<PyObject*, Memo> memo_;  // keys Borrowed, for one snapshot
  std::unordered_map<PyObject*, Memo> value_memo_;  // cyclic results, for one value's walk
  bool in_snapshot_ = false;
  // Hashes of all-immutable dicts by identity, valid while their version tag is unchanged;
  // kept across snapshots. Keys Borrowed (validated by the version tag).
  std::unordered_map<PyObject*, DictCache> dict_cache_;
  size_t text_limit_ = 0;  // size of the output string at which rendering stops
  // Keys Owned (a reference keeps a type's address from being reused while cached).
  std::unordered_map<PyTypeObject*, TypeInfo> types_;

 public:
  ~ValueEncoder();
  ValueEncoder(const ValueEncoder&) = delete;
  ValueEncoder& operator=(const ValueEncoder&) = delete;
};

// Qualified name of a type for renderings: "int", "Point", "collections.OrderedDict"
// (module prefix omitted for builtins and for the user's own module).
std::string TypeName(PyTypeObject* type);

// Stable 64-bit hashing used throughout the trace (exposed for tests).
uint64_t HashBytes(const void* data, size_t n, uint64_t seed);
// Cheap order-dependent step; inputs are already mixed (Mix64 / HashBytes outputs), and
// every composite hash goes through Mix64 once at the end (see VisitComposite). Inline:
// it runs once or twice per hashed element.
inline uint64_t HashCombine(uint64_t h, uint64_t v) {
  h = ((h << 23) | (h >> 41)) ^ v;
  return h * 0x9e3779b97f4a7c15ULL;
}

}  // namespace egca::tracer::hook
