// Credit assignment speed: the per-step cost the trainer pays on top of rollouts.
//
//   BM_EgcaGroupCredit        G = 16 samples x 8,192 tokens: group advantages (eq. 2) and
//                             the token operator (eq. 6) with the paper's mode mix
//   BM_UniformGroupCredit     same group, uniform target (plain GRPO), the baseline
//   BM_MurphyCredit/<mode>    Murphy tree of 8 turn-1 + 64 turn-2 nodes: InterP (b = 4) or
//                             none, MaRS/MeRS backup, node-wise GRPO advantages
//   BM_GrpoMt                 GRPO-MT trajectories on the same tree
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "egca/credit/grpo.h"
#include "egca/credit/murphy.h"
#include "egca/credit/token_credit.h"

namespace egca::credit {
namespace {

constexpr int kGroup = 16;
constexpr int kTokens = 8192;

SourceSpan Span(uint32_t begin, uint32_t end) {
  SourceSpan s;
  s.begin_byte = begin;
  s.end_byte = end;
  return s;
}

// One group as the router would hand it over: completions of 8,192 tokens of 1-6 bytes,
// code after a 40-byte preamble, modes in the proportions of EGCA Table 5
// (45% CORRECT, 35% LOGIC, 12% CONSTRAINT, 8% SYNTAX).
std::vector<CreditSample> MakeGroup(std::vector<double>* rewards) {
  std::mt19937_64 rng(42);
  std::vector<CreditSample> group(kGroup);
  rewards->assign(kGroup, 0.0);
  for (int i = 0; i < kGroup; ++i) {
    CreditSample& s = group[i];
    uint32_t at = 0;
    s.token_bytes.reserve(kTokens);
    for (int t = 0; t < kTokens; ++t) {
      const uint32_t w = 1 + static_cast<uint32_t>(rng() % 6);
      s.token_bytes.push_back({at, at + w});
      at += w;
    }
    s.code_offset = 40;
    s.sample_index = static_cast<uint64_t>(i);
    const int u = static_cast<int>(rng() % 100);
    if (u < 45) {
      s.mode = FailureMode::kCorrect;
      (*rewards)[i] = 1.0;
    } else if (u < 80) {
      s.mode = FailureMode::kLogic;
      (*rewards)[i] = static_cast<double>(rng() % 8) / 8.0;
      const uint32_t b = static_cast<uint32_t>(rng() % (at / 2));
      s.earliest_divergence = Span(b, b + 60);
      s.last_divergence = Span(b + 200, b + 260);
    } else if (u < 92) {
      s.mode = FailureMode::kConstraint;
    } else {
      s.mode = FailureMode::kSyntax;
      const uint32_t b = static_cast<uint32_t>(rng() % (at / 2));
      s.error_span = Span(b, b + 12);
    }
  }
  return group;
}

// reuse = 1: AssignGroupTokenCreditInto with buffers kept across steps (how a trainer
// should call it); reuse = 0: AssignGroupTokenCredit allocating fresh results every step.
void RunGroup(benchmark::State& state, LocalizationTarget target) {
  std::vector<double> rewards;
  std::vector<CreditSample> group = MakeGroup(&rewards);
  TokenCreditOptions options;
  options.target = target;
  const bool reuse = state.range(0) != 0;
  std::vector<TokenCredit> credits;
  for (auto _ : state) {
    const std::vector<double> adv =
        GroupAdvantages(rewards, {AdvantageNormalization::kMeanCentered, 1e-6});
    for (int i = 0; i < kGroup; ++i) group[i].advantage = adv[i];
    TokenCreditStats stats;
    if (reuse) {
      Status status = AssignGroupTokenCreditInto(group, options, &credits, &stats);
      benchmark::DoNotOptimize(status.ok());
    } else {
      StatusOr<std::vector<TokenCredit>> fresh = AssignGroupTokenCredit(group, options, &stats);
      benchmark::DoNotOptimize(fresh.ok());
    }
    benchmark::DoNotOptimize(stats.localized);
  }
  state.SetLabel(reuse ? "reused buffers" : "fresh buffers");
  state.SetItemsProcessed(state.iterations() * kGroup * kTokens);
  state.counters["tokens"] = kGroup * kTokens;
}

void BM_EgcaGroupCredit(benchmark::State& state) {
  RunGroup(state, LocalizationTarget::kEarliestDivergence);
}
BENCHMARK(BM_EgcaGroupCredit)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

void BM_UniformGroupCredit(benchmark::State& state) {
  RunGroup(state, LocalizationTarget::kUniform);
}
BENCHMARK(BM_UniformGroupCredit)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

// Murphy's configuration: 8 responses per prompt in turn 1, up to 8 refinements per failed
// response in turn 2 (every turn-1 response fails here, so 8 + 64 = 72 nodes).
MurphyTree MakeTree() {
  std::mt19937_64 rng(7);
  MurphyTree t;
  for (int i = 0; i < 8; ++i) t.AddResponse(-1, static_cast<double>(rng() % 4) / 4.0);
  for (int p = 0; p < 8; ++p) {
    for (int k = 0; k < 8; ++k) t.AddResponse(p, static_cast<double>(rng() % 5) / 4.0);
  }
  return t;
}

void BM_MurphyCredit(benchmark::State& state) {
  const MurphyTree tree = MakeTree();
  const bool prune = state.range(0) != 0;
  const BackupStrategy backup = state.range(1) == 0 ? BackupStrategy::kMaRS : BackupStrategy::kMeRS;
  int retained = 0;
  for (auto _ : state) {
    const MurphyTree pruned = prune ? Prune(tree, {PruneStrategy::kInterGroup, 4, true}) : tree;
    const std::vector<double> credited = BackupRewards(pruned, {backup, 0.9});
    const NodeAdvantages adv = ComputeNodeAdvantages(pruned, credited);
    benchmark::DoNotOptimize(adv.advantage.data());
    retained = ComputeTreeSizes(pruned).retained;
  }
  state.counters["nodes"] = static_cast<double>(tree.nodes.size());
  state.counters["retained"] = retained;
  state.SetLabel(std::string(prune ? "InterP b=4, " : "unpruned, ") + BackupStrategyName(backup));
}
BENCHMARK(BM_MurphyCredit)
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMicrosecond);

void BM_GrpoMt(benchmark::State& state) {
  const MurphyTree tree = MakeTree();
  for (auto _ : state) {
    const std::vector<MtTrajectory> t = GrpoMtTrajectories(tree);
    benchmark::DoNotOptimize(t.data());
  }
}
BENCHMARK(BM_GrpoMt)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace egca::credit

BENCHMARK_MAIN();
