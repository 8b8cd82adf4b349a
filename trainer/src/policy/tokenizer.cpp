#include "egca/trainer/policy/tokenizer.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <thread>

#include "egca/core/files.h"
#include "tokenizer_impl.h"

namespace egca::trainer {

// ---- AddedTokenMatcher ----------------------------------------------------

void AddedTokenMatcher::Build(const std::vector<AddedToken>* tokens, bool normalized) {
  tokens_ = tokens;
  count_ = 0;
  for (auto& list : by_first_byte_) list.clear();
  for (size_t i = 0; i < tokens->size(); ++i) {
    const AddedToken& t = (*tokens)[i];
    if (t.content.empty() || t.normalized != normalized) continue;
    by_first_byte_[static_cast<unsigned char>(t.content[0])].push_back(static_cast<int32_t>(i));
    ++count_;
  }
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](int32_t a, int32_t b) {
      return (*tokens)[a].content.size() > (*tokens)[b].content.size();
    });
  }
}

void AddedTokenMatcher::Split(std::string_view text, Piece piece, bool parse_special,
                              std::vector<Segment>* out) const {
  uint32_t emitted = piece.begin;  // start of text not yet emitted
  uint32_t i = piece.begin;
  while (i < piece.end) {
    // Leftmost-longest over all added tokens, like HF's Aho-Corasick pass; a match that is
    // then rejected (special while specials are plain text, or single_word inside a word)
    // is skipped as a whole, as HF skips it.
    const auto& candidates = by_first_byte_[static_cast<unsigned char>(text[i])];
    const AddedToken* found = nullptr;
    for (int32_t index : candidates) {
      const AddedToken& t = (*tokens_)[index];
      if (t.content.size() > piece.end - i) continue;
      if (text.compare(i, t.content.size(), t.content) != 0) continue;
      found = &t;
      break;  // longest first
    }
    if (found == nullptr) {
      ++i;
      continue;
    }
    const auto match_end = static_cast<uint32_t>(i + found->content.size());
    if (found->special && !parse_special) {
      i = match_end;
      continue;
    }
    uint32_t start = i;
    uint32_t stop = i + static_cast<uint32_t>(found->content.size());
    if (found->single_word) {
      char32_t cp = 0;
      bool word_before = false;
      if (start > piece.begin) {
        const int len = PreviousUtf8Length(text.substr(0, start), start);
        DecodeUtf8(text, start - len, &cp);
        word_before = IsWordChar(cp);
      }
      bool word_after = false;
      if (stop < piece.end) {
        DecodeUtf8(text, stop, &cp);
        word_after = IsWordChar(cp);
      }
      if (word_before || word_after) {
        i = match_end;
        continue;
      }
    }
    if (found->lstrip) {
      // Never strip into text already emitted (e.g. swallowed by a previous rstrip).
      while (start > emitted) {
        const int len = PreviousUtf8Length(text.substr(0, start), start);
        char32_t cp;
        DecodeUtf8(text, start - len, &cp);
        if (!IsWhiteSpace(cp)) break;
        start -= len;
      }
    }
    if (found->rstrip) {
      while (stop < piece.end) {
        char32_t cp;
        const int len = DecodeUtf8(text, stop, &cp);
        if (!IsWhiteSpace(cp)) break;
        stop += len;
      }
    }
    if (start > emitted) out->push_back(Segment{emitted, start, -1});
    out->push_back(Segment{start, stop, found->id});
    emitted = stop;
    i = stop;
  }
  if (piece.end > emitted) out->push_back(Segment{emitted, piece.end, -1});
}

// ---- WordCache ----------------------------------------------------------------

WordCache::WordCache(size_t capacity) : per_shard_capacity_((capacity + kShards - 1) / kShards) {}

namespace {
size_t ShardOf(std::string_view word, size_t shards) {
  return std::hash<std::string_view>()(word) % shards;
}
}  // namespace

bool WordCache::Lookup(std::string_view word, std::vector<int32_t>* out) const {
  const Shard& shard = shards_[ShardOf(word, kShards)];
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.map.find(std::string(word));
  if (it == shard.map.end()) return false;
  out->insert(out->end(), it->second.begin(), it->second.end());
  return true;
}

void WordCache::Insert(std::string_view word, const int32_t* ids, size_t count) {
  Shard& shard = shards_[ShardOf(word, kShards)];
  std::lock_guard<std::mutex> lock(shard.mu);
  if (shard.map.size() >= per_shard_capacity_) return;
  shard.map.emplace(std::string(word), std::vector<int32_t>(ids, ids + count));
}

// ---- Encoding pipeline ----------------------------------------------------------

void Tokenizer::Impl::EncodeWord(std::string_view word, std::vector<int32_t>* ids) const {
  if (cache && cache->Lookup(word, ids)) return;
  const size_t before = ids->size();
  bpe.MergeWord(word, ids);
  if (cache) cache->Insert(word, ids->data() + before, ids->size() - before);
}

void Tokenizer::Impl::Encode(std::string_view text, const EncodeOptions& options,
                             std::vector<int32_t>* ids, std::vector<TokenOffset>* offsets) const {
  std::vector<Segment> segments;
  const Piece whole{0, static_cast<uint32_t>(text.size())};
  if (raw_matcher.empty()) {
    if (whole.end > 0) segments.push_back(Segment{0, whole.end, -1});
  } else {
    raw_matcher.Split(text, whole, options.parse_special_tokens, &segments);
  }

  std::vector<Segment> inner;
  std::vector<Piece> pieces, next_pieces;
  for (const Segment& seg : segments) {
    if (seg.id >= 0) {
      ids->push_back(seg.id);
      if (offsets) offsets->push_back(TokenOffset{seg.begin, seg.end});
      continue;
    }
    NormalizedText normalized(text.substr(seg.begin, seg.end - seg.begin));
    for (NormalizationForm form : normalizers) {
      // Apply only fails if ICU data is missing; the text then stays unnormalized.
      (void)normalized.Apply(form);
    }
    const std::string& ntext = normalized.text();
    const auto to_original = [&](uint32_t pos) { return seg.begin + normalized.ToOriginal(pos); };

    inner.clear();
    const Piece nwhole{0, static_cast<uint32_t>(ntext.size())};
    if (normalized_matcher.empty()) {
      if (nwhole.end > 0) inner.push_back(Segment{0, nwhole.end, -1});
    } else {
      normalized_matcher.Split(ntext, nwhole, options.parse_special_tokens, &inner);
    }
    for (const Segment& sub : inner) {
      if (sub.id >= 0) {
        ids->push_back(sub.id);
        if (offsets) offsets->push_back(TokenOffset{to_original(sub.begin), to_original(sub.end)});
        continue;
      }
      pieces.assign(1, Piece{sub.begin, sub.end});
      for (const auto& splitter : splitters) {
        next_pieces.clear();
        for (const Piece& p : pieces) splitter->Split(ntext, p, &next_pieces);
        pieces.swap(next_pieces);
      }
      for (const Piece& p : pieces) {
        const size_t first = ids->size();
        EncodeWord(std::string_view(ntext).substr(p.begin, p.end - p.begin), ids);
        if (!offsets) continue;
        uint32_t pos = p.begin;
        for (size_t k = first; k < ids->size(); ++k) {
          const auto len = static_cast<uint32_t>(id_bytes[(*ids)[k]].size());
          offsets->push_back(TokenOffset{to_original(pos), to_original(pos + len)});
          pos += len;
        }
      }
    }
  }
}

// ---- Tokenizer ------------------------------------------------------------------------

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

const Tokenizer::Impl& TokenizerInternals(const Tokenizer& tokenizer) { return *tokenizer.impl_; }
Tokenizer::~Tokenizer() = default;

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJson(std::string_view json,
                                                         const std::string& name,
                                                         const TokenizerOptions& options) {
  EGCA_ASSIGN_OR_RETURN(auto impl, LoadTokenizerJson(json, name, options));
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromFile(const std::string& path_or_dir,
                                                         const TokenizerOptions& options) {
  std::string path = path_or_dir;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    path += (path.back() == '/' ? "" : "/");
    path += "tokenizer.json";
  }
  EGCA_ASSIGN_OR_RETURN(const std::string contents, ReadFile(path));
  return FromJson(contents, path, options);
}

Encoding Tokenizer::Encode(std::string_view text, const EncodeOptions& options) const {
  Encoding encoding;
  encoding.ids.reserve(text.size() / 3 + 4);
  encoding.offsets.reserve(text.size() / 3 + 4);
  impl_->Encode(text, options, &encoding.ids, &encoding.offsets);
  return encoding;
}

std::vector<int32_t> Tokenizer::EncodeIds(std::string_view text,
                                          const EncodeOptions& options) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  impl_->Encode(text, options, &ids, nullptr);
  return ids;
}

std::vector<Encoding> Tokenizer::EncodeBatch(const std::vector<std::string_view>& texts,
                                             const EncodeOptions& options, int threads) const {
  std::vector<Encoding> out(texts.size());
  size_t workers = threads > 0 ? static_cast<size_t>(threads) : std::thread::hardware_concurrency();
  workers = std::max<size_t>(1, std::min(workers, texts.size()));
  if (workers == 1) {
    for (size_t i = 0; i < texts.size(); ++i) out[i] = Encode(texts[i], options);
    return out;
  }
  // Texts are claimed one at a time: completions differ a lot in length.
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < texts.size();) out[i] = Encode(texts[i], options);
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return out;
}

std::vector<Encoding> Tokenizer::EncodeBatch(const std::vector<std::string>& texts,
                                             const EncodeOptions& options, int threads) const {
  return EncodeBatch(std::vector<std::string_view>(texts.begin(), texts.end()), options, threads);
}

std::string Tokenizer::DecodeBytes(const std::vector<int32_t>& ids, bool skip_special) const {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) continue;
    if (skip_special && impl_->id_special[id]) continue;
    out += impl_->id_bytes[id];
  }
  return out;
}

std::string Tokenizer::Decode(const std::vector<int32_t>& ids, bool skip_special) const {
  const std::string bytes = DecodeBytes(ids, skip_special);
  std::string out;
  out.reserve(bytes.size());
  AppendUtf8Lossy(bytes, &out);
  return out;
}

std::optional<int32_t> Tokenizer::TokenId(std::string_view token) const {
  auto it = impl_->text_to_id.find(std::string(token));
  if (it == impl_->text_to_id.end()) return std::nullopt;
  return it->second;
}

std::string_view Tokenizer::TokenText(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return impl_->id_text[id];
}

std::string_view Tokenizer::TokenBytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return impl_->id_bytes[id];
}

bool Tokenizer::IsSpecial(int32_t id) const {
  return id >= 0 && id < vocab_size() && impl_->id_special[id] != 0;
}

const std::vector<AddedToken>& Tokenizer::added_tokens() const { return impl_->added; }

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->id_text.size()); }

// ---- DecodeStream ---------------------------------------------------------------

namespace {

// Length of a trailing sequence of `bytes` that is a valid but incomplete UTF-8 character
// (a lead byte followed by fewer continuation bytes than it needs), else 0.
size_t IncompleteTail(std::string_view bytes) {
  const size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(bytes[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    const size_t need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 1;
    if (need <= back) return 0;
    // The continuation bytes seen so far must be acceptable for this lead.
    if (back >= 2) {
      const auto c1 = static_cast<unsigned char>(bytes[n - back + 1]);
      if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) ||
          (c == 0xF4 && c1 > 0x8F)) {
        return 0;
      }
    }
    return back;
  }
  return 0;
}

}  // namespace

std::string DecodeStream::Next(int32_t id) {
  if (id < 0 || id >= tokenizer_.vocab_size()) return {};
  if (skip_special_ && tokenizer_.IsSpecial(id)) return {};
  pending_ += tokenizer_.TokenBytes(id);
  const size_t hold = IncompleteTail(pending_);
  std::string out;
  AppendUtf8Lossy(std::string_view(pending_).substr(0, pending_.size() - hold), &out);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string DecodeStream::Flush() {
  std::string out;
  AppendUtf8Lossy(pending_, &out);
  pending_.clear();
  return out;
}

TokenRange TokensOverlapping(const std::vector<TokenOffset>& offsets, uint32_t begin,
                             uint32_t end) {
  // Offsets are sorted and tile the text, so both ends are binary searches.
  auto first = std::upper_bound(offsets.begin(), offsets.end(), begin,
                                [](uint32_t b, const TokenOffset& o) { return b < o.end; });
  if (end <= begin) {
    const auto at = static_cast<size_t>(first - offsets.begin());
    return TokenRange{at, at};
  }
  auto last = std::lower_bound(first, offsets.end(), end,
                               [](const TokenOffset& o, uint32_t e) { return o.begin < e; });
  TokenRange range{static_cast<size_t>(first - offsets.begin()),
                   static_cast<size_t>(last - offsets.begin())};
  // Empty-range tokens at either edge overlap nothing.
  while (range.first < range.last && offsets[range.first].begin == offsets[range.first].end) {
    ++range.first;
  }
  while (range.last > range.first &&
         offsets[range.last - 1].begin == offsets[range.last - 1].end) {
    --range.last;
  }
  return range;
}

}  // namespace egca::trainer
