// Evaluation of a policy or of a samples file (egca-eval):
//   pass@k   n samples per problem, passing = every hidden test passes, the unbiased
//            estimator of Chen et al. 2021 (credit::PassAtK) for every k <= n;
//   Iter-k   Reflexion-style self-repair as Murphy reports it: the policy answers, the
//            visible tests (HumanEval: the docstring's examples; MBPP: the first test; APPS:
//            the first test, standing for the sample I/O) give feedback, the next attempt sees
//            a sliding window of the previous output(s) and feedback, the loop stops early
//            when the visible tests pass, and the last program is graded on the hidden tests.
//            R runs (seeds) give a mean and a standard deviation.
// Grading routes every program by its problem's language (program_router.h: Python through
// gates::Router, C++ through cpp::CppRouter; localization on only for the egca feedback
// mode) on `workers` sandboxed executors.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "egca/core/language.h"
#include "egca/core/status.h"
#include "egca/datasets/problem.h"
#include "egca/gates/router.h"
#include "egca/trainer/policy/chat_template.h"
#include "egca/trainer/rl/feedback.h"
#include "egca/trainer/policy/model.h"
#include "egca/trainer/rl/program_router.h"
#include "egca/trainer/policy/tokenizer.h"

namespace egca::trainer {

// The visible tests of a problem (see the file comment). HumanEval examples are lines
// ">>> call" followed by the printed result, turned into `assert call == result`; a problem
// with none has no visible test (Iter-k then cannot give feedback and makes one attempt).
std::vector<tracer::TestCase> VisibleTests(const datasets::ProblemRecord& record);

struct GradeOptions {
  int64_t workers = 2;
  double timeout_seconds = 4;
  int64_t memory_mb = 2048;
  bool progress = true;  // a progress line on stderr (done, rate, ETA)
  // Every problem is routed as this language; nullopt: each problem's own (record.language).
  std::optional<Language> lang;
  // The executors each worker starts (a problem of a language without one is an error of
  // its own, counted as not passing).
  bool python = true;
  bool cpp = false;
};

// Routes programs on a pool of executors (created on construction, before any model is
// loaded by the caller). Thread-compatible: one Grade call at a time.
class Grader {
 public:
  static StatusOr<std::unique_ptr<Grader>> Create(const GradeOptions& options);
  ~Grader();
  struct Job {
    const datasets::ProblemRecord* problem = nullptr;  // Borrowed.
    const std::vector<tracer::TestCase>* tests = nullptr;  // Borrowed; null: the problem's
    std::string completion;
    bool completion_is_body = false;
    bool localize = false;
  };
  struct Graded {
    std::string program;
    gates::RouteResult route;
    std::string error;  // egca's own failure (counted as not passing, reported)
    bool passed() const { return error.empty() && route.grading.all_passed(); }
  };
  std::vector<Graded> Grade(const std::vector<Job>& jobs, const std::string& what);
  // The language `problem` is routed as.
  Language LanguageOf(const datasets::ProblemRecord& problem) const {
    return RoutedLanguage(problem.language, options_.lang);
  }

 private:
  Grader() = default;
  GradeOptions options_;
  std::vector<std::unique_ptr<ProgramRouter>> routers_;  // one per worker
  std::map<std::string, std::shared_ptr<gates::ReferenceCache>> caches_;
};

struct PassAtKRow {
  std::string problem_id;
  int64_t n = 0, c = 0;
  int64_t modes[4] = {0, 0, 0, 0};  // SYNTAX, CONSTRAINT, LOGIC, CORRECT (credit::FailureMode)
  int64_t errors = 0;               // egca's own failures
  std::map<int64_t, double> pass_at_k;
};

struct PassAtKReport {
  std::vector<PassAtKRow> rows;
  std::map<int64_t, double> overall;  // k -> mean over problems (only k <= every problem's n)
  std::vector<int64_t> ks;
  int64_t samples = 0;
  nlohmann::ordered_json ToJson() const;
  std::string ToMarkdown(size_t max_rows = 0) const;  // overall table, then per problem
};

// pass@k of samples already written. `samples[i]` belongs to problem id `problem_ids[i]`.
struct EvalSample {
  std::string problem_id;
  std::string completion;
  bool completion_is_body = false;
};
StatusOr<PassAtKReport> PassAtKOfSamples(Grader& grader, const std::vector<datasets::ProblemRecord>& problems,
                                         const std::vector<EvalSample>& samples, const std::vector<int64_t>& ks);

struct PolicyEvalOptions {
  ChatTemplate chat = ChatTemplate::Qwen3();
  std::string system_prompt;
  std::string instruction =
      "Write a complete Python program that solves the problem below. Answer with the code "
      "in one ```python block.";
  std::string instruction_cpp =  // for problems routed as C++
      "Write a complete C++ program (with its #include lines, without a main function) that "
      "solves the problem below. Answer with the code in one ```cpp block.";
  double temperature = 0.2;
  double top_p = 0.95;
  int64_t max_new_tokens = 512;
  uint64_t seed = 0;
  int64_t batch_prompts = 8;  // prompts generated together
  std::vector<int32_t> stop_ids;
};

// pass@k of the policy: n samples per problem.
StatusOr<PassAtKReport> PassAtKOfPolicy(Grader& grader, DecoderModel& policy, const Tokenizer& tokenizer,
                                        const std::vector<datasets::ProblemRecord>& problems, int64_t n,
                                        const std::vector<int64_t>& ks, const PolicyEvalOptions& options);

struct IterKOptions {
  int64_t iterations = 3;  // k
  int64_t runs = 3;        // R
  int64_t window = 1;      // previous attempts (with their feedback) kept in the prompt
  FeedbackOptions feedback;
  std::string feedback_command;  // custom
  std::string revision_instruction =
      "The program above is not correct. Write a corrected complete Python program in one "
      "```python block.";
  std::string revision_instruction_cpp =  // for problems routed as C++
      "The program above is not correct. Write a corrected complete C++ program (without a "
      "main function) in one ```cpp block.";
};

struct IterKReport {
  int64_t iterations = 0, runs = 0, problems = 0;
  // [run][j]: pass@1 on the hidden tests of the program held after iteration j + 1 (a
  // problem that stopped early keeps its program).
  std::vector<std::vector<double>> curve;
  std::vector<double> final_pass;  // [run]
  double mean = 0, std = 0;        // of final_pass (population std)
  std::vector<double> mean_attempts;  // [run] attempts per problem
  struct Row {
    std::string problem_id;
    int64_t solved_runs = 0;
    double mean_attempts = 0;
  };
  std::vector<Row> rows;
  nlohmann::ordered_json ToJson() const;
  std::string ToMarkdown(size_t max_rows = 0) const;
};

StatusOr<IterKReport> RunIterK(Grader& grader, DecoderModel& policy, const Tokenizer& tokenizer,
                               const std::vector<datasets::ProblemRecord>& problems, const IterKOptions& iter,
                               const PolicyEvalOptions& options);

}  // namespace egca::trainer
