// dist/: shards, the launch environment (torchrun, Slurm), and the c10d process group's
// collectives with two ranks in one process (two threads, Gloo over loopback, the store on a
// port the kernel picks): sums, maxima, gathers, the parameter broadcast, the replica
// checksum, and the gradient all-reduce with and without the backward hooks, against sums
// computed by hand.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <future>
#include <map>
#include <thread>

#include "egca/trainer/dist/distribution.h"
#include "egca/trainer/dist/process_group.h"

namespace egca::trainer::dist {
namespace {

TEST(EvenShard, ContiguousRankOrderSizesDifferByOne) {
  // 5 prompts over 2 ranks: [0, 3) and [3, 5).
  EXPECT_EQ(EvenShard(5, 0, 2).begin, 0);
  EXPECT_EQ(EvenShard(5, 0, 2).end, 3);
  EXPECT_EQ(EvenShard(5, 1, 2).begin, 3);
  EXPECT_EQ(EvenShard(5, 1, 2).end, 5);
  // More ranks than prompts: the last ones get nothing.
  EXPECT_EQ(EvenShard(2, 3, 4).size(), 0);
  int64_t covered = 0;
  for (int64_t r = 0; r < 3; ++r) covered += EvenShard(7, r, 3).size();
  EXPECT_EQ(covered, 7);
}

StatusOr<LaunchEnvironment> Read(const std::map<std::string, std::string>& vars,
                                 const std::string& flag = "") {
  return ReadLaunchEnvironment(
      [&](const char* n) -> const char* {
        auto it = vars.find(n);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      flag);
}

TEST(LaunchEnvironment, TorchrunSlurmAndSingleProcess) {
  auto single = Read({});
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->world_size, 1);
  EXPECT_EQ(single->launcher, "");

  auto tr = Read({{"RANK", "3"},
                  {"WORLD_SIZE", "8"},
                  {"LOCAL_RANK", "1"},
                  {"MASTER_ADDR", "10.0.0.2"},
                  {"MASTER_PORT", "29600"}});
  ASSERT_TRUE(tr.ok()) << tr.status().ToString();
  EXPECT_EQ(tr->launcher, "torchrun");
  EXPECT_EQ(tr->rank, 3);
  EXPECT_EQ(tr->world_size, 8);
  EXPECT_EQ(tr->local_rank, 1);
  EXPECT_EQ(tr->master_addr, "10.0.0.2");
  EXPECT_EQ(tr->port, 29600);

  // srun: the master from the node list's first host, the default port.
  auto sl = Read({{"SLURM_PROCID", "5"},
                  {"SLURM_NTASKS", "16"},
                  {"SLURM_LOCALID", "5"},
                  {"SLURM_JOB_NODELIST", "gpu[007-008,012],cpu1"}});
  ASSERT_TRUE(sl.ok()) << sl.status().ToString();
  EXPECT_EQ(sl->launcher, "slurm");
  EXPECT_EQ(sl->rank, 5);
  EXPECT_EQ(sl->world_size, 16);
  EXPECT_EQ(sl->local_rank, 5);
  EXPECT_EQ(sl->master_addr, "gpu007");
  EXPECT_EQ(sl->port, 29500);
  // --master-addr wins over the node list, MASTER_ADDR over both.
  auto flag =
      Read({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n1"}}, "head");
  ASSERT_TRUE(flag.ok());
  EXPECT_EQ(flag->master_addr, "head");

  // Bad launches: one line naming the variable.
  auto half = Read({{"RANK", "0"}});
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("WORLD_SIZE"), std::string::npos);
  auto bad = Read({{"RANK", "x"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("RANK=x"), std::string::npos);
  auto no_master = Read({{"RANK", "0"}, {"WORLD_SIZE", "2"}});
  ASSERT_FALSE(no_master.ok());
  EXPECT_NE(no_master.status().message().find("MASTER_ADDR"), std::string::npos);
  auto past = Read({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}});
  EXPECT_FALSE(past.ok());
}

TEST(LaunchEnvironment, FirstSlurmHost) {
  EXPECT_EQ(*FirstSlurmHost("node1"), "node1");
  EXPECT_EQ(*FirstSlurmHost("node1,node2"), "node1");
  EXPECT_EQ(*FirstSlurmHost("gpu[003-010]"), "gpu003");
  EXPECT_EQ(*FirstSlurmHost("gpu[3,5-7]-ib"), "gpu3-ib");
  EXPECT_FALSE(FirstSlurmHost("gpu[").ok());
  EXPECT_FALSE(FirstSlurmHost("").ok());
}

// Runs body(rank, distribution) on two ranks (threads) joined through a store on a free port.
void TwoRanks(const std::function<void(int64_t, Distribution&)>& body, int64_t bucket_bytes) {
  std::promise<int> port;
  auto port_future = port.get_future().share();
  auto run = [&](int64_t rank) {
    LaunchEnvironment env;
    env.rank = rank;
    env.world_size = 2;
    env.master_addr = "127.0.0.1";
    env.launcher = "test";
    ConnectOptions o;
    o.backend = "gloo";
    o.timeout = std::chrono::minutes(5);
    o.heartbeat_timeout = 300;  // a loaded machine must not look like a dead rank
    o.bucket_bytes = bucket_bytes;
    if (rank == 0) {
      env.port = 0;
      o.on_listening = [&](int p) { port.set_value(p); };
    } else {
      env.port = port_future.get();
    }
    auto d = ConnectProcessGroup(env, o);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ((*d)->rank(), rank);
    EXPECT_EQ((*d)->world_size(), 2);
    body(rank, **d);
    EXPECT_TRUE(FinishDistribution(**d).ok());
  };
  std::thread r1([&] { run(1); });
  run(0);
  r1.join();
}

TEST(ProcessGroup, ScalarsGathersBroadcastAndChecksum) {
  TwoRanks(
      [](int64_t rank, Distribution& d) {
        std::vector<double> sums = {1.0 + rank, 0.5};
        ASSERT_TRUE(d.SumScalars(&sums).ok());
        EXPECT_EQ(sums, (std::vector<double>{3.0, 1.0}));
        std::vector<double> maxima = {static_cast<double>(rank), -static_cast<double>(rank)};
        ASSERT_TRUE(d.MaxScalars(&maxima).ok());
        EXPECT_EQ(maxima, (std::vector<double>{1.0, 0.0}));
        // Gathers: the writer gets every rank's values in rank order, the others their own.
        std::vector<double> mine(static_cast<size_t>(rank + 1), 10.0 * (rank + 1));
        ASSERT_TRUE(d.GatherToWriter(&mine).ok());
        if (rank == 0) {
          EXPECT_EQ(mine, (std::vector<double>{10, 20, 20}));
        } else {
          EXPECT_EQ(mine, (std::vector<double>{20, 20}));
        }
        std::string text = rank == 0 ? "step 1 rank 0\n" : "";  // an empty share is fine
        ASSERT_TRUE(d.GatherTextToWriter(&text).ok());
        std::string text2 = rank == 0 ? "a" : "bcd";
        ASSERT_TRUE(d.GatherTextToWriter(&text2).ok());
        if (rank == 0) {
          EXPECT_EQ(text, "step 1 rank 0\n");
          EXPECT_EQ(text2, "abcd");
        }
        ASSERT_TRUE(d.Barrier().ok());
        // The writer's parameters everywhere (two dtypes: one flat tensor each).
        std::vector<at::Tensor> params = {at::full({2, 3}, 1.0 + rank),
                                          at::full({4}, 7.0 * (rank + 1), at::kDouble)};
        ASSERT_TRUE(d.BroadcastParameters(params).ok());
        EXPECT_TRUE(at::equal(params[0], at::full({2, 3}, 1.0)));
        EXPECT_TRUE(at::equal(params[1], at::full({4}, 7.0, at::kDouble)));
        EXPECT_TRUE(d.CheckReplicas(params, 1).ok());
        if (rank == 1) params[0][0][0] = 1.5f;
        Status diverged = d.CheckReplicas(params, 2);
        ASSERT_FALSE(diverged.ok());
        EXPECT_NE(diverged.message().find("differ after step 2"), std::string::npos)
            << diverged.message();
      },
      25 << 20);
}

// Gradients of a 3-parameter model after two micro-batches on each rank; `hooked`: the
// second backward runs with BeforeLastBackward's hooks (reduction overlapped).
void CheckGradients(bool hooked) {
  TwoRanks(
      [hooked](int64_t rank, Distribution& d) {
        at::Tensor a = at::zeros({4}).requires_grad_(true);     // used by both ranks
        at::Tensor b = at::zeros({2, 3}).requires_grad_(true);  // used by rank 0 only
        at::Tensor c = at::zeros({5}).requires_grad_(true);     // used by no rank
        const std::vector<at::Tensor> params = {a, b, c};
        // Micro-batch m of rank r: loss = sum(a * x) (+ sum(b * y) on rank 0), with
        // x = (r + 1) * (m + 1) * [1, 2, 3, 4] and y = (m + 1) * 0.5.
        const at::Tensor base = at::arange(1, 5, at::kFloat);
        for (int m = 0; m < 2; ++m) {
          if (m == 1 && hooked) {
            ASSERT_TRUE(d.BeforeLastBackward(params).ok());
          }
          at::Tensor loss = (a * base * static_cast<float>((rank + 1) * (m + 1))).sum();
          if (rank == 0) loss = loss + (b * (0.5f * (m + 1))).sum();
          loss.backward();
        }
        ASSERT_TRUE(d.AllReduceGradients(params).ok());
        // a: sum over ranks and micro-batches of x = (1 + 2) * (1 + 2) * base = 9 * base.
        EXPECT_TRUE(at::allclose(a.grad(), base * 9.0f)) << a.grad();
        // b: rank 0's alone, 0.5 + 1.0, on both ranks (rank 1 had none: zeros added).
        ASSERT_TRUE(b.grad().defined());
        EXPECT_TRUE(at::allclose(b.grad(), at::full({2, 3}, 1.5f))) << b.grad();
        // c: no gradient anywhere stays undefined.
        EXPECT_FALSE(c.grad().defined());
        // A rank with nothing to train (no backward at all) still takes part.
        a.mutable_grad().zero_();
        b.mutable_grad().zero_();
        if (rank == 0) {
          if (hooked) {
            ASSERT_TRUE(d.BeforeLastBackward(params).ok());
          }
          (a * 2.0f).sum().backward();
        }
        ASSERT_TRUE(d.AllReduceGradients(params).ok());
        EXPECT_TRUE(at::allclose(a.grad(), at::full({4}, 2.0f))) << a.grad();
        EXPECT_TRUE(at::allclose(b.grad(), at::zeros({2, 3})));
        const auto cs = d.comm_stats();
        EXPECT_EQ(cs.gradient_bytes, 2 * (4 + 6 + 5) * 4);  // two reductions of every bucket
      },
      /*bucket_bytes=*/24);  // several buckets: c | b | a
}

TEST(ProcessGroup, GradientAllReduceAfterBackward) { CheckGradients(false); }
TEST(ProcessGroup, GradientAllReduceOverlappedWithBackward) { CheckGradients(true); }

TEST(ProcessGroup, UnreachableStoreIsOneLineError) {
  LaunchEnvironment env;
  env.rank = 1;
  env.world_size = 2;
  env.master_addr = "127.0.0.1";
  env.port = 1;  // nothing listens on port 1
  ConnectOptions o;
  o.timeout = std::chrono::seconds(2);
  auto d = ConnectProcessGroup(env, o);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("127.0.0.1:1"), std::string::npos) << d.status().message();
  EXPECT_EQ(d.status().message().find('\n'), std::string::npos);
}

}  // namespace
}  // namespace egca::trainer::dist
