// egca-tokenize: encode stdin with a Hugging Face tokenizer.json and print ids, byte
// offsets and token strings as JSON, or decode a JSON array of ids back to text.
//
//   egca-tokenize --tokenizer DIR_OR_JSON [--offsets] [--plain-specials] [--span B:E] < text
//   egca-tokenize --tokenizer DIR_OR_JSON --decode [--skip-special] < ids.json
//   egca-tokenize --tokenizer DIR_OR_JSON --chat qwen3|chatml|TEMPLATE.json
//                 [--generation-prompt] [--no-thinking] [--offsets] < messages.json
//
// Exit codes: 0 ok, 2 bad usage or unreadable/malformed input (one line on stderr).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>

#include "egca/core/json_depth.h"
#include "egca/tools/cli.h"
#include "egca/trainer/policy/chat_template.h"
#include "egca/trainer/policy/tokenizer.h"

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
  std::string chat_template;
  bool generation_prompt = false;
  bool no_thinking = false;
  app.add_option("--tokenizer", tokenizer_path, "tokenizer.json or a directory containing it")
      ->required();
  app.add_flag("--offsets", offsets, "also print byte offsets and token strings per token");
  app.add_flag("--decode", decode, "read a JSON array of ids on stdin and print the text");
  app.add_flag("--skip-special", skip_special, "with --decode: drop special tokens");
  app.add_flag("--plain-specials", plain_specials,
               "encode special-token text (\"<|im_end|>\") as plain text, not as specials");
  app.add_option("--span", span_spec,
                 "B:E - report which tokens overlap input bytes [B, E) (implies --offsets)");
  app.add_option("--chat", chat_template,
                 "format a JSON array of {role, content} messages on stdin with a chat template "
                 "(qwen3, chatml, or a template .json) and encode the result");
  app.add_flag("--generation-prompt", generation_prompt, "with --chat: append the assistant turn opening");
  app.add_flag("--no-thinking", no_thinking, "with --chat: Qwen3 enable_thinking=false");
  if (auto exit_code = egca::tools::ParseArgs(app, argc, argv, "egca-tokenize")) return *exit_code;
  uint32_t span_begin = 0, span_end = 0;
  const bool want_span = !span_spec.empty();
  if (want_span && !ParseSpan(span_spec, &span_begin, &span_end)) {
    return Fail("--span: expected B:E with 0 <= B <= E, got '" + span_spec + "'");
  }
  if (decode && (offsets || want_span || plain_specials || !chat_template.empty())) {
    return Fail("--decode cannot be combined with --offsets, --span, --plain-specials or --chat");
  }
  if (chat_template.empty() && (generation_prompt || no_thinking)) {
    return Fail("--generation-prompt and --no-thinking need --chat");
  }
  std::optional<egca::trainer::ChatTemplate> chat;
  if (chat_template == "qwen3") {
    chat = egca::trainer::ChatTemplate::Qwen3();
  } else if (chat_template == "chatml") {
    chat = egca::trainer::ChatTemplate::ChatML();
  } else if (!chat_template.empty()) {
    auto loaded = egca::trainer::ChatTemplate::FromJsonFile(chat_template);
    if (!loaded.ok()) return Fail("--chat: " + loaded.status().message());
    chat = std::move(loaded).value();
  }

  // Input is validated before the (~0.5 s) tokenizer load so bad input fails fast.
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  json message_spans;
  if (egca::Status deep = egca::CheckJsonDepth(input, "stdin"); !deep.ok() && (chat || decode)) {
    return Fail(deep.message());
  }
  if (chat) {
    // Messages in, formatted text out; the rest works on that text.
    json messages = json::parse(input, nullptr, /*allow_exceptions=*/false);
    if (messages.is_discarded() || !messages.is_array()) {
      return Fail("stdin: expected a JSON array of {\"role\": ..., \"content\": ...}");
    }
    std::vector<egca::trainer::ChatMessage> list;
    for (size_t i = 0; i < messages.size(); ++i) {
      const json& m = messages[i];
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string() ||
          !m.contains("content") || !m["content"].is_string()) {
        return Fail("stdin: [" + std::to_string(i) + "]: expected {\"role\": string, \"content\": string}");
      }
      list.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    }
    egca::trainer::ChatFormatOptions chat_options;
    chat_options.add_generation_prompt = generation_prompt;
    chat_options.enable_thinking = !no_thinking;
    auto formatted = chat->Apply(list, chat_options);
    if (!formatted.ok()) return Fail("stdin: " + formatted.status().message());
    input = formatted->text;
    message_spans = json::array();
    for (size_t i = 0; i < list.size(); ++i) {
      message_spans.push_back({{"role", list[i].role},
                               {"content_begin", formatted->content_spans[i].begin},
                               {"content_end", formatted->content_spans[i].end}});
    }
  }

  std::vector<int32_t> ids;
  if (decode) {
    json ids_json = json::parse(input, nullptr, /*allow_exceptions=*/false);
    if (ids_json.is_discarded() || !ids_json.is_array()) {
      return Fail("stdin: expected a JSON array of token ids");
    }
    for (size_t i = 0; i < ids_json.size(); ++i) {
      const json& v = ids_json[i];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
        return Fail("stdin: [" + std::to_string(i) + "]: not a token id");
      }
      ids.push_back(v.get<int32_t>());
    }
  }
  if (want_span && span_end > input.size()) {
    return Fail("--span: " + span_spec + " is past the end of the input (" +
                std::to_string(input.size()) + " bytes)");
  }

  auto tokenizer = Tokenizer::FromFile(tokenizer_path);
  if (!tokenizer.ok()) return Fail(tokenizer.status().message());
  if (decode) {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] >= (*tokenizer)->vocab_size()) {
        return Fail("stdin: [" + std::to_string(i) + "]: " + std::to_string(ids[i]) +
                    " is not a token id of " + tokenizer_path);
      }
    }
    std::cout << (*tokenizer)->Decode(ids, skip_special);
    return 0;
  }

  egca::trainer::EncodeOptions options;
  options.parse_special_tokens = !plain_specials;
  const Encoding encoding = (*tokenizer)->Encode(input, options);
  json out;
  out["ids"] = encoding.ids;
  if (chat) {
    out["text"] = input;
    for (json& m : message_spans) {
      const auto range = egca::trainer::TokensOverlapping(
          encoding.offsets, m["content_begin"].get<uint32_t>(), m["content_end"].get<uint32_t>());
      m["first_token"] = range.first;
      m["last_token"] = range.last;
    }
    out["messages"] = std::move(message_spans);
  }
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
