// Calibration of the default constraint-extraction policy (gates/constraints.h) on real
// programs: constraints are extracted from each HumanEval canonical solution (prompt +
// canonical_solution) and checked on CodeGen-16B samples from CodeT (codet prompt +
// sample), graded with the HumanEval check() in egca's sandbox. A correct program that a
// constraint rejects is a false rejection; the target is a few percent at most. Also counts
// how many incorrect (parsing, test-failing) programs the constraints flag, and times
// ComputeFacts against the CFG build it needs, in the same run.
//
// Optionally (--solved-corpus) adds the programs the MapCoder / LDB / Reflexion runs report
// as solving a HumanEval task (labels as reported, not regraded) as a second set of correct
// programs in a different style (GPT-class models).
//
//   constraints_calibration [--per-problem 20] [--workers 2] [--timeout 3]
//                           [--cache FILE] [--solved-corpus] [--examples 10] [--dump DIR]
//                           [--constraints FILE] [--write-extracted FILE]
// --constraints evaluates a user's (e.g. a teacher model's) constraints file on the same
// programs; --write-extracted writes the default policy's sets for editing.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "corpus.h"
#include "egca/cfg/cfg.h"
#include "egca/core/files.h"
#include "egca/gates/constraints.h"
#include "egca/tracer/executor.h"

namespace {

using json = nlohmann::json;
using egca::gates::ConstraintSpec;
using egca::gates::DataStructure;
using egca::gates::ExtractionPolicy;
using egca::gates::ProgramFacts;

struct Task {
  std::string id, entry, prompt, reference, test, codet_prompt;
  std::vector<std::string> samples;
};

struct Program {
  std::string task;
  std::string set;  // "codet" or "solved-corpus"
  std::string origin;
  std::string source;
  bool correct = false;
  std::optional<ProgramFacts> facts;  // absent: does not parse
};

uint64_t Fnv(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::vector<json> JsonLines(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    if (j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

struct Variant {
  std::string name;
  ExtractionPolicy policy;
  const egca::gates::ConstraintsByProblem* file = nullptr;  // set: the file's specs instead
};

std::vector<Variant> Variants() {
  std::vector<Variant> v;
  ExtractionPolicy base;
  v.push_back({"default", base});
  auto only = [&](std::string name, auto edit) {
    ExtractionPolicy p = base;
    edit(p);
    v.push_back({std::move(name), p});
  };
  only("depth slack 0", [](ExtractionPolicy& p) { p.loop_depth_slack = 0; });
  only("depth slack 2", [](ExtractionPolicy& p) { p.loop_depth_slack = 2; });
  only("depth floor 2", [](ExtractionPolicy& p) { p.loop_depth_floor = 2; });
  only("depth slack 2, floor 3",
       [](ExtractionPolicy& p) { p.loop_depth_slack = 2, p.loop_depth_floor = 3; });
  only("statements x4+10",
       [](ExtractionPolicy& p) { p.statement_factor = 4, p.statement_slack = 10; });
  only("statements x3+20",
       [](ExtractionPolicy& p) { p.statement_factor = 3, p.statement_slack = 20; });
  only("no statement budget", [](ExtractionPolicy& p) { p.statement_factor = 0; });
  only("statements x1.5+5",
       [](ExtractionPolicy& p) { p.statement_factor = 1.5, p.statement_slack = 5; });
  only("statements x2+5",
       [](ExtractionPolicy& p) { p.statement_factor = 2, p.statement_slack = 5; });
  only("statements x2+10",
       [](ExtractionPolicy& p) { p.statement_factor = 2, p.statement_slack = 10; });
  only("+forbid recursion if absent",
       [](ExtractionPolicy& p) { p.forbid_recursion_if_absent = true; });
  only("+forbid sorting if absent", [](ExtractionPolicy& p) { p.forbid_sorting_if_absent = true; });
  only("+forbid while if absent", [](ExtractionPolicy& p) { p.forbid_while_if_absent = true; });
  only("+forbid heap/deque if absent", [](ExtractionPolicy& p) {
    p.forbid_structures_if_absent = {DataStructure::kHeap, DataStructure::kDeque};
  });
  only("+forbid dict/set if absent", [](ExtractionPolicy& p) {
    p.forbid_structures_if_absent = {DataStructure::kDict, DataStructure::kSet};
  });
  only("stricter (x2+10, no while/sort/rec.)", [](ExtractionPolicy& p) {
    p.statement_factor = 2, p.statement_slack = 10;
    p.forbid_while_if_absent = p.forbid_sorting_if_absent = p.forbid_recursion_if_absent = true;
  });
  only("no imports/calls banned", [](ExtractionPolicy& p) {
    p.forbidden_imports.clear();
    p.forbidden_calls.clear();
  });
  return v;
}

std::string Kind(const std::string& constraint) {
  return constraint.substr(0, constraint.find('('));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Calibrate constraint extraction on graded CodeT samples (HumanEval)"};
  std::string data = EGCA_DATA_DIR;
  std::string cache =
      (std::filesystem::temp_directory_path() / "egca_constraints_grades.jsonl").string();
  int per_problem = 20, workers = 2, examples = 10;
  double timeout = 3;
  bool solved_corpus = false;
  app.add_option("--data", data, "shared data directory");
  app.add_option("--per-problem", per_problem, "CodeT samples per problem (1-100)")
      ->check(CLI::Range(1, 100));
  app.add_option("--workers", workers, "sandbox workers")->check(CLI::Range(1, 16));
  app.add_option("--timeout", timeout, "per-program wall limit, seconds");
  app.add_option("--cache", cache, "grade cache (JSONL; reruns skip graded programs)");
  app.add_flag("--solved-corpus", solved_corpus, "add MapCoder/LDB/Reflexion solved programs");
  app.add_option("--examples", examples, "false rejections to print");
  std::string dump_dir, write_extracted, constraints_file;
  app.add_option("--write-extracted", write_extracted,
                 "write the default policy's constraints for every task here (JSON)");
  app.add_option("--constraints", constraints_file,
                 "also evaluate this constraints file (tasks it lists; others unconstrained)");
  app.add_option("--dump", dump_dir, "write every false rejection (default policy) here as .py");
  CLI11_PARSE(app, argc, argv);

  egca::gates::ConstraintsByProblem user_constraints;
  if (!constraints_file.empty()) {
    auto read = egca::gates::ReadConstraintsFile(constraints_file);
    if (!read.ok()) {
      fmt::print(stderr, "constraints_calibration: {}\n", read.status().ToString());
      return 2;
    }
    user_constraints = std::move(read).value();
  }

  // Start the sandbox before any thread exists (ExecutorPool forks the caller).
  egca::tracer::ExecutorOptions eo;
  auto pool = egca::tracer::ExecutorPool::Create(eo, workers);
  if (!pool.ok()) {
    fmt::print(stderr, "constraints_calibration: {}\n", pool.status().ToString());
    return 1;
  }

  auto he = egca::ReadMaybeGzipFile(data + "/humaneval/HumanEval.jsonl.gz");
  auto codet = egca::ReadMaybeGzipFile(
      data + "/samples/codet/HumanEval_codegen16B_temp0.8_topp0.95_num100.jsonl.gz");
  if (!he.ok() || !codet.ok()) {
    fmt::print(stderr, "constraints_calibration: {}\n",
               (!he.ok() ? he.status() : codet.status()).ToString());
    return 2;
  }
  std::vector<json> he_rows = JsonLines(*he), codet_rows = JsonLines(*codet);
  if (he_rows.size() != codet_rows.size()) {
    fmt::print(stderr, "constraints_calibration: {} HumanEval tasks but {} CodeT records\n",
               he_rows.size(), codet_rows.size());
    return 2;
  }
  // CodeT's records are in another order and their prompts lack the doctest examples: a
  // record belongs to the task whose prompt starts with the record's prompt up to the end
  // of the line after its last "def" (the signature and the docstring's first line).
  auto key_of = [](const std::string& prompt) {
    size_t def = prompt.rfind("\ndef ");
    def = def == std::string::npos ? 0 : def + 1;
    size_t nl = prompt.find('\n', def);
    nl = nl == std::string::npos ? prompt.size() : prompt.find('\n', nl + 1);
    return prompt.substr(0, nl == std::string::npos ? prompt.size() : nl);
  };
  std::vector<Task> tasks;
  std::map<std::string, size_t> task_index;
  for (const json& row : he_rows) {
    Task t;
    t.id = row["task_id"];
    t.entry = row["entry_point"];
    t.prompt = row["prompt"];
    t.reference = t.prompt + row["canonical_solution"].get<std::string>();
    t.test = row["test"];
    task_index[t.id] = tasks.size();
    tasks.push_back(std::move(t));
  }
  for (size_t i = 0; i < codet_rows.size(); ++i) {
    std::string prompt = codet_rows[i]["prompt"];
    std::string key = key_of(prompt);
    Task* match = nullptr;
    for (Task& t : tasks)
      if (t.codet_prompt.empty() && t.prompt.compare(0, key.size(), key) == 0) {
        match = &t;
        break;
      }
    if (!match) {
      fmt::print(stderr, "constraints_calibration: CodeT record {} matches no HumanEval task\n", i);
      return 2;
    }
    match->codet_prompt = prompt;
    for (const json& s : codet_rows[i]["samples"]) match->samples.push_back(s.get<std::string>());
  }

  // ---- grade CodeT samples (cached by program hash) ----
  std::map<uint64_t, bool> grades;
  {
    std::ifstream in(cache);
    for (std::string line; std::getline(in, line);) {
      json j = json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("hash") && j.contains("passed"))
        grades[j["hash"].get<uint64_t>()] = j["passed"].get<bool>();
    }
  }
  std::vector<Program> programs;
  for (const Task& t : tasks)
    for (int i = 0; i < per_problem && i < static_cast<int>(t.samples.size()); ++i)
      programs.push_back({t.id, "codet", fmt::format("{} samples[{}]", t.id, i),
                          t.codet_prompt + t.samples[i], false, std::nullopt});
  std::vector<size_t> todo;
  for (size_t i = 0; i < programs.size(); ++i)
    if (!grades.count(Fnv(programs[i].source + "\x1f" + tasks[task_index[programs[i].task]].test)))
      todo.push_back(i);
  egca::tracer::RunOptions ro;
  ro.limits.wall_seconds = timeout;
  ro.limits.cpu_seconds = timeout;
  auto t0 = std::chrono::steady_clock::now();
  std::ofstream cache_out(cache, std::ios::app);
  for (size_t at = 0; at < todo.size(); at += 200) {
    std::vector<egca::tracer::ProgramJob> jobs;
    size_t end = std::min(todo.size(), at + 200);
    for (size_t k = at; k < end; ++k) {
      const Program& p = programs[todo[k]];
      const Task& t = tasks[task_index[p.task]];
      jobs.push_back({p.source, {egca::tracer::TestCase::HumanEvalCheck(t.test, t.entry)}});
    }
    auto results = (*pool)->RunBatch(jobs, ro);
    for (size_t k = at; k < end; ++k) {
      const Program& p = programs[todo[k]];
      const auto& r = results[k - at];
      if (!r.ok()) {
        fmt::print(stderr, "constraints_calibration: {}: {}\n", p.origin, r.status().ToString());
        continue;
      }
      uint64_t h = Fnv(p.source + "\x1f" + tasks[task_index[p.task]].test);
      grades[h] = r->all_passed();
      cache_out << json{{"hash", h},
                        {"task", p.task},
                        {"origin", p.origin},
                        {"passed", r->all_passed()}}
                       .dump()
                << "\n";
    }
    cache_out.flush();
    fmt::print(stderr, "graded {}/{} ({:.0f} s)\n", end, todo.size(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  for (Program& p : programs)
    p.correct = grades[Fnv(p.source + "\x1f" + tasks[task_index[p.task]].test)];

  // ---- the reported-solved corpus ----
  if (solved_corpus) {
    const std::vector<std::string> tarballs = {"/samples/mapcoder/final-results.tar.gz",
                                               "/samples/ldb/ldb.tar.gz",
                                               "/samples/reflexion/programming_runs.tar.gz"};
    for (const std::string& rel : tarballs) {
      egca::cfg::corpus::TempExtract holder;
      auto dir = egca::cfg::corpus::TempExtract::Into(data + rel, &holder);
      if (!dir.ok()) {
        fmt::print(stderr, "constraints_calibration: {}\n", dir.status().ToString());
        return 2;
      }
      std::vector<std::string> files;
      for (const auto& e : std::filesystem::recursive_directory_iterator(*dir))
        if (e.is_regular_file() && e.path().extension() == ".jsonl") files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const std::string& f : files) {
        auto text = egca::ReadFile(f);
        if (!text.ok()) continue;
        for (const json& r : JsonLines(*text)) {
          auto solved = r.find("is_solved");
          bool ok =
              solved != r.end() && ((solved->is_boolean() && solved->get<bool>()) ||
                                    (solved->is_string() && solved->get<std::string>() == "True"));
          auto tid = r.find("task_id");
          if (!ok || tid == r.end() || !tid->is_string() ||
              !task_index.count(tid->get<std::string>()))
            continue;
          std::optional<std::string> code;
          for (const char* k : {"source_codes", "implementations"}) {
            auto it = r.find(k);
            if (it != r.end() && it->is_array() && !it->empty() && it->back().is_string())
              code = it->back().get<std::string>();
          }
          if (!code && r.contains("solution") && r["solution"].is_string())
            code = r["solution"].get<std::string>();
          if (!code) continue;
          const Task& t = tasks[task_index[tid->get<std::string>()]];
          if (code->find("def " + t.entry) == std::string::npos) *code = t.prompt + *code;
          programs.push_back(
              {t.id, "solved-corpus", f.substr(dir->size()), *code, true, std::nullopt});
        }
      }
    }
  }

  // ---- facts (timed against the CFG build they need) ----
  double cfg_seconds = 0, facts_seconds = 0;
  int64_t parsed = 0;
  for (Program& p : programs) {
    auto c0 = std::chrono::steady_clock::now();
    auto program = egca::cfg::ProgramCfg::Build(p.source);
    auto c1 = std::chrono::steady_clock::now();
    if (!program.ok() || !program->parsed()) continue;
    p.facts = egca::gates::ComputeFacts(*program);
    auto c2 = std::chrono::steady_clock::now();
    cfg_seconds += std::chrono::duration<double>(c1 - c0).count();
    facts_seconds += std::chrono::duration<double>(c2 - c1).count();
    ++parsed;
  }

  // ---- evaluate every policy variant ----
  std::set<std::string> sets = {"codet"};
  if (solved_corpus) sets.insert("solved-corpus");
  fmt::print("constraints calibration: HumanEval references, {} CodeT samples/problem",
             per_problem);
  fmt::print("{}\n\n", solved_corpus ? " + reported-solved MapCoder/LDB/Reflexion programs" : "");
  for (const std::string& set : sets) {
    int64_t correct = 0, incorrect = 0, unparsed = 0;
    for (const Program& p : programs) {
      if (p.set != set) continue;
      if (!p.facts) {
        ++unparsed;
        continue;
      }
      ++(p.correct ? correct : incorrect);
    }
    fmt::print("{}: {} correct, {} incorrect (parse, fail tests), {} do not parse\n", set, correct,
               incorrect, unparsed);
  }
  fmt::print("\n{:<30} {:>7} {:>22} {:>9} {:>22}\n", "policy", "specs/p", "correct rejected",
             "problems", "incorrect flagged");
  // Default policy, per set: false rejections / flagged incorrect programs by kind.
  std::map<std::string, std::map<std::string, int64_t>> by_kind, flagged_by_kind;
  std::map<std::string, int64_t> rejected_by_run;  // solved corpus: which run they come from
  std::vector<std::string> example_lines;
  std::vector<Variant> variants = Variants();
  if (!constraints_file.empty())
    variants.push_back({"file " + std::filesystem::path(constraints_file).filename().string(),
                        {},
                        &user_constraints});
  for (const Variant& v : variants) {
    std::map<std::string, std::vector<ConstraintSpec>> specs;
    size_t spec_total = 0;
    for (const Task& t : tasks) {
      if (v.file) {
        auto it = v.file->find(t.id);
        if (it != v.file->end()) specs[t.id] = it->second;
        spec_total += specs[t.id].size();
        continue;
      }
      auto s = egca::gates::ExtractConstraints(t.reference, v.policy, t.prompt);
      if (!s.ok()) {
        fmt::print(stderr, "constraints_calibration: {}: {}\n", t.id, s.status().ToString());
        return 1;
      }
      spec_total += s->size();
      specs[t.id] = std::move(s).value();
    }
    if (v.name == "default" && !write_extracted.empty()) {
      egca::Status st = egca::gates::WriteConstraintsFile(write_extracted, specs);
      if (!st.ok()) {
        fmt::print(stderr, "constraints_calibration: {}\n", st.ToString());
        return 1;
      }
    }
    for (const std::string& set : sets) {
      int64_t correct = 0, rejected = 0, incorrect = 0, flagged = 0;
      std::set<std::string> problems;
      for (const Program& p : programs) {
        if (p.set != set || !p.facts) continue;
        auto violations = egca::gates::CheckFacts(*p.facts, specs[p.task]);
        if (p.correct) {
          ++correct;
          if (violations.empty()) continue;
          ++rejected;
          problems.insert(p.task);
          if (v.name == "default") {
            for (const auto& viol : violations) ++by_kind[set][Kind(viol.constraint)];
            if (set == "solved-corpus") ++rejected_by_run[p.origin];
            if (!dump_dir.empty()) {
              std::filesystem::create_directories(dump_dir);
              std::string header;
              for (const auto& viol : violations) header += "# " + viol.ToString() + "\n";
              std::ofstream(fmt::format("{}/{:05d}_{}.py", dump_dir, rejected,
                                        p.task.substr(p.task.find('/') + 1)))
                  << "# " << p.origin << "\n"
                  << header << p.source;
            }
            if (static_cast<int>(example_lines.size()) < examples)
              example_lines.push_back(
                  fmt::format("  {} [{}]: {}", p.origin, set, violations.front().ToString()));
          }
        } else {
          ++incorrect;
          flagged += !violations.empty();
          if (v.name == "default")
            for (const auto& viol : violations) ++flagged_by_kind[set][Kind(viol.constraint)];
        }
      }
      std::string label = sets.size() > 1 ? v.name + " [" + set + "]" : v.name;
      fmt::print("{:<30} {:>7.1f} {:>10} / {:<5} {:>4.1f}% {:>9} {:>10} / {:<5} {:>4.1f}%\n", label,
                 double(spec_total) / tasks.size(), rejected, correct,
                 100.0 * rejected / std::max<int64_t>(1, correct), problems.size(), flagged,
                 incorrect, 100.0 * flagged / std::max<int64_t>(1, incorrect));
    }
  }
  fmt::print("\ndefault policy, violations by constraint kind (a program may count twice)\n");
  fmt::print("  {:<14} {:<20} {:>16} {:>18}\n", "set", "kind", "correct programs",
             "incorrect programs");
  for (const std::string& set : sets) {
    std::set<std::string> kinds;
    for (const auto& [k, n] : by_kind[set]) kinds.insert(k);
    for (const auto& [k, n] : flagged_by_kind[set]) kinds.insert(k);
    for (const std::string& k : kinds)
      fmt::print("  {:<14} {:<20} {:>16} {:>18}\n", set, k, by_kind[set][k],
                 flagged_by_kind[set][k]);
  }
  if (!rejected_by_run.empty()) {
    std::vector<std::pair<int64_t, std::string>> runs;
    for (const auto& [run, n] : rejected_by_run) runs.push_back({n, run});
    std::sort(runs.rbegin(), runs.rend());
    fmt::print("\ndefault policy, solved-corpus false rejections by run (top 8)\n");
    for (size_t i = 0; i < runs.size() && i < 8; ++i)
      fmt::print("  {:>4}  {}\n", runs[i].first, runs[i].second);
  }
  if (!example_lines.empty()) fmt::print("\nexamples:\n");
  for (const std::string& l : example_lines) fmt::print("{}\n", l);
  fmt::print(
      "\nComputeFacts: {:.1f} us/program vs ProgramCfg::Build {:.1f} us/program ({} programs, "
      "ratio {:.2f})\n",
      1e6 * facts_seconds / std::max<int64_t>(1, parsed),
      1e6 * cfg_seconds / std::max<int64_t>(1, parsed), parsed,
      facts_seconds / std::max(1e-12, cfg_seconds));
  return 0;
}
