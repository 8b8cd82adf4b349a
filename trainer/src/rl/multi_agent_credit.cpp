// Cooperating agents: the joint tree's credit. Returns backed up leaf to root (MAGRPO-MT:
// R = r + gamma * mean of the children's returns; or egca's MaRS / MeRS), then per group and
// agent the return of each completion (cross: the mean over the joint responses it took part
// in) and its advantage against the group's baseline (mean, max, rloo; optional z-score).
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "egca/trainer/rl/multi_agent.h"

namespace egca::trainer {

std::vector<std::vector<int>> FormJointResponses(const std::string& mode, int64_t agents,
                                                 int64_t g) {
  std::vector<std::vector<int>> out;
  if (mode != "cross") {
    for (int64_t j = 0; j < g; ++j)
      out.emplace_back(static_cast<size_t>(agents), static_cast<int>(j));
    return out;
  }
  std::vector<int> idx(static_cast<size_t>(agents), 0);
  for (;;) {
    out.push_back(idx);
    int64_t a = agents - 1;
    while (a >= 0 && idx[static_cast<size_t>(a)] == g - 1) idx[static_cast<size_t>(a--)] = 0;
    if (a < 0) break;
    ++idx[static_cast<size_t>(a)];
  }
  return out;
}

std::vector<double> BaselineAdvantages(const std::vector<double>& returns,
                                       const std::string& baseline, bool zscore) {
  const size_t n = returns.size();
  std::vector<double> adv(n, 0.0);
  if (n == 0) return adv;
  const double sum = std::accumulate(returns.begin(), returns.end(), 0.0);
  const double mean = sum / static_cast<double>(n);
  const double max = *std::max_element(returns.begin(), returns.end());
  for (size_t k = 0; k < n; ++k) {
    if (baseline == "max") {
      adv[k] = returns[k] - max;
    } else if (baseline == "rloo") {
      adv[k] = n > 1 ? returns[k] - (sum - returns[k]) / static_cast<double>(n - 1) : 0.0;
    } else {
      adv[k] = returns[k] - mean;
    }
  }
  if (zscore) {
    double var = 0;
    for (double r : returns) var += (r - mean) * (r - mean);
    const double std = std::sqrt(var / static_cast<double>(n));
    if (std > 1e-12) {
      for (double& a : adv) a /= std;
    }
  }
  return adv;
}

Status CreditJointTree(JointTree* tree, int64_t agents, int64_t g, const JointCreditOptions& o) {
  // Groups are created parent before child, so a reverse sweep sees children first.
  for (size_t gi = tree->groups.size(); gi-- > 0;) {
    JointGroup& grp = tree->groups[gi];
    for (int id : grp.nodes) {
      JointNode& node = tree->nodes[static_cast<size_t>(id)];
      node.ret = node.reward;
      if (node.child_group < 0) continue;
      const JointGroup& child = tree->groups[static_cast<size_t>(node.child_group)];
      if (child.nodes.empty()) continue;
      if (static_cast<size_t>(node.child_group) <= gi) {
        return Internal(fmt::format("joint tree: group {} expands into earlier group {}", gi,
                                    node.child_group));
      }
      double sum = 0, best = -HUGE_VAL;
      for (int c : child.nodes) {
        sum += tree->nodes[static_cast<size_t>(c)].ret;
        best = std::max(best, tree->nodes[static_cast<size_t>(c)].ret);
      }
      const double mean = sum / static_cast<double>(child.nodes.size());
      if (o.backup == "mars") {
        node.ret = std::max(node.reward, o.gamma * best);
      } else if (o.backup == "mers") {
        node.ret = (node.reward + o.gamma * mean) / 2;
      } else {
        node.ret = node.reward + o.gamma * mean;
      }
    }
  }
  for (JointGroup& grp : tree->groups) {
    grp.agent_return.assign(static_cast<size_t>(agents),
                            std::vector<double>(static_cast<size_t>(g), 0.0));
    grp.agent_advantage = grp.agent_return;
    for (int64_t a = 0; a < agents; ++a) {
      std::vector<double> sum(static_cast<size_t>(g), 0.0), count(static_cast<size_t>(g), 0.0);
      for (int id : grp.nodes) {
        const JointNode& node = tree->nodes[static_cast<size_t>(id)];
        const int k = node.members[static_cast<size_t>(a)];
        sum[static_cast<size_t>(k)] += node.ret;
        count[static_cast<size_t>(k)] += 1;
      }
      std::vector<double>& ret = grp.agent_return[static_cast<size_t>(a)];
      for (int64_t k = 0; k < g; ++k) {
        if (count[static_cast<size_t>(k)] == 0) {
          return Internal(
              fmt::format("joint tree: agent {}'s completion {} is in no joint response", a, k));
        }
        ret[static_cast<size_t>(k)] = sum[static_cast<size_t>(k)] / count[static_cast<size_t>(k)];
      }
      grp.agent_advantage[static_cast<size_t>(a)] = BaselineAdvantages(ret, o.advantage, o.zscore);
    }
  }
  return Status::Ok();
}

}  // namespace egca::trainer
