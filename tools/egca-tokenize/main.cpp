// egca-tokenize: encode stdin with a Hugging Face tokenizer.json and print ids, byte
// offsets and token strings as JSON, or decode a JSON array of ids back to text.
//
//   egca-tokenize --tokenizer DIR_OR_JSON [--offsets] [--plain-specials] [--span B:E] < text
//   egca-tokenize --tokenizer DIR_OR_JSON --decode [--skip-special] < ids.json
//
// Exit codes: 0 ok, 2 bad usage or unreadable/malformed input (one line on stderr).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "egca/trainer/tokenizer.h"

namespace {

using egca::trainer::Encoding;
using egca::trainer::Tokenizer;
using nlohmann::json;

constexpr int kUsageError = 2;

int Fail(const std::string& message) {
  std::fprintf(stderr, "egca-tokenize: %s\n", message.c_str());
  return kUsageError;
}

// Text of bytes that may not be valid UTF-8 (a token holding part of a character): JSON
// needs valid UTF-8, so invalid bytes are shown as U+FFFD and the exact bytes are given
// separately in "bytes_hex".
std::string Hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

bool ParseSpan(const std::string& spec, uint32_t* begin, uint32_t* end) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) return false;
  try {
    size_t used = 0;
    const unsigned long b = std::stoul(spec.substr(0, colon), &used);
    if (used != colon) return false;
    const std::string rest = spec.substr(colon + 1);
    const unsigned long e = std::stoul(rest, &used);
    if (used != rest.size() || e < b || e > UINT32_MAX) return false;
    *begin = static_cast<uint32_t>(b);
    *end = static_cast<uint32_t>(e);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Encode text (stdin) with a tokenizer.json, or decode ids (--decode)."};
  std::string tokenizer_path;
  bool offsets = false;
  bool decode = false;
  bool skip_special = false;
  bool plain_specials = false;
  std::string span_spec;
  app.add_option("--tokenizer", tokenizer_path, "tokenizer.json or a directory containing it")
      ->required();
  app.add_flag("--offsets", offsets, "also print byte offsets and token strings per token");
  app.add_flag("--decode", decode, "read a JSON array of ids on stdin and print the text");
  app.add_flag("--skip-special", skip_special, "with --decode: drop special tokens");
  app.add_flag("--plain-specials", plain_specials,
               "encode special-token text (\"<|im_end|>\") as plain text, not as specials");
  app.add_option("--span", span_spec,
                 "B:E - report which tokens overlap input bytes [B, E) (implies --offsets)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return Fail(e.what());
  }
  uint32_t span_begin = 0, span_end = 0;
  const bool want_span = !span_spec.empty();
  if (want_span && !ParseSpan(span_spec, &span_begin, &span_end)) {
    return Fail("--span: expected B:E with 0 <= B <= E, got '" + span_spec + "'");
  }
  if (decode && (offsets || want_span || plain_specials)) {
    return Fail("--decode cannot be combined with --offsets, --span or --plain-specials");
  }

  auto tokenizer = Tokenizer::FromFile(tokenizer_path);
  if (!tokenizer.ok()) return Fail(tokenizer.status().message());
  const std::string input((std::istreambuf_iterator<char>(std::cin)),
                          std::istreambuf_iterator<char>());

  if (decode) {
    json ids_json = json::parse(input, nullptr, /*allow_exceptions=*/false);
    if (ids_json.is_discarded() || !ids_json.is_array()) {
      return Fail("stdin: expected a JSON array of token ids");
    }
    std::vector<int32_t> ids;
    for (size_t i = 0; i < ids_json.size(); ++i) {
      const json& v = ids_json[i];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
          v.get<int64_t>() >= (*tokenizer)->vocab_size()) {
        return Fail("stdin: [" + std::to_string(i) + "]: not a token id of " + tokenizer_path);
      }
      ids.push_back(v.get<int32_t>());
    }
    std::cout << (*tokenizer)->Decode(ids, skip_special);
    return 0;
  }

  if (want_span && span_end > input.size()) {
    return Fail("--span: " + span_spec + " is past the end of the input (" +
                std::to_string(input.size()) + " bytes)");
  }
  egca::trainer::EncodeOptions options;
  options.parse_special_tokens = !plain_specials;
  const Encoding encoding = (*tokenizer)->Encode(input, options);
  json out;
  out["ids"] = encoding.ids;
  if (offsets || want_span) {
    json tokens = json::array();
    for (size_t i = 0; i < encoding.ids.size(); ++i) {
      const auto& o = encoding.offsets[i];
      const std::string_view bytes = std::string_view(input).substr(o.begin, o.end - o.begin);
      tokens.push_back({{"id", encoding.ids[i]},
                        {"begin", o.begin},
                        {"end", o.end},
                        {"token", std::string((*tokenizer)->TokenText(encoding.ids[i]))},
                        {"text", (*tokenizer)->Decode({encoding.ids[i]})},
                        {"bytes_hex", Hex(bytes)}});
    }
    out["tokens"] = std::move(tokens);
  }
  if (want_span) {
    const auto range = egca::trainer::TokensOverlapping(encoding.offsets, span_begin, span_end);
    out["span"] = {{"begin", span_begin},
                   {"end", span_end},
                   {"text", input.substr(span_begin, span_end - span_begin)},
                   {"first_token", range.first},
                   {"last_token", range.last}};
  }
  std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  return 0;
}
