#include "egca/trainer/dist/distribution.h"

#include <algorithm>

namespace egca::trainer::dist {

Shard EvenShard(int64_t count, int64_t rank, int64_t world_size) {
  if (world_size <= 1) return {0, count};
  const int64_t base = count / world_size;
  const int64_t extra = count % world_size;
  const int64_t begin = rank * base + std::min(rank, extra);
  const int64_t end = begin + base + (rank < extra ? 1 : 0);
  return {std::min(begin, count), std::min(end, count)};
}

// World size 1: the sum, gather and broadcast over one rank are the values themselves.
Status SingleProcess::AllReduceGradients(std::vector<at::Tensor>&) { return Status::Ok(); }
Status SingleProcess::BroadcastParameters(std::vector<at::Tensor>&) { return Status::Ok(); }
Status SingleProcess::SumScalars(std::vector<double>*) { return Status::Ok(); }
Status SingleProcess::GatherToWriter(std::vector<double>*) { return Status::Ok(); }
Status SingleProcess::Barrier() { return Status::Ok(); }

}  // namespace egca::trainer::dist
