// Regex pre-tokenization (HF `Split` with behavior "Isolated") over UTF-8 text with PCRE2
// in UTF + UCP mode, JIT-compiled. Private to trainer/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "egca/core/status.h"

namespace egca::trainer {

// A piece of text by byte range.
struct Piece {
  uint32_t begin;
  uint32_t end;
};

class RegexSplitter {
 public:
  // `pattern` is an HF/Oniguruma regex (or a literal when `literal`). Errors name the
  // PCRE2 message and offset.
  static StatusOr<std::unique_ptr<RegexSplitter>> Compile(const std::string& pattern,
                                                          bool literal);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // Splits text[piece] into matches and the gaps between them ("Isolated": both kept),
  // appending non-empty pieces in order; together they cover `piece` exactly. Invalid
  // UTF-8 bytes never match and so end up in gaps.
  void Split(std::string_view text, Piece piece, std::vector<Piece>* out) const;

 private:
  RegexSplitter() = default;
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace egca::trainer
