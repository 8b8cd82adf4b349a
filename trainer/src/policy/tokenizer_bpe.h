// The BPE model of a byte-level tokenizer: vocabulary over raw bytes and rank-ordered
// merges. Private to trainer/ (tests and the benchmark include it directly).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace egca::trainer {

// GPT-2's reversible byte <-> printable-character mapping used by byte-level vocabularies
// ("Ġ" is the space byte 0x20). Encodes raw bytes as that UTF-8 spelling.
std::string BytesToByteLevel(std::string_view bytes);
// Inverse; false if `text` contains a character outside the 256-character alphabet.
bool ByteLevelToBytes(std::string_view text, std::string* bytes);

class BpeModel {
 public:
  struct Merge {
    int32_t rank;
    int32_t merged_id;
  };

  BpeModel();
  void Reserve(size_t tokens) {
    if (ignore_merges_) bytes_to_id_.reserve(tokens);
  }
  // Adds a vocabulary entry; `bytes` are the raw bytes the token stands for. Call
  // set_ignore_merges() before adding tokens.
  void AddToken(int32_t id, std::string_view bytes);
  void ReserveMerges(size_t merges) {
    size_t capacity = 1024;
    while (capacity < merges * 2) capacity *= 2;
    if (capacity > slots_.size()) Rehash(capacity);
  }
  // Registers merge (left, right) -> merged with priority `rank` (lower merges first).
  void AddMerge(int32_t left, int32_t right, int32_t rank, int32_t merged);
  // Call after all tokens are added. Returns the first byte value that has no single-byte
  // token (not a byte-level vocabulary), or -1 if all 256 are present.
  int Finish();
  void set_ignore_merges(bool v) { ignore_merges_ = v; }

  // Id of the token for exactly `bytes`, -1 if absent. Only valid with ignore_merges.
  int32_t Find(std::string_view bytes) const;
  int32_t ByteToken(unsigned char b) const { return byte_token_[b]; }
  const Merge* FindMerge(int32_t left, int32_t right) const {
    if (slots_.empty()) return nullptr;
    const uint64_t key = Key(left, right);
    for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.key == key) return &slot.merge;
      if (slot.key == kEmpty) return nullptr;
    }
  }
  size_t merge_count() const { return merge_count_; }

  // Appends the ids of one pre-token (raw bytes) to `out`: lowest-rank pair first, the
  // leftmost among equal ranks (HF's order). Words longer than kShortWord bytes use a
  // priority queue over a linked list of symbols: O(n log n) in the word length.
  void MergeWord(std::string_view word, std::vector<int32_t>* out) const;
  // Same result by rescanning every adjacent pair after each merge: O(n^2). Baseline for
  // the benchmark and a cross-check in tests.
  void MergeWordNaive(std::string_view word, std::vector<int32_t>* out) const;

 private:
  // Words up to this many bytes are merged by rescanning a stack array.
  static constexpr int32_t kShortWord = 12;
  static uint64_t Key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  std::unordered_map<std::string, int32_t> bytes_to_id_;
  // Open-addressing table (linear probing, load <= 1/2): the merge lookup is the hot
  // operation of BPE and std::unordered_map's bucket chains cost ~2x here.
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    Merge merge{0, 0};
  };
  static size_t Hash(uint64_t key) { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20); }
  void Rehash(size_t capacity);
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t merge_count_ = 0;
  int32_t byte_token_[256];  // -1 until AddToken sees that byte
  bool ignore_merges_ = false;
};

}  // namespace egca::trainer
