#include "egca/trainer/dist/distribution.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <fmt/format.h>

namespace egca::trainer::dist {

Shard EvenShard(int64_t count, int64_t rank, int64_t world_size) {
  if (world_size <= 1) return {0, count};
  const int64_t base = count / world_size;
  const int64_t extra = count % world_size;
  const int64_t begin = rank * base + std::min(rank, extra);
  const int64_t end = begin + base + (rank < extra ? 1 : 0);
  return {std::min(begin, count), std::min(end, count)};
}

Status Distribution::CheckReplicas(const std::vector<at::Tensor>& params, int64_t step) {
  if (world_size() <= 1) return Status::Ok();
  double sum = 0, squares = 0;
  for (const at::Tensor& p : params) {
    const at::Tensor d = p.detach().to(at::kDouble);
    sum += d.sum().item<double>();
    squares += d.square().sum().item<double>();
  }
  // max(x) == -max(-x) on every rank iff every rank holds the same x.
  std::vector<double> v = {sum, -sum, squares, -squares};
  EGCA_RETURN_IF_ERROR(MaxScalars(&v));
  if (v[0] != -v[1] || v[2] != -v[3]) {
    return Internal(fmt::format(
        "rank {}: the replicas' parameters differ after step {} (checksum {:.17g} here, "
        "between {:.17g} and {:.17g} over ranks): nondeterministic reduction or kernels",
        rank(), step, sum, -v[1], v[0]));
  }
  return Status::Ok();
}

// World size 1: the sum, gather and broadcast over one rank are the values themselves.
Status SingleProcess::AllReduceGradients(const std::vector<at::Tensor>&) { return Status::Ok(); }
Status SingleProcess::BroadcastParameters(std::vector<at::Tensor>&) { return Status::Ok(); }
Status SingleProcess::SumScalars(std::vector<double>*) { return Status::Ok(); }
Status SingleProcess::MaxScalars(std::vector<double>*) { return Status::Ok(); }
Status SingleProcess::GatherToWriter(std::vector<double>*) { return Status::Ok(); }
Status SingleProcess::GatherTextToWriter(std::string*) { return Status::Ok(); }
Status SingleProcess::Barrier() { return Status::Ok(); }

}  // namespace egca::trainer::dist
