// dist::ProcessGroupDistribution (see process_group.h): c10d's TCPStore and Gloo / NCCL
// process group behind dist::Distribution, gradient buckets reduced during backward, and a
// heartbeat watchdog that turns a dead or silent rank into one line and an exit.
#include "egca/trainer/dist/process_group.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>
// Backends: Gloo where LibTorch was built with it and its headers are there (Debian's
// LibTorch and the CPU downloads; a pip wheel's defines USE_C10D_GLOO but ships no gloo/
// headers), NCCL in CUDA builds (EGCA_HAVE_NCCL).
#if defined(USE_C10D_GLOO) && __has_include(<gloo/algorithm.h>)
#define EGCA_HAVE_GLOO 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef EGCA_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
// c10d logs through glog where LibTorch was built with it (Debian's is): EGCA_HAVE_GLOG.
#ifdef EGCA_HAVE_GLOG
#include <glog/logging.h>
#endif

namespace egca::trainer::dist {

namespace {

// The object the collectives are called on: LibTorch 1.x's backends are ProcessGroups; from
// 2.0 they are c10d::Backend (a ProcessGroup dispatches to them), with the same collective
// signatures.
#if TORCH_VERSION_MAJOR >= 2
using CollectiveGroup = c10d::Backend;
#else
using CollectiveGroup = c10d::ProcessGroup;
#endif

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The first line of an exception's message (c10's carry a backtrace after it).
std::string FirstLine(const std::exception& e) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  std::string s = c10 ? c10->what_without_backtrace() : e.what();
  const auto nl = s.find('\n');
  if (nl != std::string::npos) s.resize(nl);
  return s;
}

StatusOr<int64_t> ParseInt(const char* name, const char* value, int64_t min) {
  try {
    size_t used = 0;
    const int64_t v = std::stoll(value, &used);
    if (used == std::string(value).size() && v >= min) return v;
  } catch (...) {
  }
  return InvalidArgument(
      fmt::format("environment variable {}={}: not an integer >= {}", name, value, min));
}

}  // namespace

StatusOr<std::string> FirstSlurmHost(const std::string& nodelist) {
  // The first entry: up to the first ',' outside brackets.
  size_t end = 0;
  int depth = 0;
  for (; end < nodelist.size(); ++end) {
    if (nodelist[end] == '[') ++depth;
    if (nodelist[end] == ']') --depth;
    if (nodelist[end] == ',' && depth == 0) break;
  }
  const std::string first = nodelist.substr(0, end);
  const auto open = first.find('[');
  if (open == std::string::npos) {
    if (first.empty()) return InvalidArgument("SLURM_JOB_NODELIST is empty");
    return first;
  }
  const auto close = first.find(']', open);
  if (close == std::string::npos || close == open + 1) {
    return InvalidArgument(fmt::format("SLURM_JOB_NODELIST={}: malformed node list", nodelist));
  }
  // "[003-010,012]": the first range's first number, zero padding kept.
  std::string range = first.substr(open + 1, close - open - 1);
  range = range.substr(0, std::min(range.find(','), range.find('-')));
  return first.substr(0, open) + range + first.substr(close + 1);
}

StatusOr<LaunchEnvironment> ReadLaunchEnvironment(
    const std::function<const char*(const char*)>& getenv, const std::string& master_addr_flag,
    int master_port_flag) {
  LaunchEnvironment env;
  auto get = [&](const char* name) -> const char* {
    const char* v = getenv(name);
    return v && *v ? v : nullptr;
  };
  const char* rank = get("RANK");
  const char* world = get("WORLD_SIZE");
  if (rank && world) {
    env.launcher = "torchrun";
    EGCA_ASSIGN_OR_RETURN(env.rank, ParseInt("RANK", rank, 0));
    EGCA_ASSIGN_OR_RETURN(env.world_size, ParseInt("WORLD_SIZE", world, 1));
    if (const char* lr = get("LOCAL_RANK")) {
      EGCA_ASSIGN_OR_RETURN(env.local_rank, ParseInt("LOCAL_RANK", lr, 0));
    }
  } else if (get("SLURM_PROCID") && get("SLURM_NTASKS")) {
    env.launcher = "slurm";
    EGCA_ASSIGN_OR_RETURN(env.rank, ParseInt("SLURM_PROCID", get("SLURM_PROCID"), 0));
    EGCA_ASSIGN_OR_RETURN(env.world_size, ParseInt("SLURM_NTASKS", get("SLURM_NTASKS"), 1));
    if (const char* lr = get("SLURM_LOCALID")) {
      EGCA_ASSIGN_OR_RETURN(env.local_rank, ParseInt("SLURM_LOCALID", lr, 0));
    }
  } else if (rank || world) {
    return InvalidArgument(fmt::format("environment variable {} is set but {} is not",
                                       rank ? "RANK" : "WORLD_SIZE", rank ? "WORLD_SIZE" : "RANK"));
  } else {
    return env;  // a single process
  }
  if (env.rank >= env.world_size) {
    return InvalidArgument(fmt::format("rank {} is not below the world size {} ({})", env.rank,
                                       env.world_size, env.launcher));
  }
  if (env.world_size == 1) return env;
  if (const char* addr = get("MASTER_ADDR")) {
    env.master_addr = addr;
  } else if (!master_addr_flag.empty()) {
    env.master_addr = master_addr_flag;
  } else if (env.launcher == "slurm") {
    const char* nodes = get("SLURM_JOB_NODELIST");
    if (!nodes) nodes = get("SLURM_NODELIST");
    if (!nodes) {
      return InvalidArgument(
          "Slurm launch without MASTER_ADDR, --master-addr or SLURM_JOB_NODELIST: no rendezvous "
          "host");
    }
    EGCA_ASSIGN_OR_RETURN(env.master_addr, FirstSlurmHost(nodes));
  } else {
    return InvalidArgument("RANK and WORLD_SIZE are set but MASTER_ADDR is not");
  }
  if (const char* port = get("MASTER_PORT")) {
    EGCA_ASSIGN_OR_RETURN(const int64_t p, ParseInt("MASTER_PORT", port, 0));
    if (p > 65535) return InvalidArgument(fmt::format("MASTER_PORT={}: not a port", port));
    env.port = static_cast<int>(p);
  } else if (master_port_flag > 0) {
    env.port = master_port_flag;
  }
  return env;
}

namespace {

class ProcessGroupDistribution final : public Distribution {
 public:
  ProcessGroupDistribution(const LaunchEnvironment& env, const ConnectOptions& options)
      : env_(env), options_(options) {}

  ~ProcessGroupDistribution() override { StopWatchdog(); }

  Status Connect() {
    const std::string where = fmt::format("{}:{}", env_.master_addr, env_.port);
    try {
      c10d::TCPStoreOptions so;
      so.port = static_cast<uint16_t>(env_.port);
      so.isServer = env_.rank == 0;
      so.numWorkers = static_cast<size_t>(env_.world_size);
      so.waitWorkers = false;
      so.timeout = options_.timeout;
      store_ = c10::make_intrusive<c10d::TCPStore>(env_.master_addr, so);
      port_ = store_->getPort();
      if (env_.rank == 0 && options_.on_listening) options_.on_listening(port_);
    } catch (const std::exception& e) {
      return Unavailable(fmt::format("rank {}: cannot {} the rendezvous store at {}: {}", env_.rank,
                                     env_.rank == 0 ? "serve" : "reach", where, FirstLine(e)));
    }
    std::string backend = options_.backend;
    if (backend == "auto") backend = options_.cuda ? "nccl" : "gloo";
    backend_ = backend;
    try {
      auto prefixed = c10::make_intrusive<c10d::PrefixStore>("pg", store_);
      if (backend == "gloo") {
#ifdef EGCA_HAVE_GLOO
        auto o = c10d::ProcessGroupGloo::Options::create(options_.timeout);
        if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
          o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
        } else {
          o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
        }
        o->threads = 2;
        pg_ = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, static_cast<int>(env_.rank),
                                                          static_cast<int>(env_.world_size), o);
#else
        return FailedPrecondition(
            "train.backend: gloo: this LibTorch was built without Gloo's headers (use nccl)");
#endif
      } else if (backend == "nccl") {
#ifdef EGCA_HAVE_NCCL
        auto o = c10d::ProcessGroupNCCL::Options::create();
        o->timeout = options_.timeout;
        pg_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, static_cast<int>(env_.rank),
                                                          static_cast<int>(env_.world_size), o);
        comm_device_ = at::Device(at::kCUDA, static_cast<int8_t>(options_.cuda_device));
#else
        return FailedPrecondition(
            "train.backend: nccl needs egca built against a CUDA LibTorch (this build has Gloo "
            "only)");
#endif
      } else {
        return InvalidArgument(
            fmt::format("train.backend: {}: not auto, gloo or nccl", options_.backend));
      }
    } catch (const std::exception& e) {
      return Unavailable(fmt::format("rank {}: {} process group over the store at {}: {}",
                                     env_.rank, backend, where, FirstLine(e)));
    }
    StartWatchdog();
    return Status::Ok();
  }

  int64_t rank() const override { return env_.rank; }
  int64_t world_size() const override { return env_.world_size; }

  // ---- gradients ---------------------------------------------------------------------

  Status BeforeLastBackward(const std::vector<at::Tensor>& params) override {
    EGCA_RETURN_IF_ERROR(Layout(params));
    ResetBuckets();
    for (size_t i = 0; i < params_.size(); ++i) {
      if (slot_of_[i].bucket < 0) continue;
      hooks_.emplace_back(i, params_[i].register_hook([this, i](const at::Tensor& g) {
        std::lock_guard<std::mutex> lock(bucket_mu_);
        Fill(i, &g);
      }));
    }
    return Status::Ok();
  }

  Status AllReduceGradients(const std::vector<at::Tensor>& params) override {
    const auto t0 = Clock::now();
    const bool hooked = !hooks_.empty();
    for (auto& [i, h] : hooks_) params_[i].remove_hook(h);
    hooks_.clear();
    if (!hooked) {
      EGCA_RETURN_IF_ERROR(Layout(params));
      ResetBuckets();
    }
    {
      std::lock_guard<std::mutex> lock(bucket_mu_);
      // Whatever no hook saw (no gradient in this backward, or no backward at all).
      for (size_t i = 0; i < params_.size(); ++i) {
        if (slot_of_[i].bucket >= 0 && !ready_[i]) Fill(i, nullptr);
      }
    }
    // Which gradients are defined anywhere: launched last, after every bucket, in the same
    // order on every rank.
    at::Tensor defined = at::zeros({static_cast<int64_t>(params_.size())}, at::kFloat);
    for (size_t i = 0; i < params_.size(); ++i) {
      if (params_[i].grad().defined()) defined[static_cast<int64_t>(i)] = 1.0f;
    }
    defined = defined.to(comm_device_);
    Status status = launch_error_;
    launch_error_ = Status::Ok();
    for (Bucket& b : buckets_) {
      if (!status.ok()) break;
      if (!b.work) status = Launch(b);
      if (status.ok()) status = Wait(b.work, "gradient all-reduce");
      gradient_bytes_ += b.flat.numel() * b.flat.element_size();
    }
    if (status.ok()) {
      std::vector<at::Tensor> t = {defined};
      status = Collective("gradient presence all-reduce", [&] {
        c10d::AllreduceOptions o;
        o.reduceOp = c10d::ReduceOp::MAX;
        return pg_->allreduce(t, o);
      });
    }
    if (!status.ok()) return status;
    const at::Tensor defined_cpu = defined.to(at::kCPU);
    at::NoGradGuard no_grad;
    for (size_t i = 0; i < params_.size(); ++i) {
      const Slot& s = slot_of_[i];
      if (s.bucket < 0 || defined_cpu[static_cast<int64_t>(i)].item<float>() == 0.0f) continue;
      at::Tensor& p = params_[i];
      const at::Tensor sum =
          buckets_[static_cast<size_t>(s.bucket)].flat.narrow(0, s.offset, p.numel()).view_as(p);
      if (!p.grad().defined()) {
        p.mutable_grad() = sum.clone();
      } else {
        p.mutable_grad().copy_(sum);
      }
    }
    gradient_wait_ += SecondsSince(t0);
    return Status::Ok();
  }

  // ---- the rest of the contract ------------------------------------------------------

  Status BroadcastParameters(std::vector<at::Tensor>& params) override {
    at::NoGradGuard no_grad;
    // One flat tensor per dtype: Gloo broadcasts one tensor per call.
    std::unordered_map<int, std::vector<size_t>> by_dtype;
    std::vector<int> order;
    for (size_t i = 0; i < params.size(); ++i) {
      const int d = static_cast<int>(params[i].scalar_type());
      if (!by_dtype.count(d)) order.push_back(d);
      by_dtype[d].push_back(i);
    }
    for (int d : order) {
      std::vector<at::Tensor> parts;
      for (size_t i : by_dtype[d]) parts.push_back(params[i].detach().reshape(-1));
      std::vector<at::Tensor> t = {at::cat(parts).to(comm_device_)};
      EGCA_RETURN_IF_ERROR(Collective("parameter broadcast", [&] {
        c10d::BroadcastOptions o;
        o.rootRank = 0;
        return pg_->broadcast(t, o);
      }));
      int64_t off = 0;
      const at::Tensor flat = t[0].to(params[by_dtype[d].front()].device());
      for (size_t i : by_dtype[d]) {
        params[i].detach().copy_(flat.narrow(0, off, params[i].numel()).view_as(params[i]));
        off += params[i].numel();
      }
    }
    return Status::Ok();
  }

  Status SumScalars(std::vector<double>* values) override {
    return ReduceScalars(values, c10d::ReduceOp::SUM, "metric sum");
  }
  Status MaxScalars(std::vector<double>* values) override {
    return ReduceScalars(values, c10d::ReduceOp::MAX, "metric max");
  }

  Status GatherToWriter(std::vector<double>* values) override {
    std::string bytes(reinterpret_cast<const char*>(values->data()),
                      values->size() * sizeof(double));
    EGCA_RETURN_IF_ERROR(GatherTextToWriter(&bytes));
    if (!is_writer()) return Status::Ok();
    values->resize(bytes.size() / sizeof(double));
    std::copy(bytes.data(), bytes.data() + values->size() * sizeof(double),
              reinterpret_cast<char*>(values->data()));
    return Status::Ok();
  }

  Status GatherTextToWriter(std::string* text) override {
    // Sizes first, then every rank's bytes padded to the longest (allgather needs equal
    // sizes; Gloo's gather would do, NCCL has none).
    std::vector<double> sizes(static_cast<size_t>(world_size()), 0.0);
    sizes[static_cast<size_t>(rank())] = static_cast<double>(text->size());
    EGCA_RETURN_IF_ERROR(SumScalars(&sizes));
    const int64_t longest =
        std::max<int64_t>(1, static_cast<int64_t>(*std::max_element(sizes.begin(), sizes.end())));
    at::Tensor mine = at::zeros({longest}, at::kByte);
    std::memcpy(mine.data_ptr(), text->data(), text->size());
    std::vector<at::Tensor> in = {mine.to(comm_device_)};
    std::vector<std::vector<at::Tensor>> out(1);
    for (int64_t r = 0; r < world_size(); ++r) out[0].push_back(at::empty_like(in[0]));
    EGCA_RETURN_IF_ERROR(Collective("dump gather", [&] { return pg_->allgather(out, in); }));
    if (!is_writer()) return Status::Ok();
    text->clear();
    for (int64_t r = 0; r < world_size(); ++r) {
      const at::Tensor cpu = out[0][static_cast<size_t>(r)].to(at::kCPU);
      text->append(static_cast<const char*>(cpu.data_ptr()),
                   static_cast<size_t>(sizes[static_cast<size_t>(r)]));
    }
    return Status::Ok();
  }

  Status Barrier() override { return StoreBarrier("barrier"); }

  void Abort(const std::string& reason) override {
    {
      // This rank has said why it ends: its watchdog must not add a second line.
      std::lock_guard<std::mutex> lock(watch_mu_);
      stop_ = true;
    }
    try {
      const std::string r =
          reason.rfind("rank ", 0) == 0 ? reason : fmt::format("rank {}: {}", rank(), reason);
      store_->set("abort", std::vector<uint8_t>(r.begin(), r.end()));
    } catch (...) {
    }
  }

  CommStats comm_stats() const override { return {gradient_bytes_, gradient_wait_, collectives_}; }

  // The end of a run that went well (FinishDistribution).
  Status Finish() {
    StopWatchdog();
    EGCA_RETURN_IF_ERROR(StoreBarrier("finish"));
    // Rank 0 serves the store: it leaves after everyone has read the barrier's count.
    try {
      store_->add("finish/ack", 1);
      if (rank() == 0) {
        while (store_->add("finish/ack", 0) < world_size())
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    } catch (const std::exception& e) {
      return Unavailable(fmt::format("rank {}: finishing: {}", rank(), FirstLine(e)));
    }
    return Status::Ok();
  }

 private:
  struct Slot {
    int64_t bucket = -1;
    int64_t offset = 0;
  };
  struct Bucket {
    std::vector<size_t> params;
    at::Tensor flat;
    int64_t pending = 0;
    c10::intrusive_ptr<c10d::Work> work;
  };

  // The buckets of `params` (built once; the same list on every call).
  Status Layout(const std::vector<at::Tensor>& params) {
    if (!buckets_.empty() || !params_.empty()) {
      if (params.size() != params_.size())
        return Internal("AllReduceGradients: the parameter list changed between calls");
      return Status::Ok();
    }
    params_ = params;
    slot_of_.assign(params.size(), Slot{});
    ready_.assign(params.size(), false);
    for (size_t k = params.size(); k-- > 0;) {  // backward produces the last ones first
      const at::Tensor& p = params[k];
      if (!p.requires_grad()) continue;
      const int64_t bytes = p.numel() * p.element_size();
      if (buckets_.empty() || buckets_.back().flat.scalar_type() != p.scalar_type() ||
          buckets_.back().flat.device() != p.device() ||
          (buckets_.back().flat.numel() + p.numel()) * p.element_size() > options_.bucket_bytes) {
        Bucket b;
        b.flat = at::zeros({0}, p.options().requires_grad(false));
        buckets_.push_back(std::move(b));
      }
      Bucket& b = buckets_.back();
      slot_of_[k] = {static_cast<int64_t>(buckets_.size() - 1), b.flat.numel()};
      b.params.push_back(k);
      b.flat = at::zeros({b.flat.numel() + p.numel()}, b.flat.options());
      (void)bytes;
    }
    return Status::Ok();
  }

  void ResetBuckets() {
    std::fill(ready_.begin(), ready_.end(), false);
    for (Bucket& b : buckets_) {
      b.pending = static_cast<int64_t>(b.params.size());
      b.work.reset();
    }
    next_launch_ = 0;
  }

  // Parameter i's whole gradient into its slot: what it had accumulated plus `incoming`
  // (this backward's, from a hook; null: nothing more). Launches complete buckets in order.
  void Fill(size_t i, const at::Tensor* incoming) {
    if (ready_[i]) return;
    at::NoGradGuard no_grad;
    const Slot& s = slot_of_[i];
    Bucket& b = buckets_[static_cast<size_t>(s.bucket)];
    at::Tensor slot = b.flat.narrow(0, s.offset, params_[i].numel());
    const at::Tensor& acc = params_[i].grad();
    if (acc.defined()) {
      slot.copy_(acc.reshape(-1));
      if (incoming) slot.add_(incoming->reshape(-1));
    } else if (incoming) {
      slot.copy_(incoming->reshape(-1));
    } else {
      slot.zero_();
    }
    ready_[i] = true;
    --b.pending;
    while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0 &&
           launch_error_.ok()) {
      launch_error_ = Launch(buckets_[next_launch_]);
      ++next_launch_;
    }
  }

  Status Launch(Bucket& b) {
    try {
      std::vector<at::Tensor> t = {b.flat};
      b.work = pg_->allreduce(t);
      ++collectives_;
      return Status::Ok();
    } catch (const std::exception& e) {
      return Unavailable(fmt::format("rank {}: gradient all-reduce ({}) failed: {}", rank(),
                                     backend_, FirstLine(e)));
    }
  }

  Status Wait(const c10::intrusive_ptr<c10d::Work>& w, const char* what) {
    try {
      w->wait();
      return Status::Ok();
    } catch (const std::exception& e) {
      return Unavailable(
          fmt::format("rank {}: {} ({}) failed: {}", rank(), what, backend_, FirstLine(e)));
    }
  }

  template <typename F>
  Status Collective(const char* what, F&& f) {
    c10::intrusive_ptr<c10d::Work> w;
    try {
      w = f();
      ++collectives_;
    } catch (const std::exception& e) {
      return Unavailable(
          fmt::format("rank {}: {} ({}) failed: {}", rank(), what, backend_, FirstLine(e)));
    }
    return Wait(w, what);
  }

  Status ReduceScalars(std::vector<double>* values, c10d::ReduceOp op, const char* what) {
    if (values->empty()) return Status::Ok();
    at::Tensor t =
        at::from_blob(values->data(), {static_cast<int64_t>(values->size())}, at::kDouble)
            .to(comm_device_, /*non_blocking=*/false, /*copy=*/true);
    std::vector<at::Tensor> ts = {t};
    EGCA_RETURN_IF_ERROR(Collective(what, [&] {
      c10d::AllreduceOptions o;
      o.reduceOp = op;
      return pg_->allreduce(ts, o);
    }));
    const at::Tensor cpu = ts[0].to(at::kCPU).contiguous();
    std::copy(cpu.data_ptr<double>(), cpu.data_ptr<double>() + values->size(), values->begin());
    return Status::Ok();
  }

  // Every rank adds itself to a counter in the store and waits for the others, with no
  // time limit: the watchdog ends the process when a rank dies meanwhile.
  Status StoreBarrier(const char* name) {
    const std::string key = fmt::format("{}/{}", name, barriers_++);
    try {
      store_->add(key, 1);
      auto sleep = std::chrono::milliseconds(1);
      while (store_->add(key, 0) < world_size()) {
        std::this_thread::sleep_for(sleep);
        sleep = std::min(sleep * 2, std::chrono::milliseconds(50));
      }
    } catch (const std::exception& e) {
      return Unavailable(fmt::format("rank {}: barrier: lost the store: {}", rank(), FirstLine(e)));
    }
    return Status::Ok();
  }

  // ---- watchdog ----------------------------------------------------------------------

  void StartWatchdog() {
    watchdog_ = std::thread([this] {
      c10::intrusive_ptr<c10d::TCPStore> store;
      try {
        c10d::TCPStoreOptions so;
        so.port = static_cast<uint16_t>(port_);
        so.isServer = false;
        so.waitWorkers = false;
        so.timeout =
            std::chrono::milliseconds(static_cast<int64_t>(options_.heartbeat_timeout * 1000));
        store = c10::make_intrusive<c10d::TCPStore>(env_.master_addr, so);
      } catch (const std::exception& e) {
        Die(fmt::format("the watchdog cannot reach the store at {}:{}: {}", env_.master_addr, port_,
                        FirstLine(e)));
      }
      const auto period = std::chrono::milliseconds(
          std::max<int64_t>(10, static_cast<int64_t>(options_.heartbeat_seconds * 1000)));
      std::vector<int64_t> last(static_cast<size_t>(world_size()), -1);
      std::vector<Clock::time_point> seen(static_cast<size_t>(world_size()), Clock::now());
      std::unique_lock<std::mutex> lock(watch_mu_);
      while (!stop_) {
        lock.unlock();
        try {
          store->add(fmt::format("hb/{}", rank()), 1);
          if (store->check({"abort"})) {
            const auto v = store->get("abort");
            Die(fmt::format("ending the job: {}", std::string(v.begin(), v.end())));
          }
          for (int64_t r = 0; r < world_size(); ++r) {
            if (r == rank()) continue;
            const int64_t v = store->add(fmt::format("hb/{}", r), 0);
            const size_t k = static_cast<size_t>(r);
            if (v != last[k]) {
              last[k] = v;
              seen[k] = Clock::now();
            } else if (SecondsSince(seen[k]) > options_.heartbeat_timeout) {
              Die(
                  fmt::format("rank {} sent no heartbeat for {:.0f} s (killed or stopped); "
                              "ending the job",
                              r, SecondsSince(seen[k])));
            }
          }
        } catch (const std::exception& e) {
          Die(fmt::format("lost the rendezvous store at {}:{} (rank 0 gone?): {}", env_.master_addr,
                          port_, FirstLine(e)));
        }
        lock.lock();
        watch_cv_.wait_for(lock, period, [this] { return stop_; });
      }
    });
  }

  void StopWatchdog() {
    {
      std::lock_guard<std::mutex> lock(watch_mu_);
      stop_ = true;
    }
    watch_cv_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
  }

  // One line, then exit at once: the training thread may be blocked in a collective.
  [[noreturn]] void Die(const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(watch_mu_);
      if (stop_) std::_Exit(1);  // a clean shutdown raced with the failure: exit quietly
    }
    const std::string line = fmt::format("egca-train: rank {}: {}\n", rank(), why);
    (void)!::write(2, line.data(), line.size());
    std::_Exit(1);
  }

  LaunchEnvironment env_;
  ConnectOptions options_;
  c10::intrusive_ptr<c10d::TCPStore> store_;
  c10::intrusive_ptr<CollectiveGroup> pg_;
  int port_ = 0;
  std::string backend_;
  at::Device comm_device_ = at::kCPU;

  std::vector<at::Tensor> params_;
  std::vector<Slot> slot_of_;
  std::vector<bool> ready_;
  std::vector<Bucket> buckets_;
  size_t next_launch_ = 0;
  std::vector<std::pair<size_t, unsigned>> hooks_;
  std::mutex bucket_mu_;
  Status launch_error_ = Status::Ok();

  int64_t gradient_bytes_ = 0, collectives_ = 0, barriers_ = 0;
  double gradient_wait_ = 0;

  std::thread watchdog_;
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  bool stop_ = false;
};

}  // namespace

StatusOr<std::shared_ptr<Distribution>> ConnectProcessGroup(const LaunchEnvironment& env,
                                                            const ConnectOptions& options) {
  if (env.world_size <= 1 && !options.group_for_one_rank) {
    return std::shared_ptr<Distribution>(std::make_shared<SingleProcess>());
  }
#ifdef EGCA_HAVE_GLOG
  // c10d reports connection trouble through glog (several lines with timestamps); egca says
  // it in one line per rank. GLOG_minloglevel=0 in the environment shows c10d's own.
  if (!std::getenv("GLOG_minloglevel")) FLAGS_minloglevel = google::GLOG_FATAL;
#endif
  auto d = std::make_shared<ProcessGroupDistribution>(env, options);
  EGCA_RETURN_IF_ERROR(d->Connect());
  return std::shared_ptr<Distribution>(d);
}

Status FinishDistribution(Distribution& d) {
  if (auto* pg = dynamic_cast<ProcessGroupDistribution*>(&d)) return pg->Finish();
  return Status::Ok();
}

}  // namespace egca::trainer::dist
