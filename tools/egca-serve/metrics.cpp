#include "metrics.h"

#include <fmt/format.h>

#include "egca/credit/token_credit.h"

namespace egca::serve {

void HttpMetrics::Observe(const std::string& endpoint, int status, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, status}];
  Histogram& h = latency_[endpoint];
  size_t b = 0;
  while (b < kBuckets.size() && seconds > kBuckets[b]) ++b;
  if (b < kBuckets.size()) ++h.buckets[b];
  ++h.count;
  h.sum += seconds;
}

namespace {

// A label value with \, " and newline escaped, as the text format wants.
std::string Label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void Head(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

std::string HttpMetrics::Render(const ServiceCounters& s, int in_flight, bool draining) const {
  std::string out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Head(out, "egca_serve_requests_total", "counter", "HTTP requests by endpoint and status.");
    for (const auto& [key, n] : requests_) {
      out += fmt::format("egca_serve_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n",
                         Label(key.first), key.second, n);
    }
    Head(out, "egca_serve_request_duration_seconds", "histogram",
         "Time from the request's arrival to its response, by endpoint.");
    for (const auto& [endpoint, h] : latency_) {
      uint64_t cumulative = 0;
      for (size_t b = 0; b < kBuckets.size(); ++b) {
        cumulative += h.buckets[b];
        out += fmt::format(
            "egca_serve_request_duration_seconds_bucket{{endpoint=\"{}\",le=\"{}\"}} {}\n",
            Label(endpoint), kBuckets[b], cumulative);
      }
      out += fmt::format(
          "egca_serve_request_duration_seconds_bucket{{endpoint=\"{}\",le=\"+Inf\"}} {}\n",
          Label(endpoint), h.count);
      out += fmt::format("egca_serve_request_duration_seconds_sum{{endpoint=\"{}\"}} {}\n",
                         Label(endpoint), h.sum);
      out += fmt::format("egca_serve_request_duration_seconds_count{{endpoint=\"{}\"}} {}\n",
                         Label(endpoint), h.count);
    }
  }
  Head(out, "egca_serve_samples_total", "counter", "Samples routed, by failure mode.");
  for (int m = 0; m < 4; ++m) {
    out += fmt::format("egca_serve_samples_total{{mode=\"{}\"}} {}\n",
                       credit::FailureModeName(static_cast<credit::FailureMode>(m)), s.modes[m]);
  }
  Head(out, "egca_serve_verdicts_total", "counter",
       "Samples routed, by first failing test verdict (OK: every test passed).");
  for (const auto& [v, n] : s.verdicts) {
    out += fmt::format("egca_serve_verdicts_total{{verdict=\"{}\"}} {}\n", Label(v), n);
  }
  Head(out, "egca_serve_queue_depth", "gauge", "Jobs (distinct programs) waiting for an executor.");
  out += fmt::format("egca_serve_queue_depth {}\n", s.queue_depth);
  Head(out, "egca_serve_queue_capacity", "gauge", "Jobs the queue holds (--queue).");
  out += fmt::format("egca_serve_queue_capacity {}\n", s.queue_capacity);
  Head(out, "egca_serve_executors", "gauge", "Executors in the pool (--workers).");
  out += fmt::format("egca_serve_executors {}\n", s.workers);
  Head(out, "egca_serve_executors_busy", "gauge", "Executors routing a job now.");
  out += fmt::format("egca_serve_executors_busy {}\n", s.busy);
  Head(out, "egca_serve_jobs_total", "counter",
       "Jobs taken from the queue: routed, or dropped because their request was cancelled.");
  out += fmt::format("egca_serve_jobs_total{{outcome=\"routed\"}} {}\n", s.jobs_done);
  out += fmt::format("egca_serve_jobs_total{{outcome=\"cancelled\"}} {}\n", s.jobs_cancelled);
  Head(out, "egca_serve_executor_errors_total", "counter",
       "Jobs egca failed to route (an executor broke); their requests got 500.");
  out += fmt::format("egca_serve_executor_errors_total {}\n", s.executor_errors);
  Head(out, "egca_serve_reference_traces_total", "counter",
       "Reference traces: computed (miss) and served from the cache (hit).");
  out +=
      fmt::format("egca_serve_reference_traces_total{{cache=\"miss\"}} {}\n", s.reference_traces);
  out += fmt::format("egca_serve_reference_traces_total{{cache=\"hit\"}} {}\n",
                     s.reference_trace_hits);
  Head(out, "egca_serve_in_flight_requests", "gauge", "Routing requests being served.");
  out += fmt::format("egca_serve_in_flight_requests {}\n", in_flight);
  Head(out, "egca_serve_draining", "gauge", "1 after SIGTERM: new requests are refused.");
  out += fmt::format("egca_serve_draining {}\n", draining ? 1 : 0);
  return out;
}

}  // namespace egca::serve
