// tokenizer.json -> Tokenizer::Impl. Every error names the file and the JSON path of the
// offending field; unsupported components are UNIMPLEMENTED, never silently ignored,
// because a tokenizer that loads but encodes differently from the model's is worse than
// one that refuses to load.
#include <nlohmann/json.hpp>

#include <algorithm>

#include "egca/core/json_depth.h"
#include "tokenizer_impl.h"

namespace egca::trainer {
namespace {

using nlohmann::json;

// The GPT-2 split regex, used by ByteLevel when use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string Quote(const std::string& s) { return json(s).dump(); }

class Loader {
 public:
  Loader(const std::string& name, Tokenizer::Impl* impl) : name_(name), impl_(impl) {}

  Status Load(const json& root) {
    if (!root.is_object()) return Error("", "expected a JSON object");
    EGCA_RETURN_IF_ERROR(LoadModel(root));
    EGCA_RETURN_IF_ERROR(LoadAddedTokens(root));
    if (auto it = root.find("normalizer"); it != root.end()) {
      EGCA_RETURN_IF_ERROR(LoadNormalizer(*it, "normalizer"));
    }
    bool byte_level = false;
    if (auto it = root.find("pre_tokenizer"); it != root.end()) {
      EGCA_RETURN_IF_ERROR(LoadPreTokenizer(*it, "pre_tokenizer", &byte_level));
    }
    if (!byte_level) {
      return Unimplemented(name_ +
                           ": pre_tokenizer: no ByteLevel step; only byte-level BPE is supported");
    }
    if (auto it = root.find("decoder"); it != root.end()) {
      EGCA_RETURN_IF_ERROR(CheckDecoder(*it, "decoder"));
    }
    return Status::Ok();
  }

 private:
  Status Error(const std::string& path, const std::string& what) const {
    return InvalidArgument(name_ + ": " + (path.empty() ? "" : path + ": ") + what);
  }
  Status NotSupported(const std::string& path, const std::string& what) const {
    return Unimplemented(name_ + ": " + path + ": " + what);
  }

  Status LoadModel(const json& root) {
    auto it = root.find("model");
    if (it == root.end() || !it->is_object()) return Error("model", "missing or not an object");
    const json& model = *it;
    if (auto t = model.find("type"); t != model.end()) {
      if (!t->is_string()) return Error("model.type", "expected a string");
      if (*t != "BPE") {
        return NotSupported("model.type", Quote(t->get<std::string>()) + " (only BPE is supported)");
      }
    }
    if (auto d = model.find("dropout"); d != model.end() && !d->is_null()) {
      if (!d->is_number()) return Error("model.dropout", "expected a number or null");
      if (d->get<double>() > 0) return NotSupported("model.dropout", "BPE dropout is not supported");
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      if (auto f = model.find(key); f != model.end() && !f->is_null()) {
        if (!f->is_string()) return Error(std::string("model.") + key, "expected a string or null");
        if (!f->get<std::string>().empty()) {
          return NotSupported(std::string("model.") + key, "must be empty for byte-level BPE");
        }
      }
    }
    if (auto f = model.find("ignore_merges"); f != model.end() && !f->is_null()) {
      if (!f->is_boolean()) return Error("model.ignore_merges", "expected a boolean");
      impl_->bpe.set_ignore_merges(f->get<bool>());
    }

    auto vocab = model.find("vocab");
    if (vocab == model.end() || !vocab->is_object()) {
      return Error("model.vocab", "missing or not an object");
    }
    int32_t max_id = -1;
    for (auto v = vocab->begin(); v != vocab->end(); ++v) {
      if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > INT32_MAX) {
        return Error("model.vocab[" + Quote(v.key()) + "]", "expected a non-negative integer id");
      }
      max_id = std::max(max_id, v->get<int32_t>());
    }
    Grow(max_id + 1);
    impl_->text_to_id.reserve(vocab->size() + 64);
    impl_->bpe.Reserve(vocab->size());
    std::string bytes;
    for (auto v = vocab->begin(); v != vocab->end(); ++v) {
      const int32_t id = v->get<int32_t>();
      // A spelling outside the byte-level alphabet stands for its own UTF-8 bytes.
      if (!ByteLevelToBytes(v.key(), &bytes)) bytes = v.key();
      impl_->id_text[id] = v.key();
      impl_->bpe.AddToken(id, bytes);
      impl_->id_bytes[id] = std::move(bytes);
      impl_->text_to_id.emplace(v.key(), id);
    }
    const int missing = impl_->bpe.Finish();
    if (missing >= 0) {
      char hex[16];
      snprintf(hex, sizeof(hex), "0x%02X", missing);
      return Error("model.vocab", std::string("no token for byte ") + hex +
                                      " (not a byte-level vocabulary)");
    }

    auto merges = model.find("merges");
    if (merges == model.end() || !merges->is_array()) {
      return Error("model.merges", "missing or not an array");
    }
    impl_->bpe.ReserveMerges(merges->size());
    int32_t rank = 0;
    std::string left, right, joined;
    const auto find = [&](const std::string& token) -> int32_t {
      auto f = impl_->text_to_id.find(token);
      return f == impl_->text_to_id.end() ? -1 : f->second;
    };
    for (const json& m : *merges) {
      // Built only on error: 150k merges make per-entry path strings visible in load time.
      const auto path = [&] { return "model.merges[" + std::to_string(rank) + "]"; };
      if (m.is_string()) {
        const std::string& s = m.get_ref<const std::string&>();
        const size_t space = s.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == s.size() ||
            s.find(' ', space + 1) != std::string::npos) {
          return Error(path(), "expected \"a b\" or [a, b], got " + Quote(s));
        }
        left.assign(s, 0, space);
        right.assign(s, space + 1, std::string::npos);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        left = m[0].get_ref<const std::string&>();
        right = m[1].get_ref<const std::string&>();
      } else {
        return Error(path(), "expected \"a b\" or [a, b]");
      }
      joined.assign(left).append(right);
      const int32_t a = find(left);
      const int32_t b = find(right);
      const int32_t merged = find(joined);
      if (a < 0) return Error(path(), Quote(left) + " is not in model.vocab");
      if (b < 0) return Error(path(), Quote(right) + " is not in model.vocab");
      if (merged < 0) return Error(path(), "merged token " + Quote(joined) + " is not in model.vocab");
      impl_->bpe.AddMerge(a, b, rank, merged);
      ++rank;
    }
    return Status::Ok();
  }

  Status LoadAddedTokens(const json& root) {
    auto it = root.find("added_tokens");
    if (it == root.end() || it->is_null()) return Status::Ok();
    if (!it->is_array()) return Error("added_tokens", "expected an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& t = (*it)[i];
      const std::string path = "added_tokens[" + std::to_string(i) + "]";
      if (!t.is_object()) return Error(path, "expected an object");
      AddedToken token;
      auto id = t.find("id");
      if (id == t.end() || !id->is_number_integer() || id->get<int64_t>() < 0 ||
          id->get<int64_t>() > INT32_MAX) {
        return Error(path + ".id", "expected a non-negative integer");
      }
      token.id = id->get<int32_t>();
      auto content = t.find("content");
      if (content == t.end() || !content->is_string() || content->get_ref<const std::string&>().empty()) {
        return Error(path + ".content", "expected a non-empty string");
      }
      token.content = content->get<std::string>();
      struct Flag {
        const char* key;
        bool* field;
      };
      // HF's defaults: normalized defaults to !special.
      token.normalized = !t.value("special", false);
      for (Flag f : {Flag{"special", &token.special}, Flag{"lstrip", &token.lstrip},
                     Flag{"rstrip", &token.rstrip}, Flag{"single_word", &token.single_word},
                     Flag{"normalized", &token.normalized}}) {
        auto v = t.find(f.key);
        if (v == t.end() || v->is_null()) continue;
        if (!v->is_boolean()) return Error(path + "." + f.key, "expected a boolean");
        *f.field = v->get<bool>();
      }
      if (token.id >= static_cast<int32_t>(impl_->id_text.size())) Grow(token.id + 1);
      impl_->id_text[token.id] = token.content;
      impl_->id_bytes[token.id] = token.content;
      impl_->id_special[token.id] = token.special ? 1 : 0;
      impl_->text_to_id[token.content] = token.id;
      impl_->added.push_back(std::move(token));
    }
    impl_->raw_matcher.Build(&impl_->added, /*normalized=*/false);
    impl_->normalized_matcher.Build(&impl_->added, /*normalized=*/true);
    return Status::Ok();
  }

  Status LoadNormalizer(const json& n, const std::string& path) {
    if (n.is_null()) return Status::Ok();
    if (!n.is_object()) return Error(path, "expected an object or null");
    auto type = n.find("type");
    if (type == n.end() || !type->is_string()) return Error(path + ".type", "expected a string");
    const std::string t = type->get<std::string>();
    if (t == "NFC") impl_->normalizers.push_back(NormalizationForm::kNFC);
    else if (t == "NFD") impl_->normalizers.push_back(NormalizationForm::kNFD);
    else if (t == "NFKC") impl_->normalizers.push_back(NormalizationForm::kNFKC);
    else if (t == "NFKD") impl_->normalizers.push_back(NormalizationForm::kNFKD);
    else if (t == "Sequence") {
      auto list = n.find("normalizers");
      if (list == n.end() || !list->is_array()) return Error(path + ".normalizers", "expected an array");
      for (size_t i = 0; i < list->size(); ++i) {
        EGCA_RETURN_IF_ERROR(LoadNormalizer((*list)[i], path + ".normalizers[" + std::to_string(i) + "]"));
      }
    } else {
      return NotSupported(path + ".type", "normalizer " + Quote(t) + " is not supported");
    }
    return Status::Ok();
  }

  Status LoadPreTokenizer(const json& p, const std::string& path, bool* byte_level) {
    if (p.is_null()) return Status::Ok();
    if (!p.is_object()) return Error(path, "expected an object or null");
    auto type = p.find("type");
    if (type == p.end() || !type->is_string()) return Error(path + ".type", "expected a string");
    const std::string t = type->get<std::string>();
    if (t == "Sequence") {
      auto list = p.find("pretokenizers");
      if (list == p.end() || !list->is_array()) return Error(path + ".pretokenizers", "expected an array");
      for (size_t i = 0; i < list->size(); ++i) {
        EGCA_RETURN_IF_ERROR(LoadPreTokenizer((*list)[i], path + ".pretokenizers[" + std::to_string(i) + "]", byte_level));
      }
      return Status::Ok();
    }
    if (t == "ByteLevel") {
      if (p.value("add_prefix_space", false)) {
        return NotSupported(path + ".add_prefix_space", "true is not supported");
      }
      *byte_level = true;
      if (p.value("use_regex", true)) return AddSplitter(kGpt2Pattern, false, path);
      return Status::Ok();
    }
    if (t == "Split") {
      const std::string behavior = p.value("behavior", std::string("Isolated"));
      if (behavior != "Isolated") {
        return NotSupported(path + ".behavior", Quote(behavior) + " (only \"Isolated\" is supported)");
      }
      if (p.value("invert", false)) return NotSupported(path + ".invert", "true is not supported");
      auto pattern = p.find("pattern");
      if (pattern == p.end() || !pattern->is_object()) {
        return Error(path + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
      }
      if (auto r = pattern->find("Regex"); r != pattern->end() && r->is_string()) {
        return AddSplitter(r->get<std::string>(), false, path + ".pattern.Regex");
      }
      if (auto s = pattern->find("String"); s != pattern->end() && s->is_string()) {
        return AddSplitter(s->get<std::string>(), true, path + ".pattern.String");
      }
      return Error(path + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
    }
    return NotSupported(path + ".type", "pre-tokenizer " + Quote(t) + " is not supported");
  }

  Status AddSplitter(const std::string& pattern, bool literal, const std::string& path) {
    auto splitter = RegexSplitter::Compile(pattern, literal);
    if (!splitter.ok()) return Error(path, splitter.status().message());
    impl_->splitters.push_back(std::move(splitter).value());
    return Status::Ok();
  }

  Status CheckDecoder(const json& d, const std::string& path) {
    if (d.is_null()) return Status::Ok();
    if (!d.is_object()) return Error(path, "expected an object or null");
    const std::string t = d.value("type", std::string());
    if (t == "ByteLevel") return Status::Ok();
    if (t == "Sequence") {
      auto list = d.find("decoders");
      if (list == d.end() || !list->is_array()) return Error(path + ".decoders", "expected an array");
      for (size_t i = 0; i < list->size(); ++i) {
        EGCA_RETURN_IF_ERROR(CheckDecoder((*list)[i], path + ".decoders[" + std::to_string(i) + "]"));
      }
      return Status::Ok();
    }
    return NotSupported(path + ".type", "decoder " + Quote(t) + " is not supported (byte-level only)");
  }

  void Grow(int32_t size) {
    if (static_cast<int32_t>(impl_->id_text.size()) >= size) return;
    impl_->id_text.resize(size);
    impl_->id_bytes.resize(size);
    impl_->id_special.resize(size, 0);
  }

  const std::string& name_;
  Tokenizer::Impl* impl_;
};

}  // namespace

StatusOr<std::unique_ptr<Tokenizer::Impl>> LoadTokenizerJson(std::string_view text,
                                                            const std::string& name,
                                                            const TokenizerOptions& options) {
  EGCA_RETURN_IF_ERROR(CheckJsonDepth(text, name));
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return InvalidArgument(name + ": not valid JSON: " + e.what());
  }
  auto impl = std::make_unique<Tokenizer::Impl>();
  impl->name = name;
  EGCA_RETURN_IF_ERROR(Loader(name, impl.get()).Load(root));
  if (options.cache_capacity > 0) impl->cache = std::make_unique<WordCache>(options.cache_capacity);
  return impl;
}

}  // namespace egca::trainer
