// Plain values: what a call test's returned value may be made of when it crosses from the
// candidate's process to the parent (None, bool, int, float, complex, str, bytes, list,
// tuple, dict, set, frozenset), and the parent's side of judging it.
//
// The child encodes a returned value in the canonical encoding below (EncodePlainValue in
// plain_value_encode.cpp, which reads CPython objects of exactly these types and calls no
// Python code); the parent decodes it (DecodePlainValue: every count and size checked
// against the bytes left, nesting bounded, so any byte string yields a value or an error,
// never an out-of-bounds read) and compares it with the expected value it parsed itself
// from the test's JSON (ParsePythonJson, json.loads' dialect). Nothing here needs Python.
//
// Encoding (little-endian): one tag byte, then
//   'N' None | 'T' True | 'F' False
//   'i' int64 (8 bytes) | 'I' int beyond int64: u32 length + ASCII decimal ("-" allowed)
//   'f' double (8 bytes) | 'c' complex: two doubles (real, imaginary)
//   's' str: u32 length + UTF-8 | 'b' bytes: u32 length + bytes
//   'l' list, 't' tuple, 'S' set, 'z' frozenset: u32 count + that many values
//   'd' dict: u32 count + count (key, value) pairs
// Sets and dicts keep the child's iteration order (Python's repr order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace egca::tracer {

struct PlainValue {
  enum class Type {
    kNone, kBool, kInt, kBigInt, kFloat, kComplex, kStr, kBytes,
    kList, kTuple, kDict, kSet, kFrozenSet,
  };
  Type type = Type::kNone;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;  // kFloat; kComplex: the real part
  double imag = 0;  // kComplex
  std::string text;  // kStr (UTF-8), kBytes, kBigInt (decimal digits, optional '-')
  // kList/kTuple/kSet/kFrozenSet: the elements; kDict: key0, value0, key1, value1, ...
  std::vector<PlainValue> items;

  bool is_number() const {
    return type == Type::kInt || type == Type::kBigInt || type == Type::kFloat;
  }
  bool is_sequence() const { return type == Type::kList || type == Type::kTuple; }
  bool is_set() const { return type == Type::kSet || type == Type::kFrozenSet; }
};

// Nesting the encoding and the JSON parser accept (the harness refused deeper values too).
constexpr int kMaxPlainDepth = 100;

// Decodes one value that must span all of `bytes`. False (with *error set) on anything
// malformed: an unknown tag, a count or length past the end, nesting deeper than
// kMaxPlainDepth, trailing bytes.
bool DecodePlainValue(std::string_view bytes, PlainValue* out, std::string* error);

// Parses JSON as Python's json.loads does: integers of any size, NaN, Infinity and
// -Infinity, surrounding whitespace, later duplicate keys win. False on anything else.
bool ParsePythonJson(std::string_view text, PlainValue* out);

// Python's repr() of the value (str with Python's quoting and escapes, float as the
// shortest round-trip text, "set()", "(1,)", ...). Rendering stops soon after `max_bytes`
// (the caller bounds the text; a huge value costs no more than that).
std::string PythonRepr(const PlainValue& value, size_t max_bytes = SIZE_MAX / 2);

// APPS call-based comparison: structural equality where tuples equal lists, bools equal
// only bools, numbers compare with |a - b| <= abs + rel * |b| unless both are ints, JSON
// object keys match int keys; or the expected value wrapped in a one-element list; or a
// JSON-encoded expected string.
bool ReturnedValueMatches(const PlainValue& actual, const PlainValue& expected, double rel,
                          double abs_tolerance);

// APPS standard-input comparison, strictest first: "exact"; "lines" (lines stripped, blank
// lines dropped); "tokens" (whitespace-separated); "float_tokens" (tokens that are numbers
// compared with the tolerance). The rule that matched, or nullptr.
const char* StdoutMatches(std::string_view actual, std::string_view expected, double rel,
                          double abs_tolerance);

// `text` cut to at most `limit` bytes without splitting a UTF-8 character, "..." appended
// when cut (the harness's _bounded).
std::string BoundedText(std::string_view text, size_t limit);

}  // namespace egca::tracer
