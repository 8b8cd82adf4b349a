// Internal state of egca::trainer::Tokenizer, shared by the loader (tokenizer_load.cpp)
// and the encoder (tokenizer.cpp). Private to trainer/.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "egca/trainer/policy/tokenizer.h"
#include "tokenizer_bpe.h"
#include "tokenizer_pretokenize.h"
#include "unicode_text.h"

namespace egca::trainer {

// A stretch of text that is either one added token (id >= 0) or plain text (id == -1).
struct Segment {
  uint32_t begin;
  uint32_t end;
  int32_t id;
};

// Finds added tokens in text the way HF's AddedVocabulary does: leftmost-longest exact
// matches, then single_word / lstrip / rstrip applied to each match.
class AddedTokenMatcher {
 public:
  // `tokens` is borrowed and must outlive the matcher; `normalized` selects which tokens
  // this matcher handles (HF matches normalized=false tokens on raw text and the others
  // after normalization).
  void Build(const std::vector<AddedToken>* tokens, bool normalized);
  bool empty() const { return count_ == 0; }
  // Splits text[piece] into segments covering it exactly, in order. Special tokens are
  // only matched when `parse_special` is true.
  void Split(std::string_view text, Piece piece, bool parse_special,
             std::vector<Segment>* out) const;

 private:
  const std::vector<AddedToken>* tokens_ = nullptr;
  // Per first byte: indices into *tokens_, longest content first.
  std::array<std::vector<int32_t>, 256> by_first_byte_;
  size_t count_ = 0;
};

// Thread-safe bounded map pre-token bytes -> ids. Once a shard is full, new words are not
// cached (the HF policy): eviction would cost more than re-merging the rare words.
class WordCache {
 public:
  explicit WordCache(size_t capacity);
  // Appends the cached ids to *out and returns true on a hit.
  bool Lookup(std::string_view word, std::vector<int32_t>* out) const;
  void Insert(std::string_view word, const int32_t* ids, size_t count);

 private:
  static constexpr size_t kShards = 16;
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>> map;
  };
  std::array<Shard, kShards> shards_;
  size_t per_shard_capacity_;
};

struct Tokenizer::Impl {
  std::string name;  // file name used in messages
  BpeModel bpe;
  std::vector<std::string> id_text;   // tokenizer.json spelling per id ("" = no token)
  std::vector<std::string> id_bytes;  // raw bytes per id
  std::vector<uint8_t> id_special;    // 1 for special added tokens
  std::unordered_map<std::string, int32_t> text_to_id;
  std::vector<AddedToken> added;
  std::vector<NormalizationForm> normalizers;  // applied in order
  std::vector<std::unique_ptr<RegexSplitter>> splitters;  // applied in order
  AddedTokenMatcher raw_matcher;         // normalized=false added tokens
  AddedTokenMatcher normalized_matcher;  // normalized=true added tokens
  std::unique_ptr<WordCache> cache;      // null when disabled

  // Appends the ids of one pre-token (cached).
  void EncodeWord(std::string_view word, std::vector<int32_t>* ids) const;
  // The whole pipeline; `offsets` may be null.
  void Encode(std::string_view text, const EncodeOptions& options, std::vector<int32_t>* ids,
              std::vector<TokenOffset>* offsets) const;
};

// The internals of `tokenizer` (benchmark baselines, white-box tests).
const Tokenizer::Impl& TokenizerInternals(const Tokenizer& tokenizer);

// Builds Impl from tokenizer.json text. Errors: "<name>: <json path>: <problem>".
StatusOr<std::unique_ptr<Tokenizer::Impl>> LoadTokenizerJson(std::string_view json,
                                                            const std::string& name,
                                                            const TokenizerOptions& options);

}  // namespace egca::trainer
