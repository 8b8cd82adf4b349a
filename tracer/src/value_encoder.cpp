#include "value_encoder.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <limits>
#include <optional>
#include <cstring>
#include <utility>

#include <structmember.h>

#include "python_compat.h"

namespace egca::tracer::hook {
namespace {

// Type tags keep e.g. [1] and (1,) and {1} apart in the hash.
enum Tag : uint64_t {
  kTagNone = 1, kTagBool, kTagInt, kTagBigInt, kTagFloat, kTagStr, kTagBytes, kTagByteArray,
  kTagList, kTagTuple, kTagDict, kTagSet, kTagFrozenSet, kTagDeque, kTagFunction,
  kTagBuiltin, kTagMethod, kTagClass, kTagModule, kTagGenerator, kTagCode, kTagException,
  kTagInstance, kTagEnum, kTagRepr, kTagOpaque, kTagCycle, kTagTooDeep, kTagSubclass,
  kTagView,
};

constexpr const char kEllipsis[] = "\xE2\x80\xA6";  // "…"

uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// Saves and restores the thread's exception state around encoding, so that neither a
// pending exception (EXCEPTION events) nor one raised while encoding leaks.
class ErrorGuard {
 public:
  ErrorGuard() { PyErr_Fetch(&type_, &value_, &tb_); }
  ~ErrorGuard() {
    PyErr_Clear();
    PyErr_Restore(type_, value_, tb_);
  }
  ErrorGuard(const ErrorGuard&) = delete;
  ErrorGuard& operator=(const ErrorGuard&) = delete;

 private:
  PyObject* type_ = nullptr;  // Owned (handed back by PyErr_Restore).
  PyObject* value_ = nullptr;
  PyObject* tb_ = nullptr;
};

uint64_t HashCString(const char* s, uint64_t seed) { return HashBytes(s, std::strlen(s), seed); }

uint64_t HashPyString(PyObject* s, uint64_t seed) {
  // Compact str objects always use the narrowest kind, so (kind, data) is canonical.
  if (PyUnicode_READY(s) != 0) {
    PyErr_Clear();
    return seed;
  }
  size_t n = static_cast<size_t>(PyUnicode_GET_LENGTH(s)) * PyUnicode_KIND(s);
  return HashBytes(PyUnicode_DATA(s), n, HashCombine(seed, PyUnicode_KIND(s)));
}

void AppendUtf8(PyObject* s, std::string* out) {
  Py_ssize_t n = 0;
  const char* data = PyUnicode_AsUTF8AndSize(s, &n);
  if (data == nullptr) {
    PyErr_Clear();
    out->append("?");
    return;
  }
  out->append(data, static_cast<size_t>(n));
}

// Appends `data` quoted like a Python literal (quote '), escaping quotes, backslashes and
// control bytes; non-ASCII UTF-8 is kept. At most `limit` source bytes, cut at a character
// boundary. Returns true if everything fit.
bool AppendQuoted(const char* data, size_t n, size_t limit, bool is_bytes, std::string* out) {
  out->push_back('\'');
  size_t end = std::min(n, limit);
  if (end < n && !is_bytes) {
    while (end > 0 && (static_cast<unsigned char>(data[end]) & 0xC0) == 0x80) --end;
  }
  for (size_t i = 0; i < end; ++i) {
    unsigned char c = static_cast<unsigned char>(data[i]);
    switch (c) {
      case '\\': out->append("\\\\"); break;
      case '\'': out->append("\\'"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (c < 0x20 || c == 0x7f || (is_bytes && c >= 0x80)) {
          static const char kHex[] = "0123456789abcdef";
          out->append("\\x");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 15]);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  if (end < n) out->append(kEllipsis);
  out->push_back('\'');
  return end == n;
}

void AppendLength(Py_ssize_t n, std::string* out) {
  out->append("(len=");
  out->append(std::to_string(n));
  out->push_back(')');
}

// Removes " at 0x7f..." style addresses from a C type's repr so it is canonical.
std::string StripAddresses(std::string s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '0' && i + 1 < s.size() && s[i + 1] == 'x' && i + 2 < s.size() &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.append("0x?");
      i += 2;
      while (i + 1 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1]))) ++i;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

// C types whose repr is small, address-free and runs no Python code.
bool HasSafeRepr(PyTypeObject* type) {
  if (type == &PyComplex_Type || type == &PyRange_Type) return true;
  static const char* const kAllowed[] = {
      "datetime.date", "datetime.datetime", "datetime.time", "datetime.timedelta",
      "datetime.timezone", "decimal.Decimal", "re.Pattern", "re.Match",
  };
  for (const char* name : kAllowed) {
    if (std::strcmp(type->tp_name, name) == 0) return true;
  }
  return false;
}

bool IsEnumMember(PyObject* v) {
  const char* meta = Py_TYPE(Py_TYPE(v))->tp_name;
  return std::strcmp(meta, "EnumType") == 0 || std::strcmp(meta, "EnumMeta") == 0;
}

PyObject* BorrowedDictItem(PyObject* dict, const char* key) {
  if (dict == nullptr || !PyDict_Check(dict)) return nullptr;
  PyObject* item = PyDict_GetItemString(dict, key);
  return item;
}

std::string QualnameOf(PyObject* obj, const char* fallback) {
  // Functions, classes, generators and code objects store their qualname in a C field;
  // reading it through these accessors never runs Python code.
  PyObject* name = nullptr;
  if (PyFunction_Check(obj)) {
    name = reinterpret_cast<PyFunctionObject*>(obj)->func_qualname;
  } else if (PyType_Check(obj)) {
    return TypeName(reinterpret_cast<PyTypeObject*>(obj));
  } else if (PyGen_Check(obj) || PyCoro_CheckExact(obj)) {
    name = reinterpret_cast<PyGenObject*>(obj)->gi_qualname;
  } else if (PyCode_Check(obj)) {
    name = reinterpret_cast<PyCodeObject*>(obj)->co_qualname;
  }
  if (name != nullptr && PyUnicode_Check(name)) {
    std::string out;
    AppendUtf8(name, &out);
    return out;
  }
  return fallback;
}

}  // namespace

uint64_t HashBytes(const void* data, size_t n, uint64_t seed) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ULL);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = ((h << 5) | (h >> 59)) ^ w;
    h *= 0x9e3779b97f4a7c15ULL;
  }
  uint64_t tail = 0;
  for (size_t k = 0; i < n; ++i, ++k) tail |= static_cast<uint64_t>(p[i]) << (8 * k);
  h = ((h << 5) | (h >> 59)) ^ tail;
  return Mix64(h * 0x9e3779b97f4a7c15ULL);
}

std::string TypeName(PyTypeObject* type) {
  if (!(type->tp_flags & Py_TPFLAGS_HEAPTYPE)) return type->tp_name;
  auto* heap = reinterpret_cast<PyHeapTypeObject*>(type);
  std::string out;
  PyObject* module = BorrowedDictItem(type->tp_dict, "__module__");
  if (module != nullptr && PyUnicode_Check(module) &&
      PyUnicode_CompareWithASCIIString(module, "builtins") != 0 &&
      PyUnicode_CompareWithASCIIString(module, "__main__") != 0) {
    AppendUtf8(module, &out);
    out.push_back('.');
  }
  if (heap->ht_qualname != nullptr && PyUnicode_Check(heap->ht_qualname)) {
    AppendUtf8(heap->ht_qualname, &out);
  } else {
    out.append(type->tp_name);
  }
  return out;
}

ValueEncoder::ValueEncoder(const TraceOptions& options) : options_(options) {
  // collections.deque is a static type of the _collections extension, imported once per
  // process; the reference below keeps it for good.
  static PyTypeObject* deque_type = [] {
    ErrorGuard guard;
    PyTypeObject* type = nullptr;
    PyObject* collections = PyImport_ImportModule("collections");
    if (collections != nullptr) {
      PyObject* deque = PyObject_GetAttrString(collections, "deque");
      if (deque != nullptr && PyType_Check(deque)) {
        type = reinterpret_cast<PyTypeObject*>(deque);
        Py_INCREF(deque);
      }
      Py_XDECREF(deque);
      Py_DECREF(collections);
    }
    return type;
  }();
  deque_type_ = deque_type;
}

ValueEncoder::~ValueEncoder() {
  for (auto& [type, info] : types_) Py_DECREF(reinterpret_cast<PyObject*>(type));
}

void ValueEncoder::BeginSnapshot() {
  if (!memo_.empty()) memo_.clear();
  in_snapshot_ = true;
}

void ValueEncoder::EndSnapshot() {
  if (!memo_.empty()) memo_.clear();
  in_snapshot_ = false;
}

const ValueEncoder::TypeInfo& ValueEncoder::InfoFor(PyTypeObject* type) {
  auto it = types_.find(type);
  if (it != types_.end()) return it->second;
  TypeInfo info;
  info.name = TypeName(type);
  info.hash = HashBytes(info.name.data(), info.name.size(), kTagInstance);
  Py_INCREF(reinterpret_cast<PyObject*>(type));
  return types_.emplace(type, std::move(info)).first->second;
}

uint64_t ValueEncoder::VisitComposite(PyObject* v, uint32_t depth, std::string* text,
                                      Walk& walk) {
  // Hash-only visits of an object already hashed in this snapshot reuse its hash. Results
  // that contain a cycle marker depend on the path and are not memoized.
  // Worth an identity-map entry: top-level values (Encode after Hash in one snapshot),
  // instances (graph nodes) and big containers; small tuples and lists are cheaper to
  // rehash than to look up.
  bool memoizable = depth == 0 || (Py_TYPE(v)->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
                    (PyList_Check(v) && PyList_GET_SIZE(v) >= 16) ||
                    (PyTuple_Check(v) && PyTuple_GET_SIZE(v) >= 16) ||
                    (PyDict_Check(v) && PyDict_GET_SIZE(v) >= 16) ||
                    (PyAnySet_Check(v) && PySet_GET_SIZE(v) >= 16);
  if (memoizable) {
    const Memo* hit = nullptr;
    auto it = memo_.find(v);
    if (it != memo_.end()) {
      hit = &it->second;
    } else {
      auto jt = value_memo_.find(v);
      if (jt != value_memo_.end()) hit = &jt->second;
    }
    if (hit != nullptr) {
      const Memo memo = *hit;  // the maps may grow while re-rendering below
      walk.partial |= memo.partial;
      walk.budget -= memo.consumed;
      walk.mutable_seen |= memo.mutable_inside;
      if (memo.cyclic) ++walk.cycles;
      if (text != nullptr) {
        // Hashed already in this snapshot: only the bounded prefix is rendered.
        bool render_only = walk.render_only;
        int64_t budget = walk.budget;
        walk.render_only = true;
        walk.budget = std::numeric_limits<int64_t>::max() / 2;
        VisitObject(v, depth, text, walk);
        walk.render_only = render_only;
        walk.budget = budget;
      }
      return memo.hash;
    }
  }
  bool partial_before = walk.partial;
  bool mutable_before = walk.mutable_seen;
  uint32_t cycles_before = walk.cycles;
  int64_t budget_before = walk.budget;
  walk.partial = false;
  walk.mutable_seen = false;
  uint64_t h = Mix64(VisitObject(v, depth, text, walk));
  bool partial = walk.partial;
  bool mutable_inside = walk.mutable_seen;
  walk.partial = partial_before || partial;
  walk.mutable_seen = mutable_before || mutable_inside;
  if (memoizable && !walk.render_only) {
    Memo memo{h, partial, budget_before - walk.budget, mutable_inside,
              walk.cycles != cycles_before};
    if (!memo.cyclic) {
      memo_.emplace(v, memo);
    } else {
      // Inside a cycle the hash depends on where the walk entered it: reuse it only within
      // this value's walk (still canonical: the walk order is the value's own structure).
      value_memo_.emplace(v, memo);
    }
  }
  return h;
}

ValueDigest ValueEncoder::Hash(PyObject* value) {
  // Inside a snapshot the caller (the trace function) guards the error state once.
  std::optional<ErrorGuard> guard;
  if (!in_snapshot_) {
    guard.emplace();
    if (!memo_.empty()) memo_.clear();
  }
  if (!value_memo_.empty()) value_memo_.clear();
  Walk walk;
  walk.budget = options_.hash_budget;
  uint64_t h = Visit(value, 0, nullptr, walk);
  return {h, walk.partial};
}

void ValueEncoder::Encode(PyObject* value, proto::Value* out) {
  std::string* text = out->mutable_text();
  text->clear();
  ValueDigest d = EncodeText(value, text);
  out->set_hash(d.hash);
  out->set_partial(d.partial);
}

ValueDigest ValueEncoder::EncodeText(PyObject* value, std::string* text) {
  // Inside a snapshot the caller (the trace function) guards the error state once.
  std::optional<ErrorGuard> guard;
  if (!in_snapshot_) {
    guard.emplace();
    if (!memo_.empty()) memo_.clear();
  }
  if (!value_memo_.empty()) value_memo_.clear();
  Walk walk;
  walk.budget = options_.hash_budget;
  size_t base = text->size();
  text_limit_ = base + options_.max_repr_bytes;
  uint64_t h = Visit(value, 0, text, walk);
  Finish(walk, h, text, base);
  return {h, walk.partial};
}

std::string ValueEncoder::Render(PyObject* value) {
  std::string text;
  EncodeText(value, &text);
  return text;
}

bool ValueEncoder::TextFull(const std::string* text) const {
  return text != nullptr && text->size() >= text_limit_;
}

void ValueEncoder::Finish(const Walk& walk, uint64_t hash, std::string* text,
                          size_t base) const {
  bool cut = false;
  if (text->size() > base + options_.max_repr_bytes) {
    size_t end = base + options_.max_repr_bytes;
    while (end > 0 && (static_cast<unsigned char>((*text)[end]) & 0xC0) == 0x80) --end;
    text->resize(end);
    text->append(kEllipsis);
    cut = true;
  }
  if (cut || walk.truncated) {
    // The rendering is incomplete: a short hash keeps different values' texts different.
    char buf[16];
    std::snprintf(buf, sizeof(buf), "#%08x", static_cast<unsigned>(hash & 0xffffffffu));
    text->append(buf);
  }
}

namespace {
bool IsScalar(PyObject* v) {
  PyTypeObject* type = Py_TYPE(v);
  return v == Py_None || type == &PyBool_Type || type == &PyLong_Type ||
         type == &PyFloat_Type || type == &PyUnicode_Type || type == &PyBytes_Type;
}
}  // namespace

uint64_t ValueEncoder::Visit(PyObject* v, uint32_t depth, std::string* text, Walk& walk) {
  if (text == nullptr && !TextFull(text)) {
    PyTypeObject* type = Py_TYPE(v);
    if (type == &PyLong_Type) return VisitInt(v, nullptr, walk);
    // Small tuples of scalars (dict keys like (i, j), pairs in lists) are the most common
    // composite; hash them without the general container machinery. Same result as the
    // general path: Mix64 of the sequence hash.
    if (type == &PyTuple_Type && PyTuple_GET_SIZE(v) <= 8 && depth + 1 < options_.max_hash_depth) {
      Py_ssize_t n = PyTuple_GET_SIZE(v);
      bool scalars = true;
      for (Py_ssize_t i = 0; i < n && scalars; ++i) scalars = IsScalar(PyTuple_GET_ITEM(v, i));
      if (scalars && walk.budget >= n) {
        uint64_t h = HashCombine(kTagTuple, static_cast<uint64_t>(n));
        for (Py_ssize_t i = 0; i < n; ++i) {
          --walk.budget;
          h = HashCombine(h, VisitObject(PyTuple_GET_ITEM(v, i), depth + 1, nullptr, walk));
        }
        return Mix64(HashCombine(0, h));
      }
    }
  }
  if (IsScalar(v)) return VisitObject(v, depth, text, walk);
  return VisitComposite(v, depth, text, walk);
}

uint64_t ValueEncoder::VisitObject(PyObject* v, uint32_t depth, std::string* text,
                                   Walk& walk) {
  if (TextFull(text)) {
    walk.truncated = true;
    text = nullptr;
  }
  PyTypeObject* type = Py_TYPE(v);
  if (v == Py_None) {
    if (text) text->append("None");
    return Mix64(kTagNone);
  }
  if (type == &PyBool_Type) {
    bool b = v == Py_True;
    if (text) text->append(b ? "True" : "False");
    return Mix64(kTagBool * 0x9e3779b97f4a7c15ULL + b);
  }
  if (type == &PyLong_Type) return VisitInt(v, text, walk);
  if (type == &PyFloat_Type) {
    double d = PyFloat_AS_DOUBLE(v);
    uint64_t bits;
    if (d != d) d = std::numeric_limits<double>::quiet_NaN();  // one NaN encoding
    std::memcpy(&bits, &d, sizeof(bits));
    if (text) {
      char* s = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, nullptr);
      if (s != nullptr) {
        text->append(s);
        PyMem_Free(s);
      } else {
        PyErr_Clear();
        text->append("float");
      }
    }
    return Mix64(bits ^ 0x2545f4914f6cdd1dULL) ^ kTagFloat;
  }
  if (type == &PyUnicode_Type) return VisitString(v, text, walk);
  if (type == &PyBytes_Type) {
    return VisitBytes(PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v), "b", kTagBytes, text, walk);
  }
  if (type == &PyByteArray_Type) {
    walk.mutable_seen = true;
    if (text) text->append("bytearray(");
    uint64_t h = VisitBytes(PyByteArray_AS_STRING(v), PyByteArray_GET_SIZE(v), "b",
                            kTagByteArray, text, walk);
    if (text) text->push_back(')');
    return h;
  }

  // Containers, cycle-safe and depth-bounded.
  bool is_list = PyList_Check(v), is_tuple = PyTuple_Check(v), is_dict = PyDict_Check(v);
  bool is_set = PyAnySet_Check(v);
  // The subtype check walks the MRO: only worth it for types that are none of the above.
  bool is_deque = !is_list && !is_tuple && !is_dict && !is_set && deque_type_ != nullptr &&
                  PyObject_TypeCheck(v, deque_type_);
  if (is_list || is_tuple || is_dict || is_set || is_deque) {
    if (std::find(walk.stack.begin(), walk.stack.end(), v) != walk.stack.end()) {
      if (text) text->append("<cycle>");
      ++walk.cycles;
      auto level = std::find(walk.stack.begin(), walk.stack.end(), v) - walk.stack.begin();
      return HashCombine(kTagCycle, static_cast<uint64_t>(level));
    }
    Py_ssize_t len = PyObject_Length(v);
    if (len < 0) {
      PyErr_Clear();
      len = 0;
    }
    if (depth >= options_.max_hash_depth) {
      walk.partial = true;
      if (text) text->append("…");
      return HashCombine(kTagTooDeep, static_cast<uint64_t>(len));
    }
    bool exact = type == &PyList_Type || type == &PyTuple_Type || type == &PyDict_Type ||
                 type == &PySet_Type || type == &PyFrozenSet_Type || is_deque;
    uint64_t h = 0;
    std::string name;
    if (!exact || is_deque || type == &PyFrozenSet_Type) {
      name = InfoFor(type).name;
      h = HashBytes(name.data(), name.size(), kTagSubclass);
      if (text) {
        text->append(name);
        text->push_back('(');
      }
    }
    if (!is_tuple && type != &PyFrozenSet_Type) walk.mutable_seen = true;
    walk.stack.push_back(v);
    uint64_t inner;
    if (is_list) {
      inner = VisitSequence(v, reinterpret_cast<PyListObject*>(v)->ob_item, PyList_GET_SIZE(v),
                            kTagList, "[", "]", depth, text, walk);
    } else if (is_tuple) {
      inner = VisitSequence(v, reinterpret_cast<PyTupleObject*>(v)->ob_item,
                            PyTuple_GET_SIZE(v), kTagTuple, "(", ")", depth, text, walk);
    } else if (is_dict) {
      inner = VisitDict(v, depth, text, walk);
    } else if (is_set) {
      inner = VisitSet(v, depth, text, walk);
    } else {
      inner = VisitIterable(v, kTagDeque, "[", "]", depth, text, walk);
    }
    walk.stack.pop_back();
    if (text && !name.empty()) text->push_back(')');
    return HashCombine(h, inner);
  }

  // Callables, classes, modules, generators: identity by qualified name.
  if (PyFunction_Check(v)) {
    std::string q = QualnameOf(v, "function");
    if (text) text->append("<function ").append(q).append(">");
    return HashBytes(q.data(), q.size(), kTagFunction);
  }
  if (PyCFunction_Check(v)) {
    const char* name = reinterpret_cast<PyCFunctionObject*>(v)->m_ml->ml_name;
    if (text) text->append("<builtin ").append(name).append(">");
    return HashCString(name, kTagBuiltin);
  }
  if (PyMethod_Check(v)) {
    PyObject* func = PyMethod_GET_FUNCTION(v);
    std::string q = QualnameOf(func, "method");
    if (text) text->append("<method ").append(q).append(">");
    return HashBytes(q.data(), q.size(), kTagMethod);
  }
  if (PyType_Check(v)) {
    std::string q = TypeName(reinterpret_cast<PyTypeObject*>(v));
    if (text) text->append("<class ").append(q).append(">");
    return HashBytes(q.data(), q.size(), kTagClass);
  }
  if (PyModule_Check(v)) {
    const char* name = PyModule_GetName(v);
    if (name == nullptr) {
      PyErr_Clear();
      name = "?";
    }
    if (text) text->append("<module ").append(name).append(">");
    return HashCString(name, kTagModule);
  }
  if (PyGen_Check(v) || PyCoro_CheckExact(v) || PyAsyncGen_CheckExact(v)) {
    std::string q = QualnameOf(v, "generator");
    const char* kind = PyGen_Check(v) ? "generator" : PyCoro_CheckExact(v) ? "coroutine"
                                                                           : "async_generator";
    if (text) text->append("<").append(kind).append(" ").append(q).append(">");
    return HashBytes(q.data(), q.size(), kTagGenerator);
  }
  if (PyCode_Check(v)) {
    std::string q = QualnameOf(v, "code");
    if (text) text->append("<code ").append(q).append(">");
    return HashBytes(q.data(), q.size(), kTagCode);
  }
  if (PyExceptionInstance_Check(v)) {
    std::string name = TypeName(type);
    uint64_t h = HashBytes(name.data(), name.size(), kTagException);
    PyObject* args = reinterpret_cast<PyBaseExceptionObject*>(v)->args;
    if (text) text->append(name);
    if (args != nullptr && PyTuple_Check(args) && PyTuple_GET_SIZE(args) == 1) {
      // One argument prints as Type(arg), the way Python shows exceptions.
      walk.stack.push_back(v);
      if (text) text->push_back('(');
      h = HashCombine(h, Visit(PyTuple_GET_ITEM(args, 0), depth + 1, text, walk));
      if (text) text->push_back(')');
      walk.stack.pop_back();
    } else if (args != nullptr && PyTuple_Check(args)) {
      walk.stack.push_back(v);
      h = HashCombine(h, VisitSequence(args, reinterpret_cast<PyTupleObject*>(args)->ob_item,
                                       PyTuple_GET_SIZE(args), kTagTuple, "(", ")", depth,
                                       text, walk));
      walk.stack.pop_back();
    } else if (text) {
      text->append("()");
    }
    return h;
  }
  if (type->tp_flags & Py_TPFLAGS_HEAPTYPE) {
    walk.mutable_seen = true;
    return VisitInstance(v, depth, text, walk);
  }
  if (PyDictKeys_Check(v) || PyDictValues_Check(v) || PyDictItems_Check(v)) {
    walk.mutable_seen = true;
    std::string name = type->tp_name;
    if (text) text->append(name).push_back('(');
    walk.stack.push_back(v);
    uint64_t h = VisitIterable(v, HashBytes(name.data(), name.size(), kTagView), "[", "]",
                               depth, text, walk);
    walk.stack.pop_back();
    if (text) text->push_back(')');
    return h;
  }
  if (PyLong_Check(v) || PyFloat_Check(v) || PyUnicode_Check(v)) {
    // Subclasses of scalars written in C (rare): value under the type's name.
    return VisitRepr(v, text, walk);
  }
  if (HasSafeRepr(type)) return VisitRepr(v, text, walk);
  // Other C objects (iterators, file objects, ...): their state is not readable without
  // side effects; the type is recorded.
  walk.mutable_seen = true;
  if (text) text->append("<").append(type->tp_name).append(">");
  return HashCString(type->tp_name, kTagOpaque);
}

uint64_t ValueEncoder::VisitInt(PyObject* v, std::string* text, Walk& walk) {
  int overflow = 0;
  long long x = 0;
  if (!SmallLongValue(v, &x)) x = PyLong_AsLongLongAndOverflow(v, &overflow);
  if (overflow == 0) {
    if (text) {
      char buf[24];
      auto res = std::to_chars(buf, buf + sizeof(buf), x);
      text->append(buf, res.ptr);
    }
    return Mix64(static_cast<uint64_t>(x) ^ 0x5bd1e9955bd1e995ULL);
  }
  // Big ints: hash the two's-complement bytes (O(size)); render decimal only while that is
  // cheap (int -> str is quadratic in CPython 3.11 and refused above 4300 digits).
  size_t bits = _PyLong_NumBits(v);
  size_t nbytes = bits / 8 + 1;
  std::string bytes(nbytes, '\0');
  uint64_t h = kTagBigInt;
  if (_PyLong_AsByteArray(reinterpret_cast<PyLongObject*>(v),
                          reinterpret_cast<unsigned char*>(bytes.data()), nbytes, 1, 1) == 0) {
    h = HashBytes(bytes.data(), bytes.size(), kTagBigInt);
  } else {
    PyErr_Clear();
  }
  if (text) {
    if (bits <= 1024) {
      PyObject* s = PyObject_Str(v);
      if (s != nullptr) {
        AppendUtf8(s, text);
        Py_DECREF(s);
        return h;
      }
      PyErr_Clear();
    }
    text->append("int(bits=").append(std::to_string(bits)).append(")");
    walk.truncated = true;
  }
  return h;
}

uint64_t ValueEncoder::VisitString(PyObject* v, std::string* text, Walk& walk) {
  Py_ssize_t len = PyUnicode_GET_LENGTH(v);
  uint64_t h;
  size_t nbytes = static_cast<size_t>(len) * PyUnicode_KIND(v);
  if (nbytes <= options_.max_hash_string_bytes) {
    h = HashPyString(v, kTagStr);
  } else {
    // Head and tail plus the length: a long string costs O(cap), not O(size), per event.
    size_t half = options_.max_hash_string_bytes / 2;
    const char* data = static_cast<const char*>(PyUnicode_DATA(v));
    h = HashBytes(data, half, kTagStr);
    h = HashCombine(h, HashBytes(data + nbytes - half, half, static_cast<uint64_t>(len)));
    walk.partial = true;
  }
  if (text) {
    Py_ssize_t n = 0;
    const char* data = PyUnicode_AsUTF8AndSize(v, &n);
    if (data == nullptr) {
      PyErr_Clear();
      text->append("'?'");
    } else if (!AppendQuoted(data, static_cast<size_t>(n), options_.max_string_bytes, false,
                             text)) {
      AppendLength(len, text);
      walk.truncated = true;
    }
  }
  return h;
}

uint64_t ValueEncoder::VisitBytes(const char* data, Py_ssize_t n, const char* prefix,
                                  uint64_t tag, std::string* text, Walk& walk) {
  size_t size = static_cast<size_t>(n);
  uint64_t h;
  if (size <= options_.max_hash_string_bytes) {
    h = HashBytes(data, size, tag);
  } else {
    size_t half = options_.max_hash_string_bytes / 2;
    h = HashCombine(HashBytes(data, half, tag), HashBytes(data + size - half, half, size));
    walk.partial = true;
  }
  if (text) {
    text->append(prefix);
    if (!AppendQuoted(data, size, options_.max_string_bytes, true, text)) {
      AppendLength(n, text);
      walk.truncated = true;
    }
  }
  return h;
}

uint64_t ValueEncoder::VisitSequence(PyObject* v, PyObject* const* items, Py_ssize_t n,
                                     uint64_t tag, const char* open, const char* close,
                                     uint32_t depth, std::string* text, Walk& walk) {
  uint64_t h = HashCombine(tag, static_cast<uint64_t>(n));
  bool render = text != nullptr && depth < options_.max_render_depth;
  if (text && !render) {
    text->append(open).append(kEllipsis).append(close);
    AppendLength(n, text);
    walk.truncated = true;
  }
  if (render) text->append(open);
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (walk.budget <= 0) {
      walk.partial = true;
      break;
    }
    --walk.budget;
    // A list may be mutated while we walk it only by code we run; we run none, but keep
    // the bound check cheap and honest anyway.
    if (PyList_Check(v) && i >= PyList_GET_SIZE(v)) break;
    bool show = render && static_cast<uint32_t>(i) < options_.container_prefix && !TextFull(text);
    if (!show && walk.render_only) break;
    if (show && i > 0) text->append(", ");
    h = HashCombine(h, Visit(items[i], depth + 1, show ? text : nullptr, walk));
  }
  if (render) {
    bool cut = static_cast<uint32_t>(n) > options_.container_prefix || TextFull(text);
    if (cut && n > 0) text->append(", ").append(kEllipsis);
    if (tag == kTagTuple && n == 1) text->push_back(',');
    text->append(close);
    if (cut) {
      AppendLength(n, text);
      walk.truncated = true;
    }
  }
  return h;
}

uint64_t ValueEncoder::VisitDict(PyObject* v, uint32_t depth, std::string* text, Walk& walk) {
  // A dict whose entries are all immutable (ints, strs, tuples of them, ...) is unchanged
  // as long as its version tag (PEP 509; unique across all dicts, so an address reused by
  // a new dict cannot match) is: its hash is reused across snapshots.
  uint64_t version = reinterpret_cast<PyDictObject*>(v)->ma_version_tag;
  if (text == nullptr && !walk.render_only) {
    auto it = dict_cache_.find(v);
    if (it != dict_cache_.end() && it->second.version == version) {
      walk.budget -= it->second.consumed;
      return it->second.hash;
    }
  }
  bool mutable_before = walk.mutable_seen;
  bool partial_before = walk.partial;
  uint32_t cycles_before = walk.cycles;
  int64_t budget_before = walk.budget;
  walk.mutable_seen = false;
  walk.partial = false;
  uint64_t h = VisitDictEntries(v, depth, text, walk);
  bool cacheable = !walk.mutable_seen && !walk.partial && walk.cycles == cycles_before &&
                   !walk.render_only;
  walk.mutable_seen = mutable_before || walk.mutable_seen;
  walk.partial = partial_before || walk.partial;
  if (cacheable) {
    if (dict_cache_.size() >= 4096) dict_cache_.clear();
    dict_cache_[v] = DictCache{version, h, budget_before - walk.budget};
  }
  return h;
}

uint64_t ValueEncoder::VisitDictEntries(PyObject* v, uint32_t depth, std::string* text,
                                        Walk& walk) {
  Py_ssize_t n = PyDict_GET_SIZE(v);
  uint64_t h = HashCombine(kTagDict, static_cast<uint64_t>(n));
  bool render = text != nullptr && depth < options_.max_render_depth;
  if (text && !render) {
    text->append("{").append(kEllipsis).append("}");
    AppendLength(n, text);
    walk.truncated = true;
  }
  if (render) text->append("{");
  Py_ssize_t pos = 0, i = 0;
  PyObject *key, *value;
  while (PyDict_Next(v, &pos, &key, &value)) {
    if (walk.budget <= 0) {
      walk.partial = true;
      break;
    }
    --walk.budget;
    bool show = render && static_cast<uint32_t>(i) < options_.container_prefix && !TextFull(text);
    if (!show && walk.render_only) break;
    if (show && i > 0) text->append(", ");
    h = HashCombine(h, Visit(key, depth + 1, show ? text : nullptr, walk));
    if (show) text->append(": ");
    h = HashCombine(h, Visit(value, depth + 1, show ? text : nullptr, walk));
    ++i;
  }
  if (render) {
    bool cut = static_cast<uint32_t>(n) > options_.container_prefix || TextFull(text);
    if (cut && n > 0) text->append(", ").append(kEllipsis);
    text->append("}");
    if (cut) {
      AppendLength(n, text);
      walk.truncated = true;
    }
  }
  return h;
}

uint64_t ValueEncoder::VisitSet(PyObject* v, uint32_t depth, std::string* text, Walk& walk) {
  Py_ssize_t n = PySet_GET_SIZE(v);
  bool render = text != nullptr && depth < options_.max_render_depth;
  // Order-independent: sum and xor of the element hashes, each mixed once more.
  uint64_t sum = 0, x = 0;
  struct Element {
    std::string text;
    long long number;
    bool is_number;
    uint64_t hash;
  };
  std::vector<Element> elements;
  // Rendering sorts all elements (by value for ints, else by rendering); for big sets only
  // the smallest hashes are rendered so the prefix stays canonical and the work bounded.
  bool render_all = render && n <= 256;
  Py_ssize_t pos = 0;
  PyObject* key;
  Py_hash_t ignored;
  while (_PySet_NextEntry(v, &pos, &key, &ignored)) {
    if (walk.budget <= 0) {
      walk.partial = true;
      break;
    }
    --walk.budget;
    // Elements come in table order, which depends on addresses. A cyclic sub-result
    // memoized while walking one element (graph nodes reachable from each other) would make
    // the next element's hash depend on which came first: each element starts afresh.
    if (!value_memo_.empty()) value_memo_.clear();
    Element e;
    e.is_number = false;
    uint64_t eh;
    if (render_all) {
      eh = Visit(key, depth + 1, &e.text, walk);
      if (Py_TYPE(key) == &PyLong_Type) {
        int overflow = 0;
        e.number = PyLong_AsLongLongAndOverflow(key, &overflow);
        e.is_number = overflow == 0;
      }
    } else {
      eh = Visit(key, depth + 1, nullptr, walk);
    }
    e.hash = eh;
    uint64_t m = Mix64(eh + 0x51ed27a1);
    sum += m;
    x ^= m;
    if (render) elements.push_back(std::move(e));
  }
  uint64_t h = HashCombine(HashCombine(HashCombine(kTagSet, static_cast<uint64_t>(n)), sum), x);
  if (text && !render) {
    text->append("{").append(kEllipsis).append("}");
    AppendLength(n, text);
    walk.truncated = true;
    return h;
  }
  if (!render) return h;
  if (render_all) {
    std::sort(elements.begin(), elements.end(), [](const Element& a, const Element& b) {
      if (a.is_number && b.is_number) return a.number < b.number;
      if (a.is_number != b.is_number) return a.is_number;
      return a.text < b.text;
    });
  } else {
    std::sort(elements.begin(), elements.end(),
              [](const Element& a, const Element& b) { return a.hash < b.hash; });
  }
  if (n == 0) {
    // frozenset() already has its type name and parentheses around this.
    if (!PyFrozenSet_Check(v)) text->append("set()");
    return h;
  }
  text->append("{");
  size_t shown = 0;
  for (Element& e : elements) {
    if (shown == options_.container_prefix || TextFull(text)) break;
    if (shown > 0) text->append(", ");
    if (render_all) {
      text->append(e.text);
    } else {
      text->append("#");
      char buf[17];
      std::snprintf(buf, sizeof(buf), "%08x", static_cast<unsigned>(e.hash & 0xffffffffu));
      text->append(buf);
    }
    ++shown;
  }
  bool cut = shown < static_cast<size_t>(n);
  if (cut) text->append(", ").append(kEllipsis);
  text->append("}");
  if (cut) {
    AppendLength(n, text);
    walk.truncated = true;
  }
  return h;
}

uint64_t ValueEncoder::VisitIterable(PyObject* v, uint64_t tag, const char* open,
                                     const char* close, uint32_t depth, std::string* text,
                                     Walk& walk) {
  // Only called for C containers whose iterators run no Python code (deque, dict views).
  Py_ssize_t n = PyObject_Length(v);
  if (n < 0) {
    PyErr_Clear();
    n = 0;
  }
  uint64_t h = HashCombine(tag, static_cast<uint64_t>(n));
  bool render = text != nullptr && depth < options_.max_render_depth;
  if (text && !render) {
    text->append(open).append(kEllipsis).append(close);
    AppendLength(n, text);
    walk.truncated = true;
  }
  if (render) text->append(open);
  PyObject* it = PyObject_GetIter(v);
  if (it == nullptr) {
    PyErr_Clear();
    if (render) text->append(close);
    return h;
  }
  Py_ssize_t i = 0;
  PyObject* item;
  while ((item = PyIter_Next(it)) != nullptr) {
    if (walk.budget <= 0) {
      walk.partial = true;
      Py_DECREF(item);
      break;
    }
    --walk.budget;
    bool show = render && static_cast<uint32_t>(i) < options_.container_prefix && !TextFull(text);
    if (!show && walk.render_only) {
      Py_DECREF(item);
      break;
    }
    if (show && i > 0) text->append(", ");
    h = HashCombine(h, Visit(item, depth + 1, show ? text : nullptr, walk));
    Py_DECREF(item);
    ++i;
  }
  PyErr_Clear();
  Py_DECREF(it);
  if (render) {
    bool cut = static_cast<uint32_t>(n) > options_.container_prefix || TextFull(text);
    if (cut && n > 0) text->append(", ").append(kEllipsis);
    text->append(close);
    if (cut) {
      AppendLength(n, text);
      walk.truncated = true;
    }
  }
  return h;
}

uint64_t ValueEncoder::VisitInstance(PyObject* v, uint32_t depth, std::string* text,
                                     Walk& walk) {
  // Instances of classes written in Python: type name + attribute storage, read straight
  // from the instance dict and the __slots__ members, never through __getattribute__.
  PyTypeObject* type = Py_TYPE(v);
  const TypeInfo& info = InfoFor(type);
  const std::string& name = info.name;
  uint64_t h = info.hash;
  PyObject** dict_ptr = _PyObject_GetDictPtr(v);
  PyObject* dict = dict_ptr != nullptr ? *dict_ptr : nullptr;
  if (IsEnumMember(v)) {
    PyObject* member = BorrowedDictItem(dict, "_name_");
    if (text) text->append(name).push_back('.');
    if (member != nullptr && PyUnicode_Check(member)) {
      if (text) AppendUtf8(member, text);
      return HashCombine(HashCombine(h, kTagEnum), HashPyString(member, kTagStr));
    }
    return h;
  }
  if (std::find(walk.stack.begin(), walk.stack.end(), v) != walk.stack.end()) {
    if (text) text->append("<cycle>");
    ++walk.cycles;
    return HashCombine(h, kTagCycle);
  }
  if (depth >= options_.max_hash_depth) {
    walk.partial = true;
    if (text) text->append(name).append("(").append(kEllipsis).append(")");
    return h;
  }
  bool render = text != nullptr && depth < options_.max_render_depth;
  if (text) text->append(name).push_back('(');
  if (text && !render) {
    text->append(kEllipsis);
    walk.truncated = true;
  }
  walk.stack.push_back(v);
  uint32_t shown = 0;
  auto field = [&](PyObject* key, PyObject* value) {
    if (walk.budget <= 0) {
      walk.partial = true;
      return;
    }
    --walk.budget;
    bool show = render && shown < options_.container_prefix && !TextFull(text);
    if (render && !show && shown == options_.container_prefix) {
      text->append(", ").append(kEllipsis);
      walk.truncated = true;
    }
    if (show) {
      if (shown > 0) text->append(", ");
      AppendUtf8(key, text);
      text->push_back('=');
    }
    if (render) ++shown;
    h = HashCombine(h, PyUnicode_Check(key) ? HashPyString(key, kTagStr) : 0);
    h = HashCombine(h, Visit(value, depth + 1, show ? text : nullptr, walk));
  };
  if (dict != nullptr && PyDict_Check(dict)) {
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
      if (PyUnicode_Check(key)) field(key, value);
    }
  }
  // __slots__: object-typed members of every heap type in the MRO, base classes first.
  PyObject* mro = type->tp_mro;
  if (mro != nullptr && PyTuple_Check(mro)) {
    for (Py_ssize_t k = PyTuple_GET_SIZE(mro) - 1; k >= 0; --k) {
      auto* t = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, k));
      if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE) || t->tp_members == nullptr) continue;
      for (PyMemberDef* m = t->tp_members; m->name != nullptr; ++m) {
        if (m->type != T_OBJECT_EX || (m->flags & READONLY)) continue;
        if (std::strcmp(m->name, "__weakref__") == 0 || std::strcmp(m->name, "__dict__") == 0)
          continue;
        PyObject* value = *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(v) + m->offset);
        if (value == nullptr) continue;
        PyObject* key = PyUnicode_FromString(m->name);
        if (key == nullptr) {
          PyErr_Clear();
          continue;
        }
        field(key, value);
        Py_DECREF(key);
      }
    }
  }
  walk.stack.pop_back();
  if (text) text->push_back(')');
  return h;
}

uint64_t ValueEncoder::VisitRepr(PyObject* v, std::string* text, Walk& walk) {
  std::string name = TypeName(Py_TYPE(v));
  uint64_t h = HashBytes(name.data(), name.size(), kTagRepr);
  PyObject* repr = PyObject_Repr(v);
  if (repr == nullptr) {
    PyErr_Clear();
    if (text) text->append("<").append(name).append(">");
    return h;
  }
  std::string s;
  AppendUtf8(repr, &s);
  Py_DECREF(repr);
  s = StripAddresses(std::move(s));
  h = HashBytes(s.data(), s.size(), h);
  if (text) text->append(s);
  return h;
}

}  // namespace egca::tracer::hook
