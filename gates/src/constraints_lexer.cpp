#include "constraints_lexer.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace egca::gates::internal {
namespace {

// f-strings nested deeper than this are scanned as plain strings (CPython 3.11 allows only
// a few levels, since a nested string must change its quote character).
constexpr int kMaxFieldNesting = 8;

bool IsIdentStart(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}
bool IsIdentChar(unsigned char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }
bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }

// A string prefix ("r", "b", "f", "u", "rb", "Rb", "fr", ...) in front of a quote.
bool IsStringPrefix(std::string_view s) {
  if (s.empty() || s.size() > 2) return false;
  bool r = false, b = false, f = false, u = false;
  for (char c : s) {
    switch (c) {
      case 'r':
      case 'R':
        if (r) return false;
        r = true;
        break;
      case 'b':
      case 'B':
        if (b) return false;
        b = true;
        break;
      case 'f':
      case 'F':
        if (f) return false;
        f = true;
        break;
      case 'u':
      case 'U':
        if (u) return false;
        u = true;
        break;
      default:
        return false;
    }
  }
  if (u && s.size() > 1) return false;  // "u" combines with nothing
  if (b && f) return false;
  return true;
}

class Scanner {
 public:
  explicit Scanner(std::string_view source) : src_(source) {}

  std::vector<TokenStream> Run() {
    streams_.emplace_back();
    ScanInto(0, static_cast<uint32_t>(src_.size()), 0, 0);
    return std::move(streams_);
  }

 private:
  // Tokens of [begin, end) appended to streams_[stream].
  void ScanInto(uint32_t begin, uint32_t end, size_t stream, int nesting) {
    uint32_t i = begin;
    while (i < end) {
      unsigned char c = static_cast<unsigned char>(src_[i]);
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\\') {
        ++i;  // a backslash outside a string is a line continuation
      } else if (c == '#') {
        while (i < end && src_[i] != '\n') ++i;
      } else if (c == '\'' || c == '"') {
        i = ScanString(i, i, end, stream, nesting);
      } else if (IsIdentStart(c)) {
        uint32_t j = i;
        while (j < end && IsIdentChar(static_cast<unsigned char>(src_[j]))) ++j;
        if (j < end && (src_[j] == '\'' || src_[j] == '"') &&
            IsStringPrefix(src_.substr(i, j - i))) {
          i = ScanString(i, j, end, stream, nesting);
        } else {
          Push(stream, TokenKind::kName, i, j);
          i = j;
        }
      } else if (IsDigit(c) || (c == '.' && i + 1 < end && IsDigit(src_[i + 1]))) {
        uint32_t j = i + 1;
        while (j < end) {
          unsigned char d = static_cast<unsigned char>(src_[j]);
          if (IsIdentChar(d) || d == '.') {
            ++j;
          } else if ((d == '+' || d == '-') && (src_[j - 1] == 'e' || src_[j - 1] == 'E') &&
                     !(src_[i] == '0' && i + 1 < end &&
                       (src_[i + 1] == 'x' || src_[i + 1] == 'X'))) {
            ++j;  // exponent sign (not inside a hex literal)
          } else {
            break;
          }
        }
        Push(stream, TokenKind::kNumber, i, j);
        i = j;
      } else {
        uint32_t len = OperatorLength(i, end);
        Push(stream, TokenKind::kOp, i, i + len);
        i += len;
      }
    }
  }

  uint32_t OperatorLength(uint32_t i, uint32_t end) const {
    static constexpr std::array<std::string_view, 4> kThree = {"**=", "//=", ">>=", "<<="};
    static constexpr std::array<std::string_view, 18> kTwo = {
        "**", "//", ">>", "<<", "<=", ">=", "==", "!=", ":=",
        "->", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="};
    std::string_view rest = src_.substr(i, std::min<uint32_t>(3, end - i));
    for (std::string_view op : kThree)
      if (rest.substr(0, 3) == op) return 3;
    for (std::string_view op : kTwo)
      if (rest.substr(0, 2) == op) return 2;
    if (rest.substr(0, 3) == "...") return 3;
    return 1;
  }

  // A string literal whose prefix starts at `start` and whose quote is at `quote`. Returns
  // the byte after it. f-string replacement fields become streams of their own.
  uint32_t ScanString(uint32_t start, uint32_t quote, uint32_t end, size_t stream, int nesting) {
    bool format = false;
    for (uint32_t k = start; k < quote; ++k) format |= src_[k] == 'f' || src_[k] == 'F';
    char q = src_[quote];
    bool triple = quote + 2 < end && src_[quote + 1] == q && src_[quote + 2] == q;
    uint32_t i = quote + (triple ? 3 : 1);
    while (i < end) {
      char c = src_[i];
      if (c == '\\') {
        i += 2;  // even in a raw string, a backslash keeps the next quote from closing it
        continue;
      }
      if (!triple && c == '\n') break;  // unterminated single-quoted string
      if (c == q && (!triple || (i + 2 < end && src_[i + 1] == q && src_[i + 2] == q))) {
        i += triple ? 3 : 1;
        Push(stream, TokenKind::kString, start, std::min(i, end));
        return std::min(i, end);
      }
      if (format && c == '{') {
        if (i + 1 < end && src_[i + 1] == '{') {
          i += 2;
          continue;
        }
        i = ScanField(i + 1, end, q, triple, nesting);
        continue;
      }
      ++i;
    }
    i = std::min(i, end);
    Push(stream, TokenKind::kString, start, i);
    return i;
  }

  // One replacement field of an f-string, starting after its "{". Returns the byte after
  // its closing "}" (or where the string ends if it is malformed).
  uint32_t ScanField(uint32_t begin, uint32_t end, char q, bool triple, int nesting) {
    // Find the end of the expression: "}", "!" (conversion) or ":" (format spec) at
    // bracket depth 0, skipping nested strings.
    uint32_t i = begin;
    int depth = 0;
    while (i < end) {
      char c = src_[i];
      if (c == q && !triple) break;  // the enclosing string ends: malformed field
      if (c == '\'' || c == '"') {
        i = SkipString(i, end);
        continue;
      }
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') {
        if (depth == 0) break;
        --depth;
      }
      if (depth == 0 && c == '!' && !(i + 1 < end && src_[i + 1] == '=')) break;
      if (depth == 0 && c == ':') break;
      if (c == '\n' && !triple) break;
      ++i;
    }
    if (nesting < kMaxFieldNesting) {
      size_t field = streams_.size();
      streams_.emplace_back();
      ScanInto(begin, i, field, nesting + 1);
    }
    // Skip the conversion / format spec to the closing "}"; a nested field in the spec
    // ("{x:>{width}}") is an expression of its own.
    while (i < end) {
      char c = src_[i];
      if (c == q && !triple) return i;
      if (c == '}') return i + 1;
      if (c == '{' && nesting < kMaxFieldNesting) {
        i = ScanField(i + 1, end, q, triple, nesting + 1);
        continue;
      }
      ++i;
    }
    return i;
  }

  // A string (its prefix already passed) inside an f-string field: returns the byte after it.
  uint32_t SkipString(uint32_t quote, uint32_t end) const {
    char q = src_[quote];
    bool triple = quote + 2 < end && src_[quote + 1] == q && src_[quote + 2] == q;
    uint32_t i = quote + (triple ? 3 : 1);
    while (i < end) {
      if (src_[i] == '\\') {
        i += 2;
        continue;
      }
      if (src_[i] == q && (!triple || (i + 2 < end && src_[i + 1] == q && src_[i + 2] == q)))
        return i + (triple ? 3 : 1);
      ++i;
    }
    return end;
  }

  void Push(size_t stream, TokenKind kind, uint32_t begin, uint32_t end) {
    Token t;
    t.kind = kind;
    t.begin = begin;
    t.end = end;
    streams_[stream].tokens.push_back(t);
  }

  std::string_view src_;
  std::vector<TokenStream> streams_;
};

}  // namespace

std::vector<TokenStream> ScanPython(std::string_view source) {
  std::vector<TokenStream> streams = Scanner(source).Run();
  for (TokenStream& s : streams) {
    std::vector<int32_t> open;
    for (int32_t i = 0; i < static_cast<int32_t>(s.tokens.size()); ++i) {
      Token& t = s.tokens[i];
      if (t.kind != TokenKind::kOp || t.end - t.begin != 1) continue;
      char c = source[t.begin];
      if (c == '(' || c == '[' || c == '{') {
        open.push_back(i);
      } else if (c == ')' || c == ']' || c == '}') {
        char want = c == ')' ? '(' : c == ']' ? '[' : '{';
        // Unbalanced input (a candidate that does not parse is not analysed, but be safe):
        // close only a matching opener.
        if (!open.empty() && source[s.tokens[open.back()].begin] == want) {
          s.tokens[open.back()].match = i;
          t.match = open.back();
          open.pop_back();
        }
      }
    }
  }
  return streams;
}

bool IsPythonKeyword(std::string_view name) {
  static constexpr std::array<std::string_view, 35> kKeywords = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  return std::find(kKeywords.begin(), kKeywords.end(), name) != kKeywords.end();
}

}  // namespace egca::gates::internal
