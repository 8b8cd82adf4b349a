#include "egca/trainer/rl/loss_normalization.h"

namespace egca::trainer {

std::optional<LossNormalization> ParseLossNormalization(std::string_view name) {
  if (name == "sequence") return LossNormalization::kSequence;
  if (name == "token") return LossNormalization::kToken;
  if (name == "constant") return LossNormalization::kConstant;
  return std::nullopt;
}

const char* LossNormalizationName(LossNormalization n) {
  switch (n) {
    case LossNormalization::kSequence:
      return "sequence";
    case LossNormalization::kToken:
      return "token";
    case LossNormalization::kConstant:
      return "constant";
  }
  return "sequence";
}

std::vector<double> LossNormalizationWeights(const std::vector<int64_t>& lengths,
                                             LossNormalization n,
                                             const LossNormalizationBatch& batch) {
  std::vector<double> w(lengths.size(), 1.0);
  if (n == LossNormalization::kSequence) return w;
  for (size_t i = 0; i < lengths.size(); ++i) {
    const double t = static_cast<double>(lengths[i]);
    if (n == LossNormalization::kToken) {
      w[i] = batch.tokens > 0
                 ? static_cast<double>(batch.samples) * t / static_cast<double>(batch.tokens)
                 : 0.0;
    } else {
      w[i] = batch.max_new_tokens > 0 ? t / static_cast<double>(batch.max_new_tokens) : 0.0;
    }
  }
  return w;
}

}  // namespace egca::trainer
