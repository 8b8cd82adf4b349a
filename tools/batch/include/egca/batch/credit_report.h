// The report's credit section (issue 37): how often the cases that make the paper's
// localized credit harmful arise on real samples.
//
// Each problem's samples (canonical order, then a seeded Fisher-Yates shuffle with
// SplitMix64 draws, so every platform makes the same groups) are cut into groups of G; the
// n mod G left over are not grouped. Per group, the partial-credit reward
// R = R_hat * I_C (0 for SYNTAX and for samples without code: the router's reward, EGCA
// eq. 1) gives A_i = R_i - mean R (EGCA eq. 2). Counted:
//   - localized LOGIC samples (an earliest divergence) and those with A_i > 0: the samples
//     whose positive advantage the paper's operator puts on their own bug;
//   - of those, the ones in a group that also holds a SYNTAX or CONSTRAINT failure;
//   - groups holding a LOGIC and a SYNTAX sample, and of all groups those where some LOGIC
//     sample's R is above some SYNTAX sample's ("a LOGIC sample outranks a SYNTAX one");
// and, over every sample, SYNTAX failures by exception kind (SampleRecord::error_type, or
// the error message's class for stores written before it existed).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "egca/batch/result.h"

namespace egca::batch {

struct CreditGroupCounts {
  int64_t group_size = 0;  // G
  int64_t groups = 0;
  int64_t problems = 0;        // problems with at least one group
  int64_t grouped_samples = 0;  // groups x G
  int64_t ungrouped_samples = 0;  // the n mod G of every problem (and problems with n < G)
  int64_t logic_localized = 0;
  int64_t logic_localized_positive = 0;  // A_i > 0
  int64_t logic_localized_positive_mixed = 0;  // ... in a group with a SYNTAX/CONSTRAINT failure
  int64_t groups_with_logic_and_syntax = 0;
  int64_t groups_logic_outranks_syntax = 0;

  double positive_share() const {
    return logic_localized == 0 ? 0.0
                                : static_cast<double>(logic_localized_positive) /
                                      static_cast<double>(logic_localized);
  }
  double outranks_share() const {
    return groups == 0 ? 0.0
                       : static_cast<double>(groups_logic_outranks_syntax) /
                             static_cast<double>(groups);
  }
};

struct CreditSummary {
  uint64_t seed = 0;
  std::vector<CreditGroupCounts> by_group_size;  // in the order of the sizes asked for
  int64_t syntax = 0;                            // SYNTAX samples (non-empty)
  int64_t samples = 0;                           // non-empty samples
  std::vector<std::pair<std::string, int64_t>> syntax_by_kind;  // most frequent first
};

// The partial-credit reward of a stored sample: R_hat * I_C, 0 for SYNTAX and empty samples.
double PartialCreditReward(const SampleRecord& r);

// The exception kind of a SYNTAX sample: error_type, else the class before ':' in
// error_message, else "unknown". IndentationError and TabError are SyntaxError's kinds and
// stay as CPython names them.
std::string SyntaxKind(const SampleRecord& r);

// `records`: one per sample, canonical order (problem, key, dup), as BuildReport sorts them.
CreditSummary BuildCreditSummary(const std::vector<const SampleRecord*>& records,
                                 const std::vector<int>& group_sizes, uint64_t seed);

}  // namespace egca::batch
