// Runs a candidate and a reference on one test under the native tracer and diffs them.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "egca/diff/divergence.h"
#include "egca/tracer/executor.h"
#include "egca/tracer/trace.pb.h"

namespace egca::diff::testing {

inline std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::filesystem::path(EGCA_SOURCE_DIR) / relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One executor for the whole binary (a fork server; ~50 ms to start).
inline tracer::Executor& SharedExecutor() {
  static tracer::Executor* executor = [] {
    auto created = tracer::Executor::Create({});
    if (!created.ok()) {
      ADD_FAILURE() << created.status().ToString();
      return static_cast<tracer::Executor*>(nullptr);
    }
    return std::move(created).value().release();
  }();
  return *executor;
}

inline std::shared_ptr<const tracer::proto::Trace> Trace(const std::string& source,
                                                         const tracer::TestCase& test,
                                                         uint64_t max_events = 200000,
                                                         double seconds = 10) {
  tracer::RunOptions options;
  options.limits.wall_seconds = seconds;
  options.limits.cpu_seconds = seconds;
  options.trace_mode = tracer::TraceMode::kNative;
  options.trace.enabled = true;
  options.trace.max_events = max_events;
  auto result = SharedExecutor().Run(source, test, options);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  if (!result.ok() || !result.value().trace) return std::make_shared<tracer::proto::Trace>();
  return result.value().trace;
}

inline DivergenceReport Diff(const std::string& candidate, const std::string& reference,
                             const tracer::TestCase& test, const DivergenceOptions& options = {}) {
  auto cand = PreparedProgram::Build(candidate);
  auto ref = PreparedProgram::Build(reference);
  EXPECT_TRUE(cand.ok()) << cand.status().ToString();
  EXPECT_TRUE(ref.ok()) << ref.status().ToString();
  if (!cand.ok() || !ref.ok()) return {};
  auto ct = Trace(candidate, test);
  auto rt = Trace(reference, test);
  return FindDivergence(*cand.value(), *ct, *ref.value(), *rt, options);
}

// Text of the candidate covered by `span`.
inline std::string SpanText(const std::string& source, const SourceSpan& span) {
  if (span.end_byte > source.size() || span.empty()) return "";
  return source.substr(span.begin_byte, span.end_byte - span.begin_byte);
}

}  // namespace egca::diff::testing
