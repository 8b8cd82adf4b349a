#include "egca/trainer/rl/problem_prompt.h"

namespace egca::trainer {

std::string ProblemUserMessage(const datasets::ProblemRecord& record, const std::string& instruction,
                               const std::string& constraints_suffix) {
  std::string user = instruction.empty() ? "" : instruction + "\n\n";
  user += record.prompt;
  if (!record.starter_code.empty()) user += "\n\nStart from this code:\n```python\n" + record.starter_code + "\n```";
  if (!constraints_suffix.empty()) user += "\n\n" + constraints_suffix;
  return user;
}

StatusOr<std::string> FormatConversation(const ChatTemplate& chat, const std::string& system,
                                         const std::vector<ChatMessage>& turns) {
  std::vector<ChatMessage> messages;
  if (!system.empty()) messages.push_back({"system", system});
  messages.insert(messages.end(), turns.begin(), turns.end());
  ChatFormatOptions fo;
  fo.add_generation_prompt = true;
  fo.enable_thinking = false;
  EGCA_ASSIGN_OR_RETURN(auto formatted, chat.Apply(messages, fo));
  return formatted.text;
}

}  // namespace egca::trainer
