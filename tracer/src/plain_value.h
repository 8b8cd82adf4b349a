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

// How numbers compare in ValuesEqual: two floats (or two complexes' parts) within
// |a - b| <= abs + rel * |b| are equal; every other pair of numbers compares as Python's
// == does, exactly. apps_allclose (APPS's np.allclose leniency, off by default): any two
// numbers that are not bools compare with the tolerance, ints included.
struct NumberRule {
  double rel = 0;
  double abs = 0;
  bool apps_allclose = false;
};

// Python's == on the two decoded values, except for the float tolerance of `rule` (zero
// tolerance: exactly Python's ==): True == 1 == 1.0 and -0.0 == 0, big ints exact (also
// against floats), NaN equal to nothing (values decoded apart are distinct objects); a
// list equals only a list, a tuple only a tuple, a set or frozenset only a set or
// frozenset with the same elements (by hash equality, floats exactly); dicts by key
// (value and type as Python hashes them: "1" is not 1) and value.
// Tested against /usr/bin/python3 on a generated corpus (tests/tracer/plain_value_test.cpp).
bool ValuesEqual(const PlainValue& a, const PlainValue& b, const NumberRule& rule);

// A call test's returned value against the expected JSON value: ValuesEqual after the
// conventions a tests file needs (APPS's): JSON has no tuples, so a returned tuple is
// compared as a list (at any depth outside dict keys and sets); an expected dict whose
// keys are all ints in text also matches with int keys ({int(k): v}); an expected
// one-element list also matches its element; an expected string that is itself JSON
// matches its decoded value.
bool ReturnedValueMatches(const PlainValue& actual, const PlainValue& expected, double rel,
                          double abs_tolerance, bool apps_allclose = false);

// APPS standard-input comparison, strictest first: "exact"; "lines" (lines stripped, blank
// lines dropped); "tokens" (whitespace-separated); "float_tokens" (tokens that are numbers:
// two integers exactly, an integer and a float as Python's ==, two floats with the
// tolerance; apps_allclose: every number token with the tolerance, as APPS's
// np.allclose). The rule that matched, or nullptr.
const char* StdoutMatches(std::string_view actual, std::string_view expected, double rel,
                          double abs_tolerance, bool apps_allclose = false);

// `text` cut to at most `limit` bytes without splitting a UTF-8 character, "..." appended
// when cut (the harness's _bounded).
std::string BoundedText(std::string_view text, size_t limit);

}  // namespace egca::tracer
