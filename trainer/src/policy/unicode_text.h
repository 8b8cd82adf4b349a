// Unicode helpers for the tokenizer: normalization with an exact map back to the
// original bytes (ICU), UTF-8 decoding, and the character classes HF uses for added-token
// flags. ICU is used instead of hand-written tables so results follow one Unicode release.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "egca/core/status.h"

namespace egca::trainer {

enum class NormalizationForm { kNFC, kNFD, kNFKC, kNFKD };

// Text after normalization plus the map from its byte positions to the original's.
// Only stretches the normalizer changed are recorded; everything else maps 1:1.
class NormalizedText {
 public:
  // Identity: `text` unchanged.
  explicit NormalizedText(std::string_view text);

  const std::string& text() const { return text_; }
  // Original byte position of normalized byte position `pos` (0 <= pos <= text().size()).
  // Inside a changed stretch, the stretch's start maps to the original start and every
  // later position maps to the original end, so a token starting at the stretch owns all
  // of it (monotone, 0 -> 0, size -> original size: ranges mapped through it still tile).
  uint32_t ToOriginal(uint32_t pos) const;

  // Applies `form` to text(), composing the position map. Invalid UTF-8 is left as is.
  Status Apply(NormalizationForm form);

 private:
  struct Change {
    uint32_t norm_begin, norm_end;  // in text_
    uint32_t orig_begin, orig_end;  // in the original text
  };
  std::string text_;
  // One list of changes per Apply() that changed something, each sorted by norm_begin.
  std::vector<std::vector<Change>> layers_;
};

// Decodes the UTF-8 character starting at text[i]; returns its length (1 for an invalid
// byte, with *cp = 0xFFFD).
int DecodeUtf8(std::string_view text, size_t i, char32_t* cp);
// Length of the character ending just before text[end] (1 for an invalid byte).
int PreviousUtf8Length(std::string_view text, size_t end);

// HF `char::is_whitespace` (Unicode White_Space property).
bool IsWhiteSpace(char32_t cp);
// HF added-token word character: alphabetic, numeric or '_'.
bool IsWordChar(char32_t cp);

// Appends `bytes` to `out` with every maximal invalid UTF-8 subpart replaced by U+FFFD
// (same result as Rust's String::from_utf8_lossy, which HF decoders use).
void AppendUtf8Lossy(std::string_view bytes, std::string* out);

}  // namespace egca::trainer
