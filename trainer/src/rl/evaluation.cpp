#include "egca/trainer/rl/evaluation.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <numeric>
#include <thread>

#include <fmt/format.h>

#include "egca/core/mix.h"
#include "egca/credit/grpo.h"
#include "egca/credit/pass_at_k.h"
#include "egca/datasets/samples.h"
#include "egca/trainer/rl/problem_prompt.h"
#include "egca/trainer/policy/sampler.h"

namespace egca::trainer {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

std::string Trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string Pct(double v) { return fmt::format("{:.2f}", 100.0 * v); }

// The instruction before `problem`'s statement, by the language it is routed as.
const std::string& InstructionFor(const Grader& grader, const datasets::ProblemRecord& problem,
                                  const PolicyEvalOptions& options) {
  return grader.LanguageOf(problem) == Language::kCpp ? options.instruction_cpp : options.instruction;
}

}  // namespace

std::vector<tracer::TestCase> VisibleTests(const datasets::ProblemRecord& record) {
  std::vector<tracer::TestCase> out;
  if (record.tests.empty()) return out;
  const bool humaneval_style = record.tests.size() == 1 && record.tests.front().kind == tracer::TestKind::kAssert &&
                               !record.tests.front().entry_point.empty();
  if (!humaneval_style) {
    out.push_back(record.tests.front());
    return out;
  }
  // Docstring examples: ">>> expr" then the printed result on the next line(s) up to a
  // blank line, the next ">>>" or the end of the docstring.
  const std::vector<std::string> lines = Lines(record.prompt);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string l = Trim(lines[i]);
    if (l.rfind(">>> ", 0) != 0) continue;
    const std::string call = l.substr(4);
    std::string result;
    size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      const std::string r = Trim(lines[j]);
      if (r.empty() || r.rfind(">>>", 0) == 0 || r.find("\"\"\"") != std::string::npos ||
          r.find("'''") != std::string::npos) {
        break;
      }
      result += (result.empty() ? "" : " ") + r;
    }
    i = j - 1;
    if (result.empty()) continue;  // a statement, not an example with a printed value
    tracer::TestCase t = tracer::TestCase::Asserts(fmt::format("assert ({}) == ({})\n", call, result));
    t.name = fmt::format("example {}", out.size() + 1);
    out.push_back(std::move(t));
  }
  return out;
}

// ---- Grader ----------------------------------------------------------------------------

StatusOr<std::unique_ptr<Grader>> Grader::Create(const GradeOptions& options) {
  std::unique_ptr<Grader> g(new Grader());
  g->options_ = options;
  for (int64_t w = 0; w < std::max<int64_t>(1, options.workers); ++w) {
    EGCA_ASSIGN_OR_RETURN(auto r, ProgramRouter::Create(options.python, options.cpp));
    g->routers_.push_back(std::move(r));
  }
  return g;
}

Grader::~Grader() = default;

std::vector<Grader::Graded> Grader::Grade(const std::vector<Job>& jobs, const std::string& what) {
  std::vector<Graded> out(jobs.size());
  for (const Job& j : jobs) {
    auto& cache = caches_[j.problem->id];
    if (!cache) cache = std::make_shared<gates::ReferenceCache>();
  }
  std::atomic<size_t> next{0}, done{0};
  std::mutex progress_mu;
  const auto t0 = Clock::now();
  auto last_print = t0;
  auto work = [&](size_t w) {
    for (;;) {
      const size_t i = next.fetch_add(1);
      if (i >= jobs.size()) return;
      const Job& job = jobs[i];
      datasets::Sample sample;
      sample.problem_id = job.problem->id;
      sample.completion = job.completion;
      sample.completion_is_body = job.completion_is_body;
      const datasets::SampleProgram program = datasets::ProgramOf(sample, *job.problem);
      out[i].program = program.code;
      gates::Problem p;
      p.reference = job.problem->references.empty() ? std::string() : job.problem->references.front();
      p.tests = job.tests ? *job.tests : job.problem->tests;
      RouteSettings o;
      o.timeout_seconds = options_.timeout_seconds;
      o.memory_mb = options_.memory_mb;
      o.apps_conventions = job.problem->apps_conventions;
      o.localize = job.localize && !p.reference.empty();
      o.check_comparability = !p.reference.empty();
      auto route = routers_[w]->Route(LanguageOf(*job.problem), program.code, p, o, caches_.at(job.problem->id));
      if (route.ok()) {
        out[i].route = std::move(*route);
      } else {
        out[i].error = route.status().ToString();
      }
      const size_t d = ++done;
      if (options_.progress) {
        std::lock_guard<std::mutex> lock(progress_mu);
        if (Seconds(last_print) >= 2.0 || d == jobs.size()) {
          last_print = Clock::now();
          const double el = Seconds(t0), rate = el > 0 ? static_cast<double>(d) / el : 0;
          std::fprintf(stderr, "egca-eval: %s: %zu/%zu graded  %.1f/s  ETA %.0fs\n", what.c_str(), d, jobs.size(),
                       rate, rate > 0 ? static_cast<double>(jobs.size() - d) / rate : 0.0);
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 0; w < routers_.size(); ++w) threads.emplace_back(work, w);
  for (auto& t : threads) t.join();
  return out;
}

// ---- pass@k ----------------------------------------------------------------------------

namespace {

PassAtKReport Tally(const std::vector<datasets::ProblemRecord>& problems, const std::vector<size_t>& problem_of,
                    const std::vector<Grader::Graded>& graded, const std::vector<int64_t>& ks) {
  PassAtKReport report;
  report.ks = ks;
  std::vector<PassAtKRow> rows(problems.size());
  for (size_t p = 0; p < problems.size(); ++p) rows[p].problem_id = problems[p].id;
  for (size_t i = 0; i < graded.size(); ++i) {
    PassAtKRow& row = rows[problem_of[i]];
    ++row.n;
    if (graded[i].passed()) ++row.c;
    if (!graded[i].error.empty()) {
      ++row.errors;
    } else {
      ++row.modes[static_cast<int>(graded[i].route.mode)];
    }
  }
  std::vector<std::pair<int64_t, int64_t>> n_c;
  for (auto& row : rows) {
    if (row.n == 0) continue;
    for (int64_t k : ks) {
      if (auto v = credit::PassAtK(row.n, row.c, k)) row.pass_at_k[k] = *v;
    }
    n_c.emplace_back(row.n, row.c);
    report.rows.push_back(row);
  }
  for (int64_t k : ks) {
    if (auto v = credit::MeanPassAtK(n_c, k)) report.overall[k] = *v;
  }
  report.samples = static_cast<int64_t>(graded.size());
  return report;
}

}  // namespace

nlohmann::ordered_json PassAtKReport::ToJson() const {
  nlohmann::ordered_json j;
  j["problems"] = rows.size();
  j["samples"] = samples;
  nlohmann::ordered_json overall_j;
  for (const auto& [k, v] : overall) overall_j[fmt::format("pass@{}", k)] = v;
  j["overall"] = overall_j;
  auto arr = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    nlohmann::ordered_json jr;
    jr["problem_id"] = r.problem_id;
    jr["n"] = r.n;
    jr["c"] = r.c;
    for (const auto& [k, v] : r.pass_at_k) jr[fmt::format("pass@{}", k)] = v;
    nlohmann::ordered_json modes;
    for (int m = 0; m < 4; ++m) modes[credit::FailureModeName(static_cast<credit::FailureMode>(m))] = r.modes[m];
    jr["modes"] = modes;
    jr["egca_errors"] = r.errors;
    arr.push_back(jr);
  }
  j["per_problem"] = arr;
  return j;
}

std::string PassAtKReport::ToMarkdown(size_t max_rows) const {
  std::string out = fmt::format("{} problems, {} samples; pass@k in %, unbiased estimator (Chen et al. 2021); "
                                "passing = every hidden test passes.\n\n| k |", rows.size(), samples);
  std::string sep = "|---|";
  std::string vals = "| pass@k |";
  for (int64_t k : ks) {
    out += fmt::format(" {} |", k);
    sep += "---:|";
    auto it = overall.find(k);
    vals += it == overall.end() ? " n < k |" : fmt::format(" {} |", Pct(it->second));
  }
  out += "\n" + sep + "\n" + vals + "\n\n| problem | n | c |";
  std::string psep = "|---|---:|---:|";
  for (int64_t k : ks) {
    out += fmt::format(" pass@{} |", k);
    psep += "---:|";
  }
  out += " SYNTAX | CONSTRAINT | LOGIC | CORRECT |\n" + psep + "---:|---:|---:|---:|\n";
  size_t shown = 0;
  for (const auto& r : rows) {
    if (max_rows > 0 && shown++ >= max_rows) {
      out += fmt::format("| ... {} more | | |\n", rows.size() - max_rows);
      break;
    }
    out += fmt::format("| {} | {} | {} |", r.problem_id, r.n, r.c);
    for (int64_t k : ks) {
      auto it = r.pass_at_k.find(k);
      out += it == r.pass_at_k.end() ? " - |" : fmt::format(" {} |", Pct(it->second));
    }
    out += fmt::format(" {} | {} | {} | {} |\n", r.modes[0], r.modes[1], r.modes[2], r.modes[3]);
  }
  return out;
}

StatusOr<PassAtKReport> PassAtKOfSamples(Grader& grader, const std::vector<datasets::ProblemRecord>& problems,
                                         const std::vector<EvalSample>& samples, const std::vector<int64_t>& ks) {
  std::map<std::string, size_t> index;
  for (size_t p = 0; p < problems.size(); ++p) index[problems[p].id] = p;
  std::vector<Grader::Job> jobs;
  std::vector<size_t> problem_of;
  std::vector<std::string> unknown;
  for (const auto& s : samples) {
    auto it = index.find(s.problem_id);
    if (it == index.end()) {
      unknown.push_back(s.problem_id);
      continue;
    }
    jobs.push_back({&problems[it->second], nullptr, s.completion, s.completion_is_body, false});
    problem_of.push_back(it->second);
  }
  if (jobs.empty()) {
    return InvalidArgument(fmt::format("no sample matches a problem of the problem set (first sample's problem: '{}')",
                                       samples.empty() ? std::string() : samples.front().problem_id));
  }
  for (size_t i = 0; i < unknown.size() && i < 5; ++i) {
    std::fprintf(stderr, "egca-eval: sample for unknown problem '%s' skipped\n", unknown[i].c_str());
  }
  if (unknown.size() > 5) std::fprintf(stderr, "egca-eval: %zu samples for unknown problems skipped in all\n", unknown.size());
  return Tally(problems, problem_of, grader.Grade(jobs, "pass@k"), ks);
}

namespace {

StatusOr<std::vector<Completion>> SampleBatch(DecoderModel& policy, const Tokenizer& tokenizer,
                                              const std::vector<std::vector<int32_t>>& prompts, int64_t n,
                                              double temperature, const PolicyEvalOptions& o, uint64_t seed) {
  SamplingOptions so;
  so.set_num_samples_per_prompt(n).set_max_new_tokens(o.max_new_tokens).set_temperature(temperature)
      .set_top_p(temperature > 0 ? o.top_p : 1.0).set_seed(seed).set_stop_token_ids(o.stop_ids).set_tokenizer(tokenizer);
  return Generate(policy, prompts, so);
}

}  // namespace

StatusOr<PassAtKReport> PassAtKOfPolicy(Grader& grader, DecoderModel& policy, const Tokenizer& tokenizer,
                                        const std::vector<datasets::ProblemRecord>& problems, int64_t n,
                                        const std::vector<int64_t>& ks, const PolicyEvalOptions& options) {
  std::vector<Grader::Job> jobs;
  std::vector<size_t> problem_of;
  const auto t0 = Clock::now();
  for (size_t first = 0; first < problems.size(); first += static_cast<size_t>(options.batch_prompts)) {
    const size_t last = std::min(problems.size(), first + static_cast<size_t>(options.batch_prompts));
    std::vector<std::vector<int32_t>> prompts;
    for (size_t p = first; p < last; ++p) {
      EGCA_ASSIGN_OR_RETURN(std::string text, FormatConversation(options.chat, options.system_prompt,
                                                                 {{"user", ProblemUserMessage(problems[p], InstructionFor(grader, problems[p], options))}}));
      prompts.push_back(tokenizer.EncodeIds(text));
    }
    EGCA_ASSIGN_OR_RETURN(auto completions,
                          SampleBatch(policy, tokenizer, prompts, n, options.temperature, options,
                                      SplitMix64(options.seed ^ SplitMix64(first + 1))));
    for (const Completion& c : completions) {
      const size_t p = first + static_cast<size_t>(c.prompt_index);
      jobs.push_back({&problems[p], nullptr, c.text, false, false});
      problem_of.push_back(p);
    }
    const double el = Seconds(t0);
    std::fprintf(stderr, "egca-eval: generated %zu/%zu problems  %.1f s  ETA %.0fs\n", last, problems.size(), el,
                 el / static_cast<double>(last) * static_cast<double>(problems.size() - last));
  }
  return Tally(problems, problem_of, grader.Grade(jobs, "pass@k"), ks);
}

// ---- Iter-k ----------------------------------------------------------------------------

nlohmann::ordered_json IterKReport::ToJson() const {
  nlohmann::ordered_json j;
  j["iterations"] = iterations;
  j["runs"] = runs;
  j["problems"] = problems;
  j["pass@1_mean"] = mean;
  j["pass@1_std"] = std;
  j["pass@1_per_run"] = final_pass;
  j["curve_per_run"] = curve;
  j["mean_attempts_per_run"] = mean_attempts;
  auto arr = nlohmann::ordered_json::array();
  for (const auto& r : rows) arr.push_back({{"problem_id", r.problem_id}, {"solved_runs", r.solved_runs},
                                            {"mean_attempts", r.mean_attempts}});
  j["per_problem"] = arr;
  return j;
}

std::string IterKReport::ToMarkdown(size_t max_rows) const {
  std::string out = fmt::format("Iter-{}: {} problems, {} runs; pass@1 on the hidden tests in %, mean +- std over runs.\n\n"
                                "| after iteration |", iterations, problems, runs);
  std::string sep = "|---|";
  for (int64_t j = 1; j <= iterations; ++j) {
    out += fmt::format(" {} |", j);
    sep += "---:|";
  }
  out += "\n" + sep + "\n| pass@1 |";
  for (int64_t j = 0; j < iterations; ++j) {
    std::vector<double> v;
    for (const auto& c : curve) v.push_back(c[static_cast<size_t>(j)]);
    const credit::GroupStats s = credit::ComputeGroupStats(v);
    out += fmt::format(" {} +- {} |", Pct(s.mean), Pct(s.std));
  }
  out += "\n\n| problem | solved runs | mean attempts |\n|---|---:|---:|\n";
  size_t shown = 0;
  for (const auto& r : rows) {
    if (max_rows > 0 && shown++ >= max_rows) break;
    out += fmt::format("| {} | {}/{} | {:.2f} |\n", r.problem_id, r.solved_runs, runs, r.mean_attempts);
  }
  return out;
}

StatusOr<IterKReport> RunIterK(Grader& grader, DecoderModel& policy, const Tokenizer& tokenizer,
                               const std::vector<datasets::ProblemRecord>& problems, const IterKOptions& iter,
                               const PolicyEvalOptions& options) {
  if (iter.iterations < 1) return InvalidArgument("Iter-k: k must be >= 1");
  if (iter.runs < 1) return InvalidArgument("Iter-k: runs must be >= 1");
  if (iter.feedback.mode == FeedbackMode::kExpertEdits) {
    return InvalidArgument("Iter-k: feedback mode expert_edits is a training mode (no expert model in egca-eval)");
  }
  if (iter.feedback.mode == FeedbackMode::kCustom && iter.feedback_command.empty()) {
    return InvalidArgument("Iter-k: feedback mode custom needs a feedback command");
  }
  const size_t np = problems.size();
  std::vector<std::vector<tracer::TestCase>> visible(np);
  std::vector<std::string> user(np);
  for (size_t p = 0; p < np; ++p) {
    visible[p] = VisibleTests(problems[p]);
    user[p] = ProblemUserMessage(problems[p], InstructionFor(grader, problems[p], options));
  }
  IterKReport report;
  report.iterations = iter.iterations;
  report.runs = iter.runs;
  report.problems = static_cast<int64_t>(np);
  report.rows.resize(np);
  for (size_t p = 0; p < np; ++p) report.rows[p].problem_id = problems[p].id;
  const bool localize = iter.feedback.mode == FeedbackMode::kEgca;
  for (int64_t run = 0; run < iter.runs; ++run) {
    struct State {
      std::vector<std::pair<std::string, std::string>> history;  // (output, feedback)
      std::string current;
      bool done = false, hidden_pass = false;
      int64_t attempts = 0;
    };
    std::vector<State> st(np);
    std::vector<double> curve;
    for (int64_t j = 1; j <= iter.iterations; ++j) {
      std::vector<size_t> active;
      for (size_t p = 0; p < np; ++p) {
        if (!st[p].done) active.push_back(p);
      }
      if (active.empty()) {
        curve.push_back(curve.empty() ? 0.0 : curve.back());
        continue;
      }
      std::vector<std::vector<int32_t>> prompts;
      for (size_t p : active) {
        std::vector<ChatMessage> turns = {{"user", user[p]}};
        const size_t h = st[p].history.size();
        const size_t from = h > static_cast<size_t>(iter.window) ? h - static_cast<size_t>(iter.window) : 0;
        for (size_t k = from; k < h; ++k) {
          turns.push_back({"assistant", st[p].history[k].first});
          turns.push_back({"user", RevisionMessage(st[p].history[k].second, grader.LanguageOf(problems[p]) == Language::kCpp
                                                                                     ? iter.revision_instruction_cpp
                                                                                     : iter.revision_instruction)});
        }
        EGCA_ASSIGN_OR_RETURN(std::string text, FormatConversation(options.chat, options.system_prompt, turns));
        prompts.push_back(tokenizer.EncodeIds(text));
      }
      std::vector<Completion> completions;
      for (size_t first = 0; first < prompts.size(); first += static_cast<size_t>(options.batch_prompts)) {
        const size_t last = std::min(prompts.size(), first + static_cast<size_t>(options.batch_prompts));
        EGCA_ASSIGN_OR_RETURN(
            auto part, SampleBatch(policy, tokenizer, {prompts.begin() + first, prompts.begin() + last}, 1,
                                   options.temperature, options,
                                   SplitMix64(options.seed ^ SplitMix64((static_cast<uint64_t>(run) << 32) +
                                                                        (static_cast<uint64_t>(j) << 20) + first))));
        for (auto& c : part) {
          c.prompt_index += static_cast<int64_t>(first);
          completions.push_back(std::move(c));
        }
      }
      // Visible tests decide whether to stop; hidden tests score the program now held.
      std::vector<Grader::Job> vis_jobs, hid_jobs;
      std::vector<size_t> vis_of;
      for (const Completion& c : completions) {
        const size_t p = active[static_cast<size_t>(c.prompt_index)];
        st[p].current = c.text;
        ++st[p].attempts;
        hid_jobs.push_back({&problems[p], nullptr, c.text, false, false});
        if (!visible[p].empty()) {
          vis_jobs.push_back({&problems[p], &visible[p], c.text, false, localize});
          vis_of.push_back(p);
        } else {
          st[p].done = true;  // no visible test: no feedback to revise from
        }
      }
      const auto hid = grader.Grade(hid_jobs, fmt::format("run {} iteration {} hidden", run + 1, j));
      for (size_t i = 0; i < hid.size(); ++i) {
        st[active[static_cast<size_t>(completions[i].prompt_index)]].hidden_pass = hid[i].passed();
      }
      const auto vis = grader.Grade(vis_jobs, fmt::format("run {} iteration {} visible", run + 1, j));
      for (size_t i = 0; i < vis.size(); ++i) {
        const size_t p = vis_of[i];
        if (vis[i].passed()) {
          st[p].done = true;
          continue;
        }
        std::string fb;
        if (iter.feedback.mode == FeedbackMode::kCustom) {
          const auto in = FeedbackHookInput::For(
              user[p], j, st[p].current, vis[i].program, vis[i].route, vis[i].error,
              vis[i].error.empty() ? ExecutionFeedback(vis[i].route, visible[p], vis[i].program, iter.feedback) : "");
          auto hook = RunFeedbackHook(iter.feedback_command, in);
          if (!hook.ok()) return hook.status();
          fb = *hook;
        } else if (iter.feedback.mode != FeedbackMode::kPlain && vis[i].error.empty()) {
          fb = ExecutionFeedback(vis[i].route, visible[p], vis[i].program, iter.feedback);
        }
        st[p].history.emplace_back(st[p].current, fb);
      }
      double passed = 0;
      for (const auto& s : st) passed += s.hidden_pass ? 1 : 0;
      curve.push_back(passed / std::max<double>(1.0, static_cast<double>(np)));
    }
    double attempts = 0;
    for (size_t p = 0; p < np; ++p) {
      attempts += static_cast<double>(st[p].attempts);
      report.rows[p].solved_runs += st[p].hidden_pass ? 1 : 0;
      report.rows[p].mean_attempts += static_cast<double>(st[p].attempts) / static_cast<double>(iter.runs);
    }
    report.mean_attempts.push_back(attempts / std::max<double>(1.0, static_cast<double>(np)));
    report.final_pass.push_back(curve.back());
    report.curve.push_back(std::move(curve));
  }
  const credit::GroupStats stats = credit::ComputeGroupStats(report.final_pass);
  report.mean = stats.mean;
  report.std = stats.std;
  return report;
}

}  // namespace egca::trainer
