// Calibration of the comparability gate I_cmp (EGCA section 3.4) on real passing programs:
// LLM programs that solve a HumanEval task (MapCoder runs with is_solved true, their final
// source code; LDB and Reflexion solved programs) scored against the HumanEval canonical
// solution (prompt + canonical_solution). Prints the score distribution, the comparable
// rate at the default threshold and at others, and a negative control: the same programs
// against the reference of a different task (task index + 1), which should mostly fail.
//
//   cfg_comparability [--data DIR] [--threshold T] [--iterations H] [--dump-scores FILE]
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "corpus.h"
#include "egca/cfg/cfg.h"
#include "egca/cfg/structure.h"
#include "egca/core/files.h"

namespace {

using json = nlohmann::json;

struct Sample {
  std::string source;  // "mapcoder", "ldb", "reflexion"
  std::string task_id;
  std::string code;
};

bool Solved(const json& r) {
  auto it = r.find("is_solved");
  if (it == r.end()) return false;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_string()) return it->get<std::string>() == "True";  // reflexion/ldb pitfall
  return false;
}

std::optional<std::string> FinalCode(const json& r) {
  for (const char* k : {"source_codes", "implementations"}) {
    auto it = r.find(k);
    if (it != r.end() && it->is_array() && !it->empty() && it->back().is_string()) {
      return it->back().get<std::string>();
    }
  }
  auto it = r.find("solution");
  if (it != r.end() && it->is_string()) return it->get<std::string>();
  return std::nullopt;
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Calibrate the structural comparability threshold on solved HumanEval programs"};
  std::string data = EGCA_DATA_DIR, dump;
  egca::cfg::StructureOptions so;
  app.add_option("--data", data, "shared data directory");
  app.add_option("--threshold", so.threshold, "threshold to report");
  app.add_option("--iterations", so.iterations, "WL iterations h");
  app.add_option("--dump-scores", dump, "write source,task,score,control lines here");
  bool kind_labels = false;
  app.add_flag("--kind-labels", kind_labels, "statement kinds as labels (default: coarse)");
  app.add_flag("--module-level", so.include_module_level, "count module-level statements");
  CLI11_PARSE(app, argc, argv);
  if (kind_labels) so.labels = egca::cfg::LabelMode::kKind;

  // References.
  egca::StatusOr<std::string> he = egca::ReadMaybeGzipFile(data + "/humaneval/HumanEval.jsonl.gz");
  if (!he.ok()) {
    fmt::print(stderr, "cfg_comparability: {}\n", he.status().ToString());
    return 2;
  }
  std::map<std::string, std::string> refs;
  std::vector<std::string> task_order;
  size_t pos = 0;
  while (pos < he->size()) {
    size_t nl = he->find('\n', pos);
    if (nl == std::string::npos) nl = he->size();
    json r = json::parse(std::string_view(he->data() + pos, nl - pos), nullptr, false);
    pos = nl + 1;
    if (!r.is_object()) continue;
    std::string id = r["task_id"].get<std::string>();
    refs[id] = r["prompt"].get<std::string>() + r["canonical_solution"].get<std::string>();
    task_order.push_back(id);
  }
  std::map<std::string, egca::cfg::ProgramCfg> ref_cfgs;
  std::map<std::string, egca::cfg::StructureFingerprint> ref_fp;
  for (const auto& [id, code] : refs) {
    auto p = egca::cfg::ProgramCfg::Build(code);
    if (!p.ok() || !p->parsed()) {
      fmt::print(stderr, "reference {} does not parse\n", id);
      continue;
    }
    ref_fp[id] = egca::cfg::StructureFingerprint::OfProgram(*p, so);
  }

  // Solved candidates.
  std::vector<Sample> samples;
  const std::vector<std::pair<std::string, std::string>> tarballs = {
      {"mapcoder", "/samples/mapcoder/final-results.tar.gz"},
      {"ldb", "/samples/ldb/ldb.tar.gz"},
      {"reflexion", "/samples/reflexion/programming_runs.tar.gz"},
  };
  for (const auto& [name, rel] : tarballs) {
    egca::cfg::corpus::TempExtract holder;
    egca::StatusOr<std::string> dir = egca::cfg::corpus::TempExtract::Into(data + rel, &holder);
    if (!dir.ok()) {
      fmt::print(stderr, "cfg_comparability: {}\n", dir.status().ToString());
      return 2;
    }
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(*dir)) {
      if (e.is_regular_file() && e.path().extension() == ".jsonl") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
      egca::StatusOr<std::string> text = egca::ReadFile(f);
      if (!text.ok()) continue;
      size_t p = 0;
      while (p < text->size()) {
        size_t nl = text->find('\n', p);
        if (nl == std::string::npos) nl = text->size();
        json r = json::parse(std::string_view(text->data() + p, nl - p), nullptr, false);
        p = nl + 1;
        if (!r.is_object() || !Solved(r)) continue;
        auto tid = r.find("task_id");
        if (tid == r.end() || !tid->is_string()) continue;
        std::string id = tid->get<std::string>();
        if (!refs.count(id)) continue;  // HumanEval tasks only
        std::optional<std::string> code = FinalCode(r);
        if (!code) continue;
        auto prompt = r.find("prompt");
        auto entry = r.find("entry_point");
        if (entry != r.end() && entry->is_string() &&
            code->find("def " + entry->get<std::string>()) == std::string::npos &&
            prompt != r.end() && prompt->is_string()) {
          *code = prompt->get<std::string>() + *code;  // body-only completion
        }
        samples.push_back(Sample{name, id, *code});
      }
    }
  }

  std::map<std::string, std::vector<double>> scores, control;
  std::FILE* out = dump.empty() ? nullptr : std::fopen(dump.c_str(), "w");
  int64_t not_parsed = 0;
  for (const Sample& s : samples) {
    auto p = egca::cfg::ProgramCfg::Build(s.code);
    if (!p.ok() || !p->parsed()) {
      ++not_parsed;
      continue;
    }
    egca::cfg::StructureFingerprint fp = egca::cfg::StructureFingerprint::OfProgram(*p, so);
    double sc = fp.Similarity(ref_fp[s.task_id]);
    auto it = std::find(task_order.begin(), task_order.end(), s.task_id);
    size_t other = (static_cast<size_t>(it - task_order.begin()) + 1) % task_order.size();
    double ctl = fp.Similarity(ref_fp[task_order[other]]);
    scores[s.source].push_back(sc);
    scores["all"].push_back(sc);
    control[s.source].push_back(ctl);
    control["all"].push_back(ctl);
    if (out) std::fprintf(out, "%s,%s,%.6f,%.6f\n", s.source.c_str(), s.task_id.c_str(), sc, ctl);
  }
  if (out) std::fclose(out);

  fmt::print("solved HumanEval programs: {} ({} do not parse, skipped), WL h={}\n", samples.size(),
             not_parsed, so.iterations);
  fmt::print("\n{:<10} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}  {:>9} {:>9}\n", "source",
             "n", "mean", "p05", "p10", "p25", "p50", "p75", "p90", "I_cmp=1", "control");
  for (const auto& [name, v] : scores) {
    double mean = 0;
    int64_t pass = 0, cpass = 0;
    for (double x : v) {
      mean += x;
      pass += x >= so.threshold;
    }
    for (double x : control[name]) cpass += x >= so.threshold;
    mean /= std::max<size_t>(1, v.size());
    fmt::print(
        "{:<10} {:>6} {:>6.3f} {:>6.3f} {:>6.3f} {:>6.3f} {:>6.3f} {:>6.3f} {:>6.3f}  {:>8.1f}% "
        "{:>8.1f}%\n",
        name, v.size(), mean, Quantile(v, 0.05), Quantile(v, 0.10), Quantile(v, 0.25),
        Quantile(v, 0.5), Quantile(v, 0.75), Quantile(v, 0.9),
        100.0 * pass / std::max<size_t>(1, v.size()),
        100.0 * cpass / std::max<size_t>(1, v.size()));
  }
  const auto& all = scores["all"];
  const auto& ctl = control["all"];
  fmt::print("\nhistogram of sim (all solved programs vs own reference | vs another task's)\n");
  for (int b = 0; b < 10; ++b) {
    double lo = b / 10.0, hi = (b + 1) / 10.0;
    int64_t n = 0, c = 0;
    for (double x : all) n += (x >= lo && (x < hi || (b == 9 && x <= 1.0)));
    for (double x : ctl) c += (x >= lo && (x < hi || (b == 9 && x <= 1.0)));
    fmt::print("  [{:.1f},{:.1f}{} {:>6} {:<40} | {:>6}\n", lo, hi, b == 9 ? "]" : ")", n,
               std::string(static_cast<size_t>(40.0 * n / std::max<size_t>(1, all.size())), '#'),
               c);
  }
  fmt::print("\nthreshold  comparable(solved)  comparable(control)\n");
  for (double t : {0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8}) {
    int64_t n = 0, c = 0;
    for (double x : all) n += x >= t;
    for (double x : ctl) c += x >= t;
    fmt::print("  {:.2f}{}      {:>6.1f}%             {:>6.1f}%\n", t,
               t == so.threshold ? "*" : " ", 100.0 * n / std::max<size_t>(1, all.size()),
               100.0 * c / std::max<size_t>(1, ctl.size()));
  }
  return 0;
}
