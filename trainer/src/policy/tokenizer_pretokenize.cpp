#include "tokenizer_pretokenize.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

namespace egca::trainer {

// Owned PCRE2 handles. Match data is per call (pcre2_match_data is not shareable between
// threads), created from the code's ovector size.
struct RegexSplitter::Compiled {
  pcre2_code* code = nullptr;  // Owned.
  ~Compiled() {
    if (code != nullptr) pcre2_code_free(code);
  }
};

RegexSplitter::~RegexSplitter() = default;

StatusOr<std::unique_ptr<RegexSplitter>> RegexSplitter::Compile(const std::string& pattern,
                                                                bool literal) {
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  // MATCH_INVALID_UTF: tokenizing arbitrary bytes must not fail; invalid sequences simply
  // never match. UCP: \s, \w, \d and POSIX classes use Unicode properties like Oniguruma.
  uint32_t flags = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
  if (literal) flags |= PCRE2_LITERAL;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   flags, &error, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return InvalidArgument("regex does not compile at offset " + std::to_string(error_offset) +
                           ": " + reinterpret_cast<const char*>(message));
  }
  // JIT is an optimization only; interpretation gives the same matches if it is missing.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  std::unique_ptr<RegexSplitter> splitter(new RegexSplitter());
  splitter->compiled_ = std::make_unique<Compiled>();
  splitter->compiled_->code = code;
  return splitter;
}

namespace {

struct MatchData {
  pcre2_match_data* data;  // Owned.
  explicit MatchData(const pcre2_code* code)
      : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(data); }
};

}  // namespace

void RegexSplitter::Split(std::string_view text, Piece piece, std::vector<Piece>* out) const {
  // One match-data block per call (a call covers a whole text segment, not one word).
  MatchData match(compiled_->code);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const PCRE2_SIZE end = piece.end;
  PCRE2_SIZE gap_start = piece.begin;
  // Matching on the whole text (not a substring) would let lookarounds see outside the
  // piece; HF applies the regex to each piece alone, so match on the piece only.
  const PCRE2_SIZE base = piece.begin;
  const PCRE2_SIZE length = end - base;
  PCRE2_SIZE rel = 0;
  while (rel < length) {
    const int rc = pcre2_match(compiled_->code, subject + base, length, rel, 0, match.data,
                               nullptr);
    if (rc < 0) break;  // no more matches (or a match limit): rest is one gap
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match.data);
    PCRE2_SIZE m_begin = ov[0];
    PCRE2_SIZE m_end = ov[1];
    if (m_end == m_begin) {
      // Empty match: HF skips it; advance one character.
      rel = m_begin + 1;
      while (rel < length && (static_cast<unsigned char>(text[base + rel]) & 0xC0) == 0x80) ++rel;
      continue;
    }
    if (base + m_begin > gap_start) {
      out->push_back(Piece{static_cast<uint32_t>(gap_start), static_cast<uint32_t>(base + m_begin)});
    }
    out->push_back(Piece{static_cast<uint32_t>(base + m_begin), static_cast<uint32_t>(base + m_end)});
    gap_start = base + m_end;
    rel = m_end;
  }
  if (end > gap_start) {
    out->push_back(Piece{static_cast<uint32_t>(gap_start), static_cast<uint32_t>(end)});
  }
}

}  // namespace egca::trainer
