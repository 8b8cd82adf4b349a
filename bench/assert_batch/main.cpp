// assert_batch_agreement: runs every program of a corpus on its assert tests both ways,
// one pair (candidate process + test process) per assert and one candidate process per
// program (Executor::RunAll's batch, docs/executor.md "One candidate process per program"),
// alternating which goes first, and compares every test's verdict (kind, exception type,
// message, position, detail). Prints the agreement, the disagreements, and the time each
// way took (the same programs, the same executor, interleaved).
//
//   assert_batch_agreement --corpus corpus.jsonl [--timeout S] [--limit N] [--json OUT]
//
// corpus.jsonl (bench/assert_batch/make_corpus.py writes one): one program per line,
// {"id": str, "source": str, "tests": [assert statement, ...], "setup": str}.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "assert_batching.h"
#include "egca/tracer/executor.h"
#include "egca/tracer/test_case.h"

using namespace egca;
using namespace egca::tracer;

namespace {

std::string Describe(const TestResult& r) {
  const sandbox::Verdict& v = r.verdict;
  return fmt::format("{} {}: {} @{}:{}-{}:{} [{}]", sandbox::VerdictName(v.kind), v.error_type,
                     v.message, v.line, v.column, v.end_line, v.end_column, v.detail);
}

int Usage(const char* why) {
  std::fprintf(stderr,
               "assert_batch_agreement: %s\nusage: assert_batch_agreement --corpus FILE "
               "[--timeout SECONDS] [--limit N] [--json OUT]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string corpus, json_out;
  double timeout = 5;
  long limit = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      Usage("compare one candidate process per program with one pair per assert");
      return 0;
    }
    if (i + 1 >= argc) return Usage(("missing value for " + a).c_str());
    const std::string v = argv[++i];
    char* end = nullptr;
    if (a == "--corpus") {
      corpus = v;
    } else if (a == "--json") {
      json_out = v;
    } else if (a == "--timeout") {
      timeout = std::strtod(v.c_str(), &end);
      if (*end != '\0' || timeout <= 0)
        return Usage(("--timeout: not a positive number: " + v).c_str());
    } else if (a == "--limit") {
      limit = std::strtol(v.c_str(), &end, 10);
      if (*end != '\0' || limit < 0) return Usage(("--limit: not a count: " + v).c_str());
    } else {
      return Usage(("unknown option " + a).c_str());
    }
  }
  if (corpus.empty()) return Usage("--corpus is required");
  std::ifstream in(corpus);
  if (!in) return Usage(("--corpus: cannot read " + corpus).c_str());

  struct Job {
    std::string id, source;
    std::vector<TestCase> tests;
  };
  std::vector<Job> jobs;
  std::string line;
  for (long n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("source") || !j.contains("tests")) {
      std::fprintf(stderr, "%s:%ld: not a corpus record (skipped)\n", corpus.c_str(), n);
      continue;
    }
    Job job;
    job.id = j.value("id", std::to_string(n));
    job.source = j["source"].get<std::string>();
    const std::string setup = j.value("setup", "");
    for (const auto& t : j["tests"])
      job.tests.push_back(TestCase::Asserts(t.get<std::string>() + "\n", setup));
    jobs.push_back(std::move(job));
    if (limit >= 0 && static_cast<long>(jobs.size()) >= limit) break;
  }
  auto created = Executor::Create({});
  if (!created.ok()) {
    std::fprintf(stderr, "assert_batch_agreement: %s\n", created.status().ToString().c_str());
    return 1;
  }
  Executor& executor = *created.value();
  RunOptions options;
  options.limits.wall_seconds = timeout;
  options.limits.cpu_seconds = timeout;

  using Clock = std::chrono::steady_clock;
  double seconds[2] = {0, 0};  // [one pair per assert, batched]
  long tests = 0, agree = 0, programs = 0, programs_agree = 0, errors = 0;
  long passed[2] = {0, 0};
  nlohmann::json disagreements = nlohmann::json::array();
  for (size_t k = 0; k < jobs.size(); ++k) {
    const Job& job = jobs[k];
    StatusOr<ProgramResult> result[2] = {Internal("not run"), Internal("not run")};
    for (int turn = 0; turn < 2; ++turn) {
      const int way = (static_cast<int>(k) + turn) % 2;  // alternate which runs first
      SetAssertBatching(way == 1 ? AssertBatching::kOn : AssertBatching::kOff);
      const auto t = Clock::now();
      result[way] = executor.RunAll(job.source, job.tests, options);
      seconds[way] += std::chrono::duration<double>(Clock::now() - t).count();
    }
    if (!result[0].ok() || !result[1].ok()) {
      ++errors;
      std::fprintf(stderr, "%s: %s / %s (skipped)\n", job.id.c_str(),
                   result[0].status().ToString().c_str(), result[1].status().ToString().c_str());
      continue;
    }
    ++programs;
    bool all = true;
    for (int w = 0; w < 2; ++w) passed[w] += result[w]->passed;
    for (size_t t = 0; t < job.tests.size(); ++t) {
      ++tests;
      const std::string a = Describe(result[0]->tests[t]);
      const std::string b = Describe(result[1]->tests[t]);
      if (a == b) {
        ++agree;
      } else {
        all = false;
        if (disagreements.size() < 50) {
          disagreements.push_back(
              {{"id", job.id}, {"test", t + 1}, {"one_pair_each", a}, {"batched", b}});
        }
      }
    }
    if (all) ++programs_agree;
    if ((k + 1) % 100 == 0) {
      std::fprintf(stderr, "%zu/%zu programs, %ld/%ld verdicts agree\n", k + 1, jobs.size(), agree,
                   tests);
    }
  }
  fmt::print("corpus: {}\n", corpus);
  fmt::print("programs {}  tests {}  errors {}\n", programs, tests, errors);
  fmt::print(
      "verdicts that agree: {} / {} ({:.3f}%); programs all of whose verdicts agree: {} / {}\n",
      agree, tests, tests ? 100.0 * agree / tests : 0.0, programs_agree, programs);
  fmt::print("passed tests: one pair per assert {}, batched {}\n", passed[0], passed[1]);
  fmt::print("{:<28} {:>10} {:>14}\n", "way", "seconds", "ms per program");
  const char* names[2] = {"one pair per assert", "one process per program"};
  for (int w = 0; w < 2; ++w) {
    fmt::print("{:<28} {:>10.2f} {:>14.2f}\n", names[w], seconds[w],
               programs ? 1000 * seconds[w] / programs : 0.0);
  }
  fmt::print("ratio (one pair per assert / batched): {:.2f}x\n",
             seconds[1] > 0 ? seconds[0] / seconds[1] : 0.0);
  for (const auto& d : disagreements) fmt::print("DIFF {}\n", d.dump());
  if (!json_out.empty()) {
    nlohmann::json j = {{"corpus", corpus},
                        {"programs", programs},
                        {"tests", tests},
                        {"agree", agree},
                        {"programs_agree", programs_agree},
                        {"errors", errors},
                        {"seconds_one_pair_each", seconds[0]},
                        {"seconds_batched", seconds[1]},
                        {"passed_one_pair_each", passed[0]},
                        {"passed_batched", passed[1]},
                        {"disagreements", disagreements}};
    std::ofstream(json_out) << j.dump(1) << "\n";
  }
  return 0;
}
