#include "tokenizer_bpe.h"

#include <limits>
#include <algorithm>
#include <functional>

#include "unicode_text.h"

namespace egca::trainer {
namespace {

struct ByteLevelTables {
  char32_t byte_to_cp[256];
  std::unordered_map<char32_t, unsigned char> cp_to_byte;
  ByteLevelTables() {
    // Printable Latin-1 bytes keep their code point; the others are shifted to 256+n.
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      byte_to_cp[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      cp_to_byte[byte_to_cp[b]] = static_cast<unsigned char>(b);
    }
  }
};

const ByteLevelTables& Tables() {
  static const ByteLevelTables tables;
  return tables;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

std::string BytesToByteLevel(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) AppendUtf8(Tables().byte_to_cp[b], &out);
  return out;
}

bool ByteLevelToBytes(std::string_view text, std::string* bytes) {
  bytes->clear();
  const auto& map = Tables().cp_to_byte;
  for (size_t i = 0; i < text.size();) {
    char32_t cp;
    const int len = DecodeUtf8(text, i, &cp);
    if (len == 1 && cp == 0xFFFD) return false;
    auto it = map.find(cp);
    if (it == map.end()) return false;
    bytes->push_back(static_cast<char>(it->second));
    i += len;
  }
  return true;
}

BpeModel::BpeModel() { std::fill(std::begin(byte_token_), std::end(byte_token_), -1); }

void BpeModel::AddToken(int32_t id, std::string_view bytes) {
  if (bytes.size() == 1) byte_token_[static_cast<unsigned char>(bytes[0])] = id;
  // Whole-word lookups are only needed with ignore_merges; skipping the map otherwise
  // saves a third of the load time.
  if (ignore_merges_) bytes_to_id_.emplace(std::string(bytes), id);
}

void BpeModel::AddMerge(int32_t left, int32_t right, int32_t rank, int32_t merged) {
  if ((merge_count_ + 1) * 2 > slots_.size()) Rehash(slots_.empty() ? 1024 : slots_.size() * 2);
  const uint64_t key = Key(left, right);
  for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
    Slot& slot = slots_[i];
    if (slot.key == key) {
      slot.merge = Merge{rank, merged};  // a repeated pair takes the later rank, as in HF
      return;
    }
    if (slot.key == kEmpty) {
      slot.key = key;
      slot.merge = Merge{rank, merged};
      ++merge_count_;
      return;
    }
  }
}

void BpeModel::Rehash(size_t capacity) {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  for (const Slot& slot : old) {
    if (slot.key == kEmpty) continue;
    for (size_t i = Hash(slot.key) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == kEmpty) {
        slots_[i] = slot;
        break;
      }
    }
  }
}

int BpeModel::Finish() {
  for (int b = 0; b < 256; ++b) {
    if (byte_token_[b] < 0) return b;
  }
  return -1;
}

int32_t BpeModel::Find(std::string_view bytes) const {
  // Heterogeneous lookup needs C++20; a temporary string is fine off the hot path.
  auto it = bytes_to_id_.find(std::string(bytes));
  return it == bytes_to_id_.end() ? -1 : it->second;
}

namespace {

struct Symbol {
  int32_t id;
  int32_t prev;  // index of the previous live symbol, -1 at the start
  int32_t next;  // index of the next live symbol, -1 at the end
  bool live;
};

struct Candidate {
  int32_t rank;
  int32_t pos;  // index of the left symbol
  int32_t merged_id;
  bool operator>(const Candidate& o) const {
    return rank != o.rank ? rank > o.rank : pos > o.pos;
  }
};

}  // namespace

void BpeModel::MergeWord(std::string_view word, std::vector<int32_t>* out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    const int32_t whole = Find(word);
    if (whole >= 0) {
      out->push_back(whole);
      return;
    }
  }
  const auto n = static_cast<int32_t>(word.size());
  if (n == 1) {
    out->push_back(byte_token_[static_cast<unsigned char>(word[0])]);
    return;
  }
  if (n <= kShortWord) {
    // Short words (most of real text): rescanning a handful of pairs in a stack array is
    // cheaper than heap bookkeeping, and picks the same merges (lowest rank, leftmost).
    int32_t ids[kShortWord];
    int32_t count = n;
    for (int32_t i = 0; i < n; ++i) ids[i] = byte_token_[static_cast<unsigned char>(word[i])];
    while (count > 1) {
      int32_t best_rank = std::numeric_limits<int32_t>::max(), best = -1, merged = -1;
      for (int32_t i = 0; i + 1 < count; ++i) {
        const Merge* m = FindMerge(ids[i], ids[i + 1]);
        if (m != nullptr && m->rank < best_rank) {
          best_rank = m->rank;
          best = i;
          merged = m->merged_id;
        }
      }
      if (best < 0) break;
      ids[best] = merged;
      for (int32_t i = best + 1; i + 1 < count; ++i) ids[i] = ids[i + 1];
      --count;
    }
    out->insert(out->end(), ids, ids + count);
    return;
  }
  // Per-thread scratch: avoids two allocations per long word.
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> heap;
  symbols.resize(n);
  heap.clear();
  const auto push = [](const Candidate& c) {
    heap.push_back(c);
    std::push_heap(heap.begin(), heap.end(), std::greater<Candidate>());
  };
  for (int32_t i = 0; i < n; ++i) {
    symbols[i] = Symbol{byte_token_[static_cast<unsigned char>(word[i])], i - 1,
                        i + 1 < n ? i + 1 : -1, true};
  }
  for (int32_t i = 0; i + 1 < n; ++i) {
    if (const Merge* m = FindMerge(symbols[i].id, symbols[i + 1].id)) {
      heap.push_back(Candidate{m->rank, i, m->merged_id});
    }
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<Candidate>());
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<Candidate>());
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& left = symbols[top.pos];
    if (!left.live || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    // Stale entry: one side was merged since this candidate was queued.
    const Merge* m = FindMerge(left.id, right.id);
    if (m == nullptr || m->merged_id != top.merged_id) continue;
    left.id = top.merged_id;
    right.live = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) {
      if (const Merge* pm = FindMerge(symbols[left.prev].id, left.id)) {
        push(Candidate{pm->rank, left.prev, pm->merged_id});
      }
    }
    if (left.next >= 0) {
      if (const Merge* nm = FindMerge(left.id, symbols[left.next].id)) {
        push(Candidate{nm->rank, top.pos, nm->merged_id});
      }
    }
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) out->push_back(symbols[i].id);
}

void BpeModel::MergeWordNaive(std::string_view word, std::vector<int32_t>* out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    const int32_t whole = Find(word);
    if (whole >= 0) {
      out->push_back(whole);
      return;
    }
  }
  std::vector<int32_t> ids;
  ids.reserve(word.size());
  for (unsigned char c : word) ids.push_back(byte_token_[c]);
  while (ids.size() > 1) {
    int32_t best_rank = std::numeric_limits<int32_t>::max();
    size_t best = 0;
    int32_t merged = -1;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      const Merge* m = FindMerge(ids[i], ids[i + 1]);
      if (m != nullptr && m->rank < best_rank) {
        best_rank = m->rank;
        best = i;
        merged = m->merged_id;
      }
    }
    if (merged < 0) break;
    ids[best] = merged;
    ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  out->insert(out->end(), ids.begin(), ids.end());
}

}  // namespace egca::trainer
