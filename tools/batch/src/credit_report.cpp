#include "egca/batch/credit_report.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "egca/core/mix.h"

namespace egca::batch {

double PartialCreditReward(const SampleRecord& r) {
  if (r.empty || r.mode == FailureMode::kSyntax) return 0.0;
  return r.i_c ? r.r_hat : 0.0;
}

std::string SyntaxKind(const SampleRecord& r) {
  if (!r.error_type.empty()) return r.error_type;
  const size_t colon = r.error_message.find(':');
  std::string kind = r.error_message.substr(0, colon);
  // A class name: one identifier (error messages of egca's own, "does not parse", are not).
  const bool identifier =
      !kind.empty() && std::all_of(kind.begin(), kind.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
      });
  return identifier && colon != std::string::npos ? kind : "unknown";
}

CreditSummary BuildCreditSummary(const std::vector<const SampleRecord*>& records,
                                 const std::vector<int>& group_sizes, uint64_t seed) {
  CreditSummary out;
  out.seed = seed;
  std::map<std::string, int64_t> kinds;
  std::map<std::string, std::vector<const SampleRecord*>> by_problem;
  for (const SampleRecord* r : records) {
    by_problem[r->problem].push_back(r);
    if (r->empty) continue;
    ++out.samples;
    if (r->mode == FailureMode::kSyntax) {
      ++out.syntax;
      kinds[SyntaxKind(*r)]++;
    }
  }
  out.syntax_by_kind.assign(kinds.begin(), kinds.end());
  std::stable_sort(out.syntax_by_kind.begin(), out.syntax_by_kind.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });

  for (int g : group_sizes) {
    CreditGroupCounts c;
    c.group_size = g;
    if (g < 2) {
      out.by_group_size.push_back(c);
      continue;
    }
    const size_t G = static_cast<size_t>(g);
    for (const auto& [problem, samples] : by_problem) {
      // Seeded Fisher-Yates: the same groups on every platform (std::shuffle is not).
      std::vector<const SampleRecord*> order = samples;
      uint64_t state = SplitMix64(seed ^ Fnv1a64(problem) ^ SplitMix64(static_cast<uint64_t>(g)));
      for (size_t i = order.size(); i > 1; --i) {
        state = SplitMix64(state);
        std::swap(order[i - 1], order[state % i]);
      }
      const size_t groups = order.size() / G;
      c.ungrouped_samples += static_cast<int64_t>(order.size() - groups * G);
      if (groups > 0) ++c.problems;
      for (size_t k = 0; k < groups; ++k) {
        ++c.groups;
        c.grouped_samples += g;
        double mean = 0;
        bool mixed = false, has_logic = false, has_syntax = false;
        double best_logic = -1, worst_syntax = 2;
        for (size_t i = k * G; i < (k + 1) * G; ++i) {
          const SampleRecord& r = *order[i];
          const double reward = PartialCreditReward(r);
          mean += reward;
          if (r.empty) continue;
          if (r.mode == FailureMode::kSyntax || r.mode == FailureMode::kConstraint) mixed = true;
          if (r.mode == FailureMode::kLogic) {
            has_logic = true;
            best_logic = std::max(best_logic, reward);
          }
          if (r.mode == FailureMode::kSyntax) {
            has_syntax = true;
            worst_syntax = std::min(worst_syntax, reward);
          }
        }
        mean /= static_cast<double>(G);
        if (has_logic && has_syntax) {
          ++c.groups_with_logic_and_syntax;
          if (best_logic > worst_syntax) ++c.groups_logic_outranks_syntax;
        }
        for (size_t i = k * G; i < (k + 1) * G; ++i) {
          const SampleRecord& r = *order[i];
          if (r.empty || r.mode != FailureMode::kLogic || !r.localized) continue;
          ++c.logic_localized;
          // A_i = R_i - mean R, compared with a tolerance: equal rewards must not count as
          // positive through rounding of the mean.
          if (PartialCreditReward(r) - mean > 1e-12) {
            ++c.logic_localized_positive;
            if (mixed) ++c.logic_localized_positive_mixed;
          }
        }
      }
    }
    out.by_group_size.push_back(c);
  }
  return out;
}

}  // namespace egca::batch
