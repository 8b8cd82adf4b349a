// egca-serve's HTTP counters (requests by endpoint and status, latency histogram) and the
// Prometheus text of everything /metrics shows.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "service.h"

namespace egca::serve {

class HttpMetrics {
 public:
  // Latency buckets (seconds, upper bounds; +Inf implied).
  static constexpr std::array<double, 12> kBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                      0.5,   1,    2.5,   5,    10,  30};

  void Observe(const std::string& endpoint, int status, double seconds);
  // Prometheus text exposition format (version 0.0.4).
  std::string Render(const ServiceCounters& service, int in_flight, bool draining) const;

 private:
  struct Histogram {
    std::array<uint64_t, kBuckets.size()> buckets{};  // non-cumulative
    uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, Histogram> latency_;
};

}  // namespace egca::serve
