#include "plain_value.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <utility>

namespace egca::tracer {

bool HashKey(const PlainValue& v, bool freeze, std::string* out);

namespace {

using Type = PlainValue::Type;

// ---- Decoding ------------------------------------------------------------------------------

class Decoder {
 public:
  explicit Decoder(std::string_view bytes) : bytes_(bytes) {}

  bool Value(PlainValue* out, int depth) {
    if (depth > kMaxPlainDepth) return Fail("nested deeper than the limit");
    uint8_t tag = 0;
    if (!Byte(&tag)) return false;
    switch (tag) {
      case 'N':
        out->type = Type::kNone;
        return true;
      case 'T':
      case 'F':
        out->type = Type::kBool;
        out->boolean = tag == 'T';
        return true;
      case 'i': {
        uint64_t raw = 0;
        if (!Fixed(&raw)) return false;
        out->type = Type::kInt;
        out->integer = static_cast<int64_t>(raw);
        return true;
      }
      case 'I':
        return BigInt(out);
      case 'f': {
        uint64_t raw = 0;
        if (!Fixed(&raw)) return false;
        out->type = Type::kFloat;
        std::memcpy(&out->real, &raw, sizeof(double));
        return true;
      }
      case 'c': {
        uint64_t re = 0, im = 0;
        if (!Fixed(&re) || !Fixed(&im)) return false;
        out->type = Type::kComplex;
        std::memcpy(&out->real, &re, sizeof(double));
        std::memcpy(&out->imag, &im, sizeof(double));
        return true;
      }
      case 's':
      case 'b': {
        uint32_t size = 0;
        if (!Count(&size, 1)) return false;
        out->type = tag == 's' ? Type::kStr : Type::kBytes;
        out->text.assign(bytes_.substr(pos_, size));
        pos_ += size;
        return true;
      }
      case 'l':
      case 't':
      case 'S':
      case 'z':
      case 'd': {
        const bool dict = tag == 'd';
        uint32_t count = 0;
        // Every value takes at least one byte: a count beyond the bytes left is a lie.
        if (!Count(&count, dict ? 2 : 1)) return false;
        out->type = tag == 'l'   ? Type::kList
                    : tag == 't' ? Type::kTuple
                    : tag == 'S' ? Type::kSet
                    : tag == 'z' ? Type::kFrozenSet
                                 : Type::kDict;
        const size_t n = dict ? 2 * static_cast<size_t>(count) : count;
        out->items.resize(n);
        for (size_t i = 0; i < n; ++i) {
          if (!Value(&out->items[i], depth + 1)) return false;
        }
        return true;
      }
      default:
        return Fail("unknown tag");
    }
  }

  bool done() const { return pos_ == bytes_.size(); }
  const std::string& error() const { return error_; }

 private:
  bool Fail(const char* why) {
    if (error_.empty()) error_ = std::string(why) + " at byte " + std::to_string(pos_);
    return false;
  }
  bool Byte(uint8_t* out) {
    if (pos_ >= bytes_.size()) return Fail("truncated");
    *out = static_cast<uint8_t>(bytes_[pos_++]);
    return true;
  }
  bool Fixed(uint64_t* out) {
    if (bytes_.size() - pos_ < 8) return Fail("truncated");
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(bytes_[pos_ + i])) << (8 * i);
    pos_ += 8;
    *out = v;
    return true;
  }
  // A u32 count of units of at least `unit` bytes each, checked against what is left.
  bool Count(uint32_t* out, size_t unit) {
    if (bytes_.size() - pos_ < 4) return Fail("truncated");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(bytes_[pos_ + i])) << (8 * i);
    pos_ += 4;
    if (static_cast<uint64_t>(v) * unit > bytes_.size() - pos_) return Fail("count past the end");
    *out = v;
    return true;
  }
  bool BigInt(PlainValue* out) {
    uint32_t size = 0;
    if (!Count(&size, 1)) return false;
    std::string_view digits = bytes_.substr(pos_, size);
    pos_ += size;
    const bool negative = !digits.empty() && digits[0] == '-';
    if (negative) digits.remove_prefix(1);
    if (digits.empty()) return Fail("empty integer");
    for (char c : digits) {
      if (c < '0' || c > '9') return Fail("not a decimal integer");
    }
    while (digits.size() > 1 && digits[0] == '0') digits.remove_prefix(1);
    // Canonical form: a value that fits int64 is kInt, whatever tag it came with.
    int64_t small = 0;
    std::string text = (negative ? "-" : "") + std::string(digits);
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), small);
    if (ec == std::errc() && end == text.data() + text.size()) {
      out->type = Type::kInt;
      out->integer = small;
      return true;
    }
    out->type = Type::kBigInt;
    out->text = text == "-0" ? "0" : text;
    return true;
  }

  std::string_view bytes_;
  size_t pos_ = 0;
  std::string error_;
};

// ---- JSON (json.loads' dialect) ----------------------------------------------------------

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}

  bool Parse(PlainValue* out) {
    SkipSpace();
    if (!Value(out, 0)) return false;
    SkipSpace();
    return pos_ == s_.size();
  }

 private:
  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  bool Value(PlainValue* out, int depth) {
    if (depth > kMaxPlainDepth || pos_ >= s_.size()) return false;
    const char c = s_[pos_];
    if (c == '{') return Object(out, depth);
    if (c == '[') return Array(out, depth);
    if (c == '"') {
      out->type = Type::kStr;
      return String(&out->text);
    }
    if (Literal("null")) {
      out->type = Type::kNone;
      return true;
    }
    if (Literal("true") || Literal("false")) {
      out->type = Type::kBool;
      out->boolean = c == 't';
      return true;
    }
    if (Literal("NaN")) {
      out->type = Type::kFloat;
      out->real = std::numeric_limits<double>::quiet_NaN();
      return true;
    }
    if (Literal("Infinity") || Literal("-Infinity")) {
      out->type = Type::kFloat;
      out->real = c == '-' ? -HUGE_VAL : HUGE_VAL;
      return true;
    }
    return Number(out);
  }
  bool Number(PlainValue* out) {
    const size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    if (pos_ >= s_.size()) return false;
    if (s_[pos_] == '0') {
      ++pos_;
    } else if (s_[pos_] >= '1' && s_[pos_] <= '9') {
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    } else {
      return false;
    }
    bool is_float = false;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      const size_t dot = ++pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ == dot) return false;
      is_float = true;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      const size_t digits = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ == digits) return false;
      is_float = true;
    }
    std::string text(s_.substr(start, pos_ - start));
    if (is_float) {
      out->type = Type::kFloat;
      out->real = std::strtod(text.c_str(), nullptr);
      return true;
    }
    int64_t small = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), small);
    if (ec == std::errc() && end == text.data() + text.size()) {
      out->type = Type::kInt;
      out->integer = small;
    } else {
      out->type = Type::kBigInt;
      out->text = text;
    }
    return true;
  }
  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  bool Hex4(uint32_t* out) {
    if (s_.size() - pos_ < 4) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return false;
      }
    }
    *out = v;
    return true;
  }
  bool String(std::string* out) {
    ++pos_;  // the opening quote
    out->clear();
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;  // json.loads is strict
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) return false;
      const char e = s_[pos_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(pos_, 2) == "\\u") {
            const size_t save = pos_;
            pos_ += 2;
            uint32_t low = 0;
            if (Hex4(&low) && low >= 0xDC00 && low < 0xE000) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            } else {
              pos_ = save;
            }
          }
          AppendUtf8(cp, out);  // a lone surrogate is kept as its 3-byte form
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }
  bool Array(PlainValue* out, int depth) {
    ++pos_;
    out->type = Type::kList;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return true;
    }
    for (;;) {
      SkipSpace();
      out->items.emplace_back();
      if (!Value(&out->items.back(), depth + 1)) return false;
      SkipSpace();
      if (pos_ >= s_.size()) return false;
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return false;
    }
  }
  bool Object(PlainValue* out, int depth) {
    ++pos_;
    out->type = Type::kDict;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return true;
    }
    for (;;) {
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') return false;
      PlainValue key;
      key.type = Type::kStr;
      if (!String(&key.text)) return false;
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ':') return false;
      ++pos_;
      SkipSpace();
      PlainValue value;
      if (!Value(&value, depth + 1)) return false;
      // A later duplicate key replaces the earlier value, in the earlier position.
      bool replaced = false;
      for (size_t i = 0; i < out->items.size(); i += 2) {
        if (out->items[i].text == key.text) {
          out->items[i + 1] = std::move(value);
          replaced = true;
          break;
        }
      }
      if (!replaced) {
        out->items.push_back(std::move(key));
        out->items.push_back(std::move(value));
      }
      SkipSpace();
      if (pos_ >= s_.size()) return false;
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return false;
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

// ---- repr -----------------------------------------------------------------------------------

// Python's float repr ('r' format): the shortest digits that round-trip, positional for
// decimal exponents -4..15, else d.ddde+XX; `dot_zero` adds ".0" to an integral value.
std::string FloatRepr(double d, bool dot_zero = true) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  if (ec != std::errc()) return "nan";
  std::string sci(buf, end);
  std::string sign;
  if (!sci.empty() && sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exponent = std::atoi(sci.c_str() + e + 1);
  if (exponent < -4 || exponent >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof(exp), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp;
  }
  if (exponent < 0) return sign + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  const size_t int_digits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= int_digits) {
    return sign + digits + std::string(int_digits - digits.size(), '0') + (dot_zero ? ".0" : "");
  }
  return sign + digits.substr(0, int_digits) + "." + digits.substr(int_digits);
}

// Code point at s[i] (UTF-8) and its length; invalid bytes are returned one at a time
// as themselves with length 1 and *valid = false.
uint32_t CodePointAt(std::string_view s, size_t i, size_t* len, bool* valid) {
  const auto b = static_cast<unsigned char>(s[i]);
  *valid = true;
  size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    *len = 1;
    *valid = false;
    return b;
  }
  uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) {
      *len = 1;
      *valid = false;
      return b;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  *len = n;
  return cp;
}

// Python's str.isprintable() for the characters solutions meet; others are taken as
// printable (display only).
bool Printable(uint32_t cp) {
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) return false;
  if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
      (cp >= 0x205F && cp <= 0x2064) || cp == 0x3000 || cp == 0xFEFF) {
    return false;
  }
  return !(cp >= 0xD800 && cp < 0xE000);
}

void QuotedRepr(std::string_view s, bool bytes, std::string* out) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  if (bytes) out->push_back('b');
  out->push_back(quote);
  char hex[16];
  for (size_t i = 0; i < s.size();) {
    size_t len = 1;
    bool valid = true;
    uint32_t cp = bytes ? static_cast<unsigned char>(s[i]) : CodePointAt(s, i, &len, &valid);
    if (cp == '\\' || cp == static_cast<unsigned char>(quote)) {
      out->push_back('\\');
      out->push_back(static_cast<char>(cp));
    } else if (cp == '\n') {
      *out += "\\n";
    } else if (cp == '\r') {
      *out += "\\r";
    } else if (cp == '\t') {
      *out += "\\t";
    } else if (bytes ? (cp < 0x20 || cp >= 0x7F) : (!valid || !Printable(cp))) {
      if (cp < 0x100) {
        std::snprintf(hex, sizeof(hex), "\\x%02x", cp);
      } else if (cp < 0x10000) {
        std::snprintf(hex, sizeof(hex), "\\u%04x", cp);
      } else {
        std::snprintf(hex, sizeof(hex), "\\U%08x", cp);
      }
      *out += hex;
    } else {
      out->append(s.substr(i, len));
    }
    i += len;
  }
  out->push_back(quote);
}

void Repr(const PlainValue& v, size_t budget, std::string* out) {
  if (out->size() > budget) return;
  switch (v.type) {
    case Type::kNone:
      *out += "None";
      return;
    case Type::kBool:
      *out += v.boolean ? "True" : "False";
      return;
    case Type::kInt:
      *out += std::to_string(v.integer);
      return;
    case Type::kBigInt:
      *out += v.text;
      return;
    case Type::kFloat:
      *out += FloatRepr(v.real);
      return;
    case Type::kComplex: {
      std::string imag = FloatRepr(v.imag, false) + "j";
      if (v.real == 0 && !std::signbit(v.real)) {
        *out += imag;
        return;
      }
      const bool plus = !std::signbit(v.imag) || std::isnan(v.imag);
      *out += "(" + FloatRepr(v.real, false) + (plus ? "+" : "") + imag + ")";
      return;
    }
    case Type::kStr:
    case Type::kBytes:
      QuotedRepr(v.text, v.type == Type::kBytes, out);
      return;
    case Type::kList:
    case Type::kTuple:
    case Type::kSet:
    case Type::kFrozenSet: {
      if (v.type == Type::kSet && v.items.empty()) {
        *out += "set()";
        return;
      }
      if (v.type == Type::kFrozenSet) {
        *out += "frozenset(";
        if (v.items.empty()) {
          *out += ")";
          return;
        }
      }
      const char* brackets = v.type == Type::kList ? "[]" : v.type == Type::kTuple ? "()" : "{}";
      out->push_back(brackets[0]);
      for (size_t i = 0; i < v.items.size() && out->size() <= budget; ++i) {
        if (i > 0) *out += ", ";
        Repr(v.items[i], budget, out);
      }
      if (v.type == Type::kTuple && v.items.size() == 1) out->push_back(',');
      out->push_back(brackets[1]);
      if (v.type == Type::kFrozenSet) out->push_back(')');
      return;
    }
    case Type::kDict:
      out->push_back('{');
      for (size_t i = 0; i + 1 < v.items.size() && out->size() <= budget; i += 2) {
        if (i > 0) *out += ", ";
        Repr(v.items[i], budget, out);
        *out += ": ";
        Repr(v.items[i + 1], budget, out);
      }
      out->push_back('}');
      return;
  }
}

// ---- Comparison ---------------------------------------------------------------------------

double ToDouble(const PlainValue& v) {
  if (v.type == Type::kInt) return static_cast<double>(v.integer);
  if (v.type == Type::kBigInt) return std::strtod(v.text.c_str(), nullptr);
  if (v.type == Type::kBool) return v.boolean ? 1 : 0;
  return v.real;
}

// APPS's np.allclose on two numbers (the lenient option): NaN equals NaN, as before.
bool AllClose(double a, double b, double rel, double abs_tolerance) {
  if (!(std::isfinite(a) && std::isfinite(b))) return a == b || (std::isnan(a) && std::isnan(b));
  return std::fabs(a - b) <= abs_tolerance + rel * std::fabs(b);
}

// Two floats: equal as Python says, or within the tolerance (NaN equals nothing).
bool FloatsClose(double a, double b, double rel, double abs_tolerance) {
  if (a == b) return true;
  if (!(std::isfinite(a) && std::isfinite(b))) return false;
  return std::fabs(a - b) <= abs_tolerance + rel * std::fabs(b);
}

// The exact decimal digits of an integer-valued value (bool, int, big int), "-" signed.
std::string IntegerText(const PlainValue& v) {
  if (v.type == Type::kBool) return v.boolean ? "1" : "0";
  if (v.type == Type::kInt) return std::to_string(v.integer);
  return v.text;
}

// Python's int == float: exact (the float must be integral and have the same value).
bool IntegerEqualsDouble(const PlainValue& i, double d) {
  if (!std::isfinite(d) || d != std::floor(d)) return false;
  if (i.type != Type::kBigInt && std::fabs(d) < 9.0e15) {
    return static_cast<double>(i.type == Type::kBool ? i.boolean : i.integer) == d &&
           (i.type == Type::kBool ? (i.boolean ? 1 : 0) : i.integer) == static_cast<int64_t>(d);
  }
  char buf[400];
  std::snprintf(buf, sizeof(buf), "%.0f", d);  // exact for an integral double
  std::string text = buf;
  if (text == "-0") text = "0";
  return text == IntegerText(i);
}

bool IsIntegral(const PlainValue& v) {
  return v.type == Type::kBool || v.type == Type::kInt || v.type == Type::kBigInt;
}

bool IsNumeric(const PlainValue& v) {
  return IsIntegral(v) || v.type == Type::kFloat || v.type == Type::kComplex;
}

// Python's == on two numbers (bool, int, big int, float, complex), with the float rule.
bool NumbersEqual(const PlainValue& a, const PlainValue& b, const NumberRule& rule) {
  if (rule.apps_allclose && a.type != Type::kBool && b.type != Type::kBool &&
      a.type != Type::kComplex && b.type != Type::kComplex) {
    if (IsIntegral(a) && IsIntegral(b) && IntegerText(a) == IntegerText(b)) return true;
    return AllClose(ToDouble(a), ToDouble(b), rule.rel, rule.abs);
  }
  if (IsIntegral(a) && IsIntegral(b)) return IntegerText(a) == IntegerText(b);
  if (a.type == Type::kComplex || b.type == Type::kComplex) {
    const double ai = a.type == Type::kComplex ? a.imag : 0;
    const double bi = b.type == Type::kComplex ? b.imag : 0;
    PlainValue ar = a, br = b;
    if (a.type == Type::kComplex) ar.type = Type::kFloat;
    if (b.type == Type::kComplex) br.type = Type::kFloat;
    if (a.type == Type::kComplex && b.type == Type::kComplex) {
      return FloatsClose(a.real, b.real, rule.rel, rule.abs) &&
             FloatsClose(ai, bi, rule.rel, rule.abs);
    }
    return ai == 0 && bi == 0 && NumbersEqual(ar, br, NumberRule{0, 0, false});
  }
  if (a.type == Type::kFloat && b.type == Type::kFloat) {
    return FloatsClose(a.real, b.real, rule.rel, rule.abs);
  }
  // An integer and a float: exact, as Python compares them.
  return a.type == Type::kFloat ? IntegerEqualsDouble(b, a.real) : IntegerEqualsDouble(a, b.real);
}

bool Equal(const PlainValue& a, const PlainValue& b, const NumberRule& rule, int depth);

// A dict's entries by key, as Python's dict would hold them (a later duplicate wins);
// false when a key is unhashable.
bool KeyedEntries(const PlainValue& d, std::map<std::string, const PlainValue*>* out) {
  std::string key;
  for (size_t i = 0; i + 1 < d.items.size(); i += 2) {
    if (!HashKey(d.items[i], false, &key)) return false;
    (*out)[key] = &d.items[i + 1];
  }
  return true;
}

bool Equal(const PlainValue& a, const PlainValue& b, const NumberRule& rule, int depth) {
  if (depth > kMaxPlainDepth + 1) return false;
  if (IsNumeric(a) || IsNumeric(b)) return IsNumeric(a) && IsNumeric(b) && NumbersEqual(a, b, rule);
  if (a.is_set() && b.is_set()) {
    // Python's set == frozenset: the same elements, by hash equality (floats exactly).
    std::set<std::string> ak, bk;
    std::string key;
    for (const PlainValue& x : a.items) {
      if (!HashKey(x, false, &key)) return false;
      ak.insert(key);
    }
    for (const PlainValue& x : b.items) {
      if (!HashKey(x, false, &key)) return false;
      bk.insert(key);
    }
    return ak == bk;
  }
  if (a.type != b.type) return false;  // a list is not a tuple, a set or a dict
  switch (a.type) {
    case Type::kNone:
      return true;
    case Type::kStr:
    case Type::kBytes:
      return a.text == b.text;
    case Type::kList:
    case Type::kTuple:
      if (a.items.size() != b.items.size()) return false;
      for (size_t i = 0; i < a.items.size(); ++i) {
        if (!Equal(a.items[i], b.items[i], rule, depth + 1)) return false;
      }
      return true;
    case Type::kDict: {
      // Keys by value and type as Python hashes them (1 == 1.0 == True; "1" is not 1).
      std::map<std::string, const PlainValue*> ae, be;
      if (!KeyedEntries(a, &ae) || !KeyedEntries(b, &be) || ae.size() != be.size()) return false;
      for (const auto& [key, value] : ae) {
        auto it = be.find(key);
        if (it == be.end() || !Equal(*value, *it->second, rule, depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

// JSON has no tuples: a returned tuple (at any depth, outside dict keys and sets) is
// compared as the list a tests file writes for it.
PlainValue TuplesAsLists(const PlainValue& v, int depth = 0) {
  PlainValue out = v;
  if (depth > kMaxPlainDepth + 1) return out;
  if (v.type == Type::kTuple) out.type = Type::kList;
  if (v.type == Type::kList || v.type == Type::kTuple) {
    for (PlainValue& x : out.items) x = TuplesAsLists(x, depth + 1);
  } else if (v.type == Type::kDict) {
    for (size_t i = 1; i < out.items.size(); i += 2) {
      out.items[i] = TuplesAsLists(v.items[i], depth + 1);
    }
  }
  return out;
}

// Python's int(text) for a JSON object key ("12", " -3 ", "1_000"), as APPS converts the
// keys of an expected dict.
bool IntKey(const std::string& text, PlainValue* out) {
  size_t b = 0, e = text.size();
  while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
  std::string digits;
  size_t i = b;
  bool negative = false;
  if (i < e && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  bool last_digit = false;
  for (; i < e; ++i) {
    const char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits.push_back(c);
      last_digit = true;
    } else if (c == '_' && last_digit && i + 1 < e &&
               std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      last_digit = false;
    } else {
      return false;
    }
  }
  if (digits.empty()) return false;
  size_t nz = digits.find_first_not_of('0');
  digits = nz == std::string::npos ? "0" : digits.substr(nz);
  const std::string signed_digits = (negative && digits != "0" ? "-" : "") + digits;
  *out = PlainValue();
  if (signed_digits.size() <= 18) {
    out->type = Type::kInt;
    out->integer = std::stoll(signed_digits);
  } else {
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(signed_digits.data(),
                                     signed_digits.data() + signed_digits.size(), v);
    if (ec == std::errc() && ptr == signed_digits.data() + signed_digits.size()) {
      out->type = Type::kInt;
      out->integer = v;
    } else {
      out->type = Type::kBigInt;
      out->text = signed_digits;
    }
  }
  return true;
}

// The expected dict with its keys as ints (APPS: {int(k): v}), when every key is one.
bool WithIntKeys(const PlainValue& e, PlainValue* out) {
  if (e.type != Type::kDict || e.items.empty()) return false;
  *out = e;
  for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
    if (e.items[i].type != Type::kStr || !IntKey(e.items[i].text, &out->items[i])) return false;
  }
  return true;
}

bool MatchesOne(const PlainValue& actual, const PlainValue& expected, const NumberRule& rule) {
  if (Equal(actual, expected, rule, 0)) return true;
  PlainValue int_keys;
  return WithIntKeys(expected, &int_keys) && Equal(actual, int_keys, rule, 0);
}

}  // namespace

using Type = PlainValue::Type;

// A key equal for exactly the values Python's set membership takes as equal (1 == 1.0 ==
// True, tuples by elements); false for an unhashable value (list, dict, set; with
// `freeze`, lists count as tuples, as the harness's _freeze made them).
bool HashKey(const PlainValue& v, bool freeze, std::string* out) {
  out->clear();
  switch (v.type) {
    case Type::kNone:
      *out = "N";
      return true;
    case Type::kBool:
      *out = v.boolean ? "n1" : "n0";
      return true;
    case Type::kInt:
      *out = "n" + std::to_string(v.integer);
      return true;
    case Type::kBigInt:
      *out = "n" + v.text;
      return true;
    case Type::kFloat:
    case Type::kComplex: {
      if (v.type == Type::kComplex && v.imag != 0) {
        *out = "c" + FloatRepr(v.real) + "," + FloatRepr(v.imag);
        return true;
      }
      const double d = v.real;
      if (std::isnan(d)) {
        static uint64_t unique = 0;  // NaN equals nothing, itself included
        *out = "nan" + std::to_string(++unique);
        return true;
      }
      if (std::isfinite(d) && d == std::floor(d)) {
        char buf[400];
        std::snprintf(buf, sizeof(buf), "%.0f", d);  // exact for an integral double
        *out = std::string("n") + (std::string(buf) == "-0" ? "0" : buf);
        return true;
      }
      *out = "f" + FloatRepr(d);
      return true;
    }
    case Type::kStr:
      *out = "s" + v.text;
      return true;
    case Type::kBytes:
      *out = "b" + v.text;
      return true;
    case Type::kList:
      if (!freeze) return false;
      [[fallthrough]];
    case Type::kTuple: {
      std::string all = "t" + std::to_string(v.items.size()) + "(";
      std::string key;
      for (const PlainValue& x : v.items) {
        if (!HashKey(x, freeze, &key)) return false;
        all += std::to_string(key.size()) + ":" + key;
      }
      *out = all + ")";
      return true;
    }
    case Type::kFrozenSet: {
      std::vector<std::string> keys;
      std::string key;
      for (const PlainValue& x : v.items) {
        if (!HashKey(x, false, &key)) return false;
        keys.push_back(key);
      }
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      std::string all = "z(";
      for (const std::string& k : keys) all += std::to_string(k.size()) + ":" + k;
      *out = all + ")";
      return true;
    }
    case Type::kDict:
    case Type::kSet:
      return false;
  }
  return false;
}

bool DecodePlainValue(std::string_view bytes, PlainValue* out, std::string* error) {
  Decoder decoder(bytes);
  *out = PlainValue();
  if (!decoder.Value(out, 0)) {
    *error = decoder.error();
    return false;
  }
  if (!decoder.done()) {
    *error = "trailing bytes after the value";
    return false;
  }
  return true;
}

bool ParsePythonJson(std::string_view text, PlainValue* out) {
  *out = PlainValue();
  return JsonParser(text).Parse(out);
}

std::string PythonRepr(const PlainValue& value, size_t max_bytes) {
  std::string out;
  Repr(value, max_bytes, &out);
  return out;
}

std::string BoundedText(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "...";
}

bool ValuesEqual(const PlainValue& a, const PlainValue& b, const NumberRule& rule) {
  return Equal(a, b, rule, 0);
}

bool ReturnedValueMatches(const PlainValue& returned, const PlainValue& expected, double rel,
                          double abs_tolerance, bool apps_allclose) {
  const NumberRule rule{rel, abs_tolerance, apps_allclose};
  const PlainValue actual = TuplesAsLists(returned);
  if (MatchesOne(actual, expected, rule)) return true;
  if (expected.type == Type::kList && expected.items.size() == 1 &&
      MatchesOne(actual, expected.items[0], rule)) {
    return true;
  }
  if (expected.type == Type::kStr && actual.type != Type::kStr) {
    PlainValue decoded;
    if (!ParsePythonJson(expected.text, &decoded)) return false;
    return MatchesOne(actual, decoded, rule);
  }
  if (expected.type == Type::kList && expected.items.size() == 1 &&
      expected.items[0].type == Type::kStr) {
    PlainValue decoded;
    if (!ParsePythonJson(expected.items[0].text, &decoded)) return false;
    if (decoded.type != Type::kStr) return MatchesOne(actual, decoded, rule);
  }
  return false;
}

namespace {

// Length of the whitespace character (Python's str.isspace) at s[i], or 0.
size_t SpaceAt(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b == ' ' || (b >= '\t' && b <= '\r') || (b >= 0x1C && b <= 0x1F)) return 1;
  if (b < 0x80) return 0;
  size_t len = 1;
  bool valid = true;
  const uint32_t cp = CodePointAt(s, i, &len, &valid);
  if (!valid) return 0;
  const bool space = cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
                     cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
  return space ? len : 0;
}

std::string_view Strip(std::string_view s) {
  size_t begin = 0;
  while (begin < s.size()) {
    const size_t n = SpaceAt(s, begin);
    if (n == 0) break;
    begin += n;
  }
  size_t end = s.size();
  while (end > begin) {
    // Step back over one character (at most 4 bytes of UTF-8).
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80 &&
           end - start < 4) {
      --start;
    }
    const size_t n = SpaceAt(s, start);
    if (n == 0 || start + n != end) break;
    end = start;
  }
  return s.substr(begin, end - begin);
}

std::vector<std::string_view> Tokens(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t n = SpaceAt(s, i);
    if (n > 0) {
      i += n;
      continue;
    }
    const size_t start = i;
    while (i < s.size() && SpaceAt(s, i) == 0) ++i;
    out.push_back(s.substr(start, i - start));
  }
  return out;
}

std::vector<std::string_view> NonBlankLines(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string_view::npos) end = s.size();
    std::string_view line = Strip(s.substr(start, end - start));
    if (!line.empty()) out.push_back(line);
    start = end + 1;
  }
  return out;
}

// Python's float(token) for ASCII tokens: sign, digits with single underscores between
// them, optional fraction and exponent, or inf/infinity/nan in any case.
bool PythonFloat(std::string_view t, double* out) {
  std::string clean;
  size_t i = 0;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) clean.push_back(t[i++]);
  std::string rest(t.substr(i));
  for (char& c : rest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (rest == "inf" || rest == "infinity" || rest == "nan") {
    clean += rest;
    *out = std::strtod(clean.c_str(), nullptr);
    return true;
  }
  auto digits = [&](bool required) {
    const size_t start = i;
    bool last_digit = false;
    while (i < t.size()) {
      if (std::isdigit(static_cast<unsigned char>(t[i]))) {
        clean.push_back(t[i++]);
        last_digit = true;
      } else if (t[i] == '_' && last_digit && i + 1 < t.size() &&
                 std::isdigit(static_cast<unsigned char>(t[i + 1]))) {
        ++i;
        last_digit = false;
      } else {
        break;
      }
    }
    return !required || i > start;
  };
  const size_t mantissa = i;
  digits(false);
  const bool int_part = i > mantissa;
  bool frac_part = false;
  if (i < t.size() && t[i] == '.') {
    clean.push_back(t[i++]);
    const size_t frac = i;
    digits(false);
    frac_part = i > frac;
  }
  if (!int_part && !frac_part) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    clean.push_back('e');
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) clean.push_back(t[i++]);
    if (!digits(true)) return false;
  }
  if (i != t.size()) return false;
  *out = std::strtod(clean.c_str(), nullptr);
  return true;
}

// A token in Python's int() syntax (sign, digits with single underscores between them).
bool IntToken(std::string_view t, PlainValue* out) {
  if (t.empty() || t.find_first_of(" \t\n\r\f\v") != std::string_view::npos) return false;
  return IntKey(std::string(t), out);
}

}  // namespace

const char* StdoutMatches(std::string_view actual, std::string_view expected, double rel,
                          double abs_tolerance, bool apps_allclose) {
  if (actual == expected) return "exact";
  if (NonBlankLines(actual) == NonBlankLines(expected)) return "lines";
  std::vector<std::string_view> a = Tokens(actual), e = Tokens(expected);
  if (a == e) return "tokens";
  if (a.size() != e.size()) return nullptr;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == e[i]) continue;
    double fa = 0, fe = 0;
    if (!PythonFloat(a[i], &fa) || !PythonFloat(e[i], &fe)) return nullptr;
    if (apps_allclose) {
      // APPS's np.allclose over the tokens: integers too.
      if (!AllClose(fa, fe, rel, abs_tolerance)) return nullptr;
      continue;
    }
    PlainValue ia, ie;
    const bool int_a = IntToken(a[i], &ia), int_e = IntToken(e[i], &ie);
    if (int_a && int_e) {
      if (IntegerText(ia) != IntegerText(ie)) return nullptr;  // integers: exactly
    } else if (int_a || int_e) {
      // An integer and a float: equal only as Python's int == float is.
      if (!IntegerEqualsDouble(int_a ? ia : ie, int_a ? fe : fa)) return nullptr;
    } else if (!FloatsClose(fa, fe, rel, abs_tolerance)) {
      return nullptr;  // two floats: within the tolerance
    }
  }
  return "float_tokens";
}

}  // namespace egca::tracer
