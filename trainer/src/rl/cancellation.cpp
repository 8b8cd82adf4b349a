#include "egca/trainer/rl/cancellation.h"

#include <cmath>
#include <map>
#include <utility>

namespace egca::trainer {

std::vector<bool> DivergentTokenMask(const std::vector<credit::TokenByteRange>& token_bytes,
                                     const std::optional<SourceSpan>& earliest, bool logic) {
  std::vector<bool> mask(token_bytes.size(), false);
  if (!logic || !earliest) return mask;
  for (uint32_t t : credit::TokensOverlappingSpan(token_bytes, 0, *earliest)) {
    if (t < mask.size()) mask[t] = true;
  }
  return mask;
}

CancellationSums GroupCancellation(const std::vector<CancellationSample>& group) {
  // Trie nodes keyed by (parent node, token id); node 0 is the root (the prompt).
  struct Node {
    double c = 0;
    bool divergent = false;
  };
  std::map<std::pair<int64_t, int32_t>, int64_t> child;
  std::vector<Node> nodes(1);
  CancellationSums s;
  for (const CancellationSample& x : group) {
    const size_t len = x.token_ids.size();
    if (len == 0 || x.advantage == 0 || !std::isfinite(x.advantage)) continue;
    const double a = x.advantage / static_cast<double>(len);
    s.gross += std::fabs(x.advantage);
    s.tokens += static_cast<int64_t>(len);
    int64_t at = 0;
    for (size_t t = 0; t < len; ++t) {
      auto [it, fresh] =
          child.try_emplace({at, x.token_ids[t]}, static_cast<int64_t>(nodes.size()));
      if (fresh) nodes.emplace_back();
      at = it->second;
      nodes[static_cast<size_t>(at)].c += a;
      const bool div = t < x.divergent.size() && x.divergent[t];
      if (div) {
        nodes[static_cast<size_t>(at)].divergent = true;
        ++s.divergent_tokens;
      }
    }
  }
  for (size_t n = 1; n < nodes.size(); ++n) {
    const double m = std::fabs(nodes[n].c);
    s.net += m;
    if (nodes[n].divergent) s.net_divergent += m;
  }
  return s;
}

}  // namespace egca::trainer
