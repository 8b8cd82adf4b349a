// Byte-level BPE tokenizer loaded from a Hugging Face `tokenizer.json` (Qwen2/Qwen3, GPT-2,
// Llama-3 style): normalizer, added/special tokens, regex pre-tokenization, byte-level
// mapping, rank-based BPE merges. Produces token ids and, for every token, the exact byte
// range of the input text it came from, so a source span (bytes [begin, end)) can be mapped
// to the tokens that overlap it.
//
// Offsets contract (see docs/tokenizer.md):
//   * offsets[i] is a byte range [begin, end) into the text passed to Encode();
//   * the ranges are in order and tile the input exactly: offsets[0].begin == 0, each
//     begin equals the previous end, the last end == text.size() (empty text -> no tokens);
//   * a token that covers only some bytes of a multi-byte UTF-8 character (byte-level BPE
//     splits rare characters such as emoji across tokens) gets exactly those bytes, so its
//     range does not start or end on a character boundary;
//   * where the normalizer changes the text (e.g. NFC composes "e" + U+0301), the changed
//     stretch of the original text is owned by the token holding the first byte of its
//     normalized form; later tokens inside that stretch get an empty range at its end.
//     Unchanged text (all ASCII, all NFC text) maps byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "egca/core/status.h"

namespace egca::trainer {

// Byte range [begin, end) into the text given to Tokenizer::Encode (UTF-8 bytes, not chars).
struct TokenOffset {
  uint32_t begin = 0;
  uint32_t end = 0;
  bool operator==(const TokenOffset& o) const { return begin == o.begin && end == o.end; }
};

// ids[i] came from text bytes offsets[i]; both vectors have the same length.
struct Encoding {
  std::vector<int32_t> ids;
  std::vector<TokenOffset> offsets;
};

struct EncodeOptions {
  // true: added tokens marked `special` (e.g. "<|im_start|>", "<|endoftext|>") written in the
  // text are encoded as their single special id. false: their text is tokenized like any
  // other text (HF `split_special_tokens=True`); use this for untrusted model completions so
  // a completion cannot inject control tokens. Non-special added tokens (Qwen3's "<think>",
  // "<tool_call>") are atomic in both modes, as in HF, because the model emits them as ids.
  bool parse_special_tokens = true;
};

// One entry of tokenizer.json `added_tokens`, flags as HF defines them.
struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;      // control token; skipped by Decode(skip_special = true)
  bool lstrip = false;       // the match swallows whitespace to its left
  bool rstrip = false;       // the match swallows whitespace to its right
  bool single_word = false;  // matches only when not inside a word
  bool normalized = false;   // matched against normalized text instead of raw text
};

// Half-open range of token indices [first, last); empty when first == last.
struct TokenRange {
  size_t first = 0;
  size_t last = 0;
  bool empty() const { return first >= last; }
};

// Returns the tokens whose byte ranges overlap bytes [begin, end) of the encoded text
// (a token with an empty range overlaps nothing). For an empty span [b, b) returns the
// empty range positioned at the token that contains byte b.
TokenRange TokensOverlapping(const std::vector<TokenOffset>& offsets, uint32_t begin,
                             uint32_t end);

struct TokenizerOptions {
  // Entries in the pre-token (word) -> ids cache; 0 disables caching.
  size_t cache_capacity = 1 << 16;
};

// Immutable after loading; Encode/Decode are safe to call from several threads at once
// (the word cache is internally locked).
class Tokenizer {
 public:
  // `path_or_dir` is a tokenizer.json file or a directory containing one. Errors name the
  // file and the JSON path of the bad field, e.g.
  // "tokenizer.json: model.merges[17]: expected \"a b\" or [a, b]".
  static StatusOr<std::unique_ptr<Tokenizer>> FromFile(const std::string& path_or_dir,
                                                       const TokenizerOptions& options = {});
  // Same from JSON text; `name` is used in error messages in place of a file name.
  static StatusOr<std::unique_ptr<Tokenizer>> FromJson(std::string_view json,
                                                       const std::string& name,
                                                       const TokenizerOptions& options = {});
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Encodes UTF-8 text. Invalid UTF-8 is tokenized byte-wise (never an error) but skips
  // normalization. No BOS/EOS is added: chat formatting is ChatTemplate's job.
  Encoding Encode(std::string_view text, const EncodeOptions& options = {}) const;
  // Ids only (same as Encode(text).ids, without building offsets).
  std::vector<int32_t> EncodeIds(std::string_view text, const EncodeOptions& options = {}) const;
  // Encodes many texts (e.g. the G completions of one prompt) on up to `threads` threads
  // (0 = hardware concurrency); result[i] is Encode(texts[i]).
  std::vector<Encoding> EncodeBatch(const std::vector<std::string_view>& texts,
                                    const EncodeOptions& options = {}, int threads = 0) const;
  std::vector<Encoding> EncodeBatch(const std::vector<std::string>& texts,
                                    const EncodeOptions& options = {}, int threads = 0) const;

  // Concatenates the tokens' bytes; byte sequences that are not valid UTF-8 (a prefix of a
  // multi-byte character, a stray continuation byte) become U+FFFD, as HF does. Ids outside
  // [0, vocab_size()) or without a token are skipped.
  std::string Decode(const std::vector<int32_t>& ids, bool skip_special = false) const;
  // Raw concatenated bytes, no replacement (for streaming decoders that hold back an
  // incomplete trailing character).
  std::string DecodeBytes(const std::vector<int32_t>& ids, bool skip_special = false) const;

  // Id of a token given as it is spelled in tokenizer.json (byte-level form for vocab
  // entries, e.g. "Ġthe"; plain content for added tokens, e.g. "<|im_end|>").
  std::optional<int32_t> TokenId(std::string_view token) const;
  // The tokenizer.json spelling of `id` (empty for an unknown id). Borrowed from *this.
  std::string_view TokenText(int32_t id) const;
  // The raw bytes `id` stands for (the content for added tokens). Borrowed from *this.
  std::string_view TokenBytes(int32_t id) const;
  // True for added tokens with special=true.
  bool IsSpecial(int32_t id) const;
  // All added tokens in tokenizer.json order.
  const std::vector<AddedToken>& added_tokens() const;
  // One past the largest id (vocab and added tokens).
  int32_t vocab_size() const;

  struct Impl;

 private:
  // White-box access for the benchmark and tests (declared in trainer/src/policy/tokenizer_impl.h).
  friend const Impl& TokenizerInternals(const Tokenizer& tokenizer);
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Incremental detokenization for streaming generation: feed ids one by one and get back
// the text that became complete. A character split across tokens is held back until its
// last byte arrives, so the pieces concatenate to Decode(all ids) without spurious U+FFFD.
// Borrows the tokenizer, which must outlive the stream. Not thread-safe.
class DecodeStream {
 public:
  explicit DecodeStream(const Tokenizer& tokenizer, bool skip_special = false)
      : tokenizer_(tokenizer), skip_special_(skip_special) {}
  // Valid UTF-8 (U+FFFD for invalid bytes) that is complete after `id`; may be empty.
  std::string Next(int32_t id);
  // Whatever is still held back (an incomplete character becomes U+FFFD); resets.
  std::string Flush();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::string pending_;  // bytes of an incomplete trailing character
};

}  // namespace egca::trainer
