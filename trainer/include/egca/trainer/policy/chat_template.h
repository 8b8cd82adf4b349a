// Chat formatting for instruction-tuned models: turns (role, content) messages into the
// prompt text a model was trained on. Built in: ChatML (Qwen2/Qwen2.5) and Qwen3 (ChatML
// plus the empty think block that disables thinking). Other models: a small JSON format
// with a prefix and suffix per role (docs/tokenizer.md). There is no Jinja engine: HF
// `chat_template` strings are not executed; tool calls and reasoning_content rewriting
// are not reproduced.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "egca/core/status.h"
#include "egca/trainer/policy/tokenizer.h"

namespace egca::trainer {

struct ChatMessage {
  std::string role;     // "system", "user", "assistant", or any role the template knows
  std::string content;  // inserted verbatim (special-token text in it is not escaped)
};

struct ChatFormatOptions {
  // Append the opening of an assistant turn so the model continues with its answer.
  bool add_generation_prompt = false;
  // Qwen3: false appends the template's no-thinking block ("<think>\n\n</think>\n\n")
  // after the generation prompt, as Qwen3's `enable_thinking=False` does.
  bool enable_thinking = true;
};

// The formatted text and where each message landed in it (byte ranges into `text`).
struct FormattedChat {
  std::string text;
  std::vector<TokenOffset> content_spans;  // per message: its content
  std::vector<TokenOffset> message_spans;  // per message: prefix + content + suffix
  TokenOffset generation_prompt;           // empty range at the end when not added
};

// How one role is wrapped: prefix + content + suffix. "{role}" in either string is
// replaced by the message's role (useful in a template's default_role).
struct RoleFormat {
  std::string prefix;
  std::string suffix;
};

class ChatTemplate {
 public:
  // "<|im_start|>{role}\n" + content + "<|im_end|>\n" for every role; generation prompt
  // "<|im_start|>assistant\n".
  static ChatTemplate ChatML();
  // ChatML plus Qwen3's no-thinking block.
  static ChatTemplate Qwen3();
  // Loads the JSON template format; errors name the file and field.
  static StatusOr<ChatTemplate> FromJsonFile(const std::string& path);
  // "qwen3", "chatml", or else a JSON template file (FromJsonFile).
  static StatusOr<ChatTemplate> Named(const std::string& name_or_path);
  static StatusOr<ChatTemplate> FromJson(std::string_view json, const std::string& name);

  // Formats `messages` in order. A role the template does not know (and no default_role)
  // is INVALID_ARGUMENT naming the message index and role. When the template has a
  // default system prompt and the first message is not "system", it is inserted first
  // (its spans are not reported: spans are per given message).
  StatusOr<FormattedChat> Apply(const std::vector<ChatMessage>& messages,
                                const ChatFormatOptions& options = {}) const;

  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::string bos_;                          // emitted once at the start
  std::map<std::string, RoleFormat> roles_;  // exact role -> format
  bool has_default_role_ = false;
  RoleFormat default_role_;
  std::string generation_prompt_;
  std::string no_thinking_;  // appended after the generation prompt when thinking is off
  bool has_default_system_ = false;
  std::string default_system_;
};

}  // namespace egca::trainer
