// The prompt a policy sees for a problem, shared by training (GrpoTrainer), evaluation
// (egca-eval) and revision turns: one user message with the instruction, the statement,
// the starter code and (EGCA eq. 4) the constraints suffix, formatted by a chat template
// with the generation prompt open and thinking off.
#pragma once

#include <string>
#include <vector>

#include "egca/core/status.h"
#include "egca/datasets/problem.h"
#include "egca/trainer/policy/chat_template.h"

namespace egca::trainer {

// instruction + "\n\n" (when not empty) + statement + starter code block + "\n\n" + suffix
// (when not empty).
std::string ProblemUserMessage(const datasets::ProblemRecord& record, const std::string& instruction,
                               const std::string& constraints_suffix = "");

// The chat text of `turns` (user, assistant, user, ...) after an optional system message,
// ending with the assistant's generation prompt.
StatusOr<std::string> FormatConversation(const ChatTemplate& chat, const std::string& system,
                                         const std::vector<ChatMessage>& turns);

}  // namespace egca::trainer
