// QuixBugs: route every buggy program against its corrected version (tests = the assert
// lines) and score the spans the router reports against the lines the fix changes.
//
//   quixbugs_localize [--data FILE] [--timeout SECONDS] [--seed N] [--json]
//
// Per program: the route, the first failing test, and for each target (earliest
// divergence, last divergence, random executed boundary; SYNTAX: the error span) whether
// the span covers a line the fix changes. Fix lines are the buggy program's lines outside
// the longest common subsequence of lines with the solution; a pure insertion counts the
// buggy lines on both sides of it. Cost: each program is first graded alone (every test,
// untraced: the baseline), then routed (grading + tracing the first failing test of a LOGIC
// program + alignment, the reference trace cached); the ratio compares the two totals.
// The same cost comparison runs on HumanEval pairs (CodeT samples vs canonical solutions).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "egca/core/files.h"
#include "egca/gates/router.h"

namespace {

using egca::SourceSpan;
using egca::gates::FailureMode;
using json = nlohmann::json;

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    std::string line = s.substr(start, nl - start);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
    out.push_back(line);
    start = nl + 1;
  }
  return out;
}

// 1-based lines of `buggy` the fix touches (see the file comment).
std::set<int> FixLines(const std::string& buggy, const std::string& fixed) {
  std::vector<std::string> a = Lines(buggy), b = Lines(fixed);
  size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::set<int> out;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      ++i, ++j;
    } else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) {
      // Inserted in the fix: blame the nearest non-blank buggy line on each side.
      for (size_t k = i; k > 0; --k) {
        if (!a[k - 1].empty()) {
          out.insert(static_cast<int>(k));
          break;
        }
      }
      for (size_t k = i; k < n; ++k) {
        if (!a[k].empty()) {
          out.insert(static_cast<int>(k + 1));
          break;
        }
      }
      ++j;
    } else {
      out.insert(static_cast<int>(i + 1));
      ++i;
    }
  }
  return out;
}

bool Covers(const std::optional<SourceSpan>& span, const std::set<int>& lines) {
  if (!span || !span->valid()) return false;
  for (int l = span->begin.line; l <= span->end.line; ++l) {
    if (lines.count(l)) return true;
  }
  return false;
}

std::string Mark(bool hit) { return hit ? "yes" : "no"; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"QuixBugs localization accuracy and router cost"};
  std::string data = std::string(EGCA_DATA_DIR) + "/quixbugs/quixbugs_python.jsonl";
  double timeout = 1.0;
  uint64_t seed = 0;
  bool json_out = false;
  int humaneval_samples = 2;
  app.add_option("--data", data, "quixbugs_python.jsonl");
  app.add_option("--humaneval-samples", humaneval_samples,
                 "CodeT samples per HumanEval problem for the cost section (0: skip)");
  app.add_option("--timeout", timeout, "per-test wall/CPU limit, seconds");
  app.add_option("--seed", seed, "seed of the random-boundary target");
  app.add_flag("--json", json_out, "one JSON record per program instead of the table");
  bool one_process = false;
  app.add_flag("--asserts-in-one-process", one_process,
               "run assert tests in the candidate's process (the judging before issue 12), "
               "to compare routes");
  CLI11_PARSE(app, argc, argv);

  auto text = egca::ReadFile(data);
  if (!text.ok()) {
    std::cerr << "quixbugs_localize: " << text.status().ToString() << "\n";
    return 2;
  }
  auto executor = egca::tracer::Executor::Create({});
  if (!executor.ok()) {
    std::cerr << "quixbugs_localize: " << executor.status().ToString() << "\n";
    return 1;
  }
  egca::gates::RouterOptions options;
  options.run.limits.wall_seconds = timeout;
  options.run.limits.cpu_seconds = timeout;
  options.divergence.random_seed = seed;
  options.run.assert_tests_in_one_process = one_process;
  egca::gates::Router router(executor.value().get(), options);

  if (!json_out) {
    fmt::print("{:<28} {:<10} {:>5} {:>6} {:>6} {:>6} {:>8} {:>8} {:>9}\n", "program", "route",
               "fail", "first", "last", "random", "grade_s", "route_s", "localize_s");
  }
  int logic = 0, hit_first = 0, hit_last = 0, hit_random = 0, syntax = 0, hit_syntax = 0;
  int records = 0, bad = 0;
  double grade_total = 0, route_total = 0, localize_total = 0;
  std::map<std::string, int> by_mode;
  std::istringstream in(text.value());
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    json rec = json::parse(line, nullptr, false);
    if (rec.is_discarded() || !rec.contains("buggy_program") || !rec.contains("solution")) {
      std::cerr << fmt::format("{}:{}: malformed record, skipped\n", data, line_no);
      ++bad;
      continue;
    }
    ++records;
    std::string name = rec.value("name", "?");
    std::string buggy = rec["buggy_program"], fixed = rec["solution"];
    egca::gates::Problem problem;
    problem.reference = fixed;
    problem.tests = egca::tracer::TestsFromScript(rec.value("tests", ""), "");

    egca::tracer::RunOptions plain = options.run;
    auto t0 = std::chrono::steady_clock::now();
    auto graded = executor.value()->RunAll(buggy, problem.tests, plain);
    double grade_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto t1 = std::chrono::steady_clock::now();
    auto routed = router.Route(buggy, problem);
    double route_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    if (!graded.ok() || !routed.ok()) {
      std::cerr << fmt::format("{}: {}\n", name,
                               (!graded.ok() ? graded.status() : routed.status()).ToString());
      continue;
    }
    grade_total += grade_s;
    route_total += route_s;
    const auto& r = routed.value();
    std::set<int> fix = FixLines(buggy, fixed);
    std::string mode = egca::gates::FailureModeName(r.mode);
    ++by_mode[mode];
    bool first = false, last = false, random = false;
    if (r.mode == FailureMode::kLogic) {
      ++logic;
      localize_total += r.localize_seconds;
      first = Covers(r.earliest_divergence, fix);
      last = Covers(r.last_divergence, fix);
      random = Covers(r.random_boundary, fix);
      hit_first += first;
      hit_last += last;
      hit_random += random;
    } else if (r.mode == FailureMode::kSyntax) {
      ++syntax;
      first = Covers(r.error_span, fix);
      hit_syntax += first;
    }
    auto span_text = [](const std::optional<SourceSpan>& s) {
      return s ? s->ToString() : std::string("-");
    };
    if (json_out) {
      json o = {{"name", name},
                {"route", mode},
                {"reason", r.reason},
                {"pass_fraction", r.pass_fraction},
                {"first_failing_test", r.first_failing_test},
                {"fix_lines", std::vector<int>(fix.begin(), fix.end())},
                {"earliest",
                 span_text(r.mode == FailureMode::kSyntax ? r.error_span : r.earliest_divergence)},
                {"last", span_text(r.last_divergence)},
                {"random", span_text(r.random_boundary)},
                {"earliest_hit", first},
                {"last_hit", last},
                {"random_hit", random},
                {"note", r.localization_note},
                {"grade_seconds", grade_s},
                {"route_seconds", route_s},
                {"localize_seconds", r.localize_seconds}};
      std::cout << o.dump() << "\n";
    } else {
      bool scored = r.mode == FailureMode::kLogic || r.mode == FailureMode::kSyntax;
      fmt::print("{:<28} {:<10} {:>5} {:>6} {:>6} {:>6} {:>8.3f} {:>8.3f} {:>9.3f}{}\n", name, mode,
                 r.first_failing_test + 1, scored ? Mark(first) : "-",
                 r.mode == FailureMode::kLogic ? Mark(last) : "-",
                 r.mode == FailureMode::kLogic ? Mark(random) : "-", grade_s, route_s,
                 r.localize_seconds,
                 r.localization_note.empty() ? "" : "  (" + r.localization_note + ")");
    }
  }
  // HumanEval pairs: the first K CodeT (CodeGen-16B) samples of every problem against the
  // canonical solution, for the cost columns (no fix lines exist to score against).
  double he_grade = 0, he_route = 0, he_localize = 0;
  int he_programs = 0, he_logic = 0, he_localized = 0;
  std::map<std::string, int> he_modes;
  if (humaneval_samples > 0) {
    auto he = egca::ReadMaybeGzipFile(std::string(EGCA_DATA_DIR) + "/humaneval/HumanEval.jsonl.gz");
    auto ct = egca::ReadMaybeGzipFile(
        std::string(EGCA_DATA_DIR) +
        "/samples/codet/HumanEval_codegen16B_temp0.8_topp0.95_num100.jsonl.gz");
    if (!he.ok() || !ct.ok()) {
      std::cerr << "quixbugs_localize: " << (!he.ok() ? he.status() : ct.status()).ToString()
                << "\n";
      return 2;
    }
    // CodeT's records are not in HumanEval's order and its prompts lack the doctests: match
    // them by the entry point their prompt defines, and complete CodeT's own prompt.
    std::map<std::string, egca::gates::Problem> by_entry;
    std::istringstream hs(he.value()), cs(ct.value());
    for (std::string hl; std::getline(hs, hl);) {
      json problem = json::parse(hl, nullptr, false);
      if (problem.is_discarded()) continue;
      egca::gates::Problem p;
      p.reference =
          problem["prompt"].get<std::string>() + problem["canonical_solution"].get<std::string>();
      p.tests.push_back(
          egca::tracer::TestCase::HumanEvalCheck(problem["test"], problem["entry_point"]));
      by_entry.emplace(problem["entry_point"].get<std::string>(), std::move(p));
    }
    for (std::string cl; std::getline(cs, cl);) {
      json samples = json::parse(cl, nullptr, false);
      if (samples.is_discarded()) continue;
      std::string prompt = samples["prompt"];
      const egca::gates::Problem* found = nullptr;
      for (const auto& [entry, problem] : by_entry) {
        if (prompt.find("def " + entry + "(") != std::string::npos) found = &problem;
      }
      if (found == nullptr) continue;
      const egca::gates::Problem& p = *found;
      for (int k = 0; k < humaneval_samples && k < static_cast<int>(samples["samples"].size());
           ++k) {
        std::string cand = prompt + samples["samples"][k].get<std::string>();
        auto t0 = std::chrono::steady_clock::now();
        auto graded = executor.value()->RunAll(cand, p.tests, options.run);
        double g = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        auto t1 = std::chrono::steady_clock::now();
        auto routed = router.Route(cand, p);
        double rt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
        if (!graded.ok() || !routed.ok()) continue;
        ++he_programs;
        he_grade += g;
        he_route += rt;
        ++he_modes[egca::gates::FailureModeName(routed->mode)];
        if (routed->mode == FailureMode::kLogic) {
          ++he_logic;
          he_localize += routed->localize_seconds;
          he_localized += routed->earliest_divergence.has_value();
        }
      }
    }
  }

  auto pct = [](int a, int b) { return b == 0 ? 0.0 : 100.0 * a / b; };
  std::string modes;
  for (const auto& [m, c] : by_mode) modes += fmt::format(" {}={}", m, c);
  std::cerr << fmt::format("\nprograms={} malformed={} routes:{}\n", records, bad, modes);
  std::cerr << fmt::format(
      "LOGIC: fix covered by earliest {}/{} ({:.1f}%), last {}/{} ({:.1f}%), "
      "random {}/{} ({:.1f}%)\n",
      hit_first, logic, pct(hit_first, logic), hit_last, logic, pct(hit_last, logic), hit_random,
      logic, pct(hit_random, logic));
  std::cerr << fmt::format("SYNTAX: fix covered by the error span {}/{} ({:.1f}%)\n", hit_syntax,
                           syntax, pct(hit_syntax, syntax));
  std::cerr << fmt::format(
      "cost: plain grading {:.3f} s, router {:.3f} s, ratio {:.3f}x; localization {:.3f} s "
      "total, {:.1f} ms per LOGIC program\n",
      grade_total, route_total, grade_total > 0 ? route_total / grade_total : 0.0, localize_total,
      logic ? 1000.0 * localize_total / logic : 0.0);
  if (he_programs > 0) {
    std::string hm;
    for (const auto& [m, c] : he_modes) hm += fmt::format(" {}={}", m, c);
    std::cerr << fmt::format(
        "HumanEval (CodeT, {} per problem): programs={} routes:{}; LOGIC localized {}/{}\n"
        "cost: plain grading {:.3f} s, router {:.3f} s, ratio {:.3f}x; localization {:.1f} ms per "
        "LOGIC program\n",
        humaneval_samples, he_programs, hm, he_localized, he_logic, he_grade, he_route,
        he_grade > 0 ? he_route / he_grade : 0.0, he_logic ? 1000.0 * he_localize / he_logic : 0.0);
  }
  return 0;
}
