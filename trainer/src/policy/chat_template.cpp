#include "egca/trainer/policy/chat_template.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/core/json_depth.h"

namespace egca::trainer {
namespace {

using nlohmann::json;

std::string ReplaceRole(const std::string& pattern, const std::string& role) {
  std::string out;
  size_t pos = 0;
  for (size_t at; (at = pattern.find("{role}", pos)) != std::string::npos; pos = at + 6) {
    out.append(pattern, pos, at - pos);
    out += role;
  }
  out.append(pattern, pos, std::string::npos);
  return out;
}

}  // namespace

ChatTemplate ChatTemplate::ChatML() {
  ChatTemplate t;
  t.name_ = "chatml";
  t.has_default_role_ = true;
  t.default_role_ = RoleFormat{"<|im_start|>{role}\n", "<|im_end|>\n"};
  t.generation_prompt_ = "<|im_start|>assistant\n";
  return t;
}

ChatTemplate ChatTemplate::Qwen3() {
  ChatTemplate t = ChatML();
  t.name_ = "qwen3";
  t.no_thinking_ = "<think>\n\n</think>\n\n";
  return t;
}

StatusOr<ChatTemplate> ChatTemplate::FromJsonFile(const std::string& path) {
  EGCA_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  return FromJson(text, path);
}

StatusOr<ChatTemplate> ChatTemplate::FromJson(std::string_view text, const std::string& name) {
  EGCA_RETURN_IF_ERROR(CheckJsonDepth(text, name));
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return InvalidArgument(name + ": not valid JSON: " + e.what());
  }
  const auto error = [&](const std::string& path, const std::string& what) {
    return InvalidArgument(name + ": " + path + ": " + what);
  };
  if (!root.is_object()) return error("(root)", "expected an object");
  static const char* const kKnown[] = {"name", "bos", "roles", "default_role",
                                       "generation_prompt", "no_thinking", "default_system"};
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (std::find(std::begin(kKnown), std::end(kKnown), it.key()) == std::end(kKnown)) {
      return error(it.key(), "unknown field");
    }
  }
  ChatTemplate t;
  const auto string_field = [&](const char* key, std::string* out) -> Status {
    auto it = root.find(key);
    if (it == root.end() || it->is_null()) return Status::Ok();
    if (!it->is_string()) return error(key, "expected a string");
    *out = it->get<std::string>();
    return Status::Ok();
  };
  t.name_ = name;
  EGCA_RETURN_IF_ERROR(string_field("name", &t.name_));
  EGCA_RETURN_IF_ERROR(string_field("bos", &t.bos_));
  EGCA_RETURN_IF_ERROR(string_field("generation_prompt", &t.generation_prompt_));
  EGCA_RETURN_IF_ERROR(string_field("no_thinking", &t.no_thinking_));
  if (auto it = root.find("default_system"); it != root.end() && !it->is_null()) {
    EGCA_RETURN_IF_ERROR(string_field("default_system", &t.default_system_));
    t.has_default_system_ = true;
  }
  const auto role_format = [&](const json& j, const std::string& path, RoleFormat* out) -> Status {
    if (!j.is_object()) return error(path, "expected {\"prefix\": ..., \"suffix\": ...}");
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() != "prefix" && it.key() != "suffix") return error(path + "." + it.key(), "unknown field");
      if (!it->is_string()) return error(path + "." + it.key(), "expected a string");
    }
    out->prefix = j.value("prefix", std::string());
    out->suffix = j.value("suffix", std::string());
    return Status::Ok();
  };
  if (auto it = root.find("roles"); it != root.end()) {
    if (!it->is_object()) return error("roles", "expected an object of role -> {prefix, suffix}");
    for (auto r = it->begin(); r != it->end(); ++r) {
      RoleFormat format;
      EGCA_RETURN_IF_ERROR(role_format(*r, "roles." + r.key(), &format));
      t.roles_[r.key()] = std::move(format);
    }
  }
  if (auto it = root.find("default_role"); it != root.end() && !it->is_null()) {
    EGCA_RETURN_IF_ERROR(role_format(*it, "default_role", &t.default_role_));
    t.has_default_role_ = true;
  }
  if (t.roles_.empty() && !t.has_default_role_) {
    return error("roles", "the template defines no role (give roles or default_role)");
  }
  return t;
}

StatusOr<FormattedChat> ChatTemplate::Apply(const std::vector<ChatMessage>& messages,
                                            const ChatFormatOptions& options) const {
  FormattedChat out;
  out.text = bos_;
  const auto format_of = [&](const std::string& role, RoleFormat* format) {
    if (auto it = roles_.find(role); it != roles_.end()) {
      *format = RoleFormat{ReplaceRole(it->second.prefix, role), ReplaceRole(it->second.suffix, role)};
      return true;
    }
    if (!has_default_role_) return false;
    *format = RoleFormat{ReplaceRole(default_role_.prefix, role), ReplaceRole(default_role_.suffix, role)};
    return true;
  };
  const auto pos = [&] { return static_cast<uint32_t>(out.text.size()); };
  RoleFormat format;
  if (has_default_system_ && (messages.empty() || messages[0].role != "system")) {
    if (!format_of("system", &format)) {
      return InvalidArgument("chat template " + name_ + ": default_system needs a system role");
    }
    out.text += format.prefix + default_system_ + format.suffix;
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (!format_of(m.role, &format)) {
      return InvalidArgument("messages[" + std::to_string(i) + "]: role \"" + m.role +
                             "\" is not in chat template " + name_);
    }
    const uint32_t start = pos();
    out.text += format.prefix;
    const uint32_t content_start = pos();
    out.text += m.content;
    out.content_spans.push_back(TokenOffset{content_start, pos()});
    out.text += format.suffix;
    out.message_spans.push_back(TokenOffset{start, pos()});
  }
  const uint32_t gen_start = pos();
  if (options.add_generation_prompt) {
    out.text += generation_prompt_;
    if (!options.enable_thinking) out.text += no_thinking_;
  }
  out.generation_prompt = TokenOffset{gen_start, pos()};
  return out;
}

StatusOr<ChatTemplate> ChatTemplate::Named(const std::string& name_or_path) {
  if (name_or_path == "qwen3") return Qwen3();
  if (name_or_path == "chatml") return ChatML();
  return FromJsonFile(name_or_path);
}

}  // namespace egca::trainer
