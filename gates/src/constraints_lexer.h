// A Python token scanner for the constraint facts. Private to gates/.
//
// Why not the tree-sitter tree: tree-sitter is private to cfg/ (one module owns each heavy
// dependency), and the CFG already gives the structure (scopes, loops, statements with
// spans). What the facts still need is names and brackets inside statements (calls,
// displays, imports), which a token scan over the source gives exactly: strings, comments
// and f-string literal text are skipped, so a `sorted(` inside a string is not a call.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace egca::gates::internal {

enum class TokenKind : uint8_t { kName, kNumber, kString, kOp };

struct Token {
  TokenKind kind = TokenKind::kOp;
  uint32_t begin = 0;  // byte offsets into the scanned source
  uint32_t end = 0;
  int32_t match = -1;  // brackets: index of the matching bracket in the same stream
};

// One run of tokens with balanced-bracket matching: the program itself, or the expression
// of one f-string replacement field (kept apart so that a field's tokens never join the
// surrounding code's token sequence).
struct TokenStream {
  std::vector<Token> tokens;
};

// Scans `source` into the main stream (first) and one stream per f-string replacement
// field. Never fails: unterminated strings run to the end, unbalanced brackets keep
// match = -1.
std::vector<TokenStream> ScanPython(std::string_view source);

inline std::string_view TokenText(std::string_view source, const Token& t) {
  return source.substr(t.begin, t.end - t.begin);
}

bool IsPythonKeyword(std::string_view name);

}  // namespace egca::gates::internal
