#include "egca/batch/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "egca/core/files.h"
#include "egca/core/text.h"
#include "egca/credit/pass_at_k.h"

namespace egca::batch {

using json = nlohmann::ordered_json;

namespace {

constexpr std::array<FailureMode, 4> kModes = {FailureMode::kSyntax, FailureMode::kConstraint,
                                               FailureMode::kLogic, FailureMode::kCorrect};
// SYNTAX, CONSTRAINT, LOGIC, CORRECT.
constexpr std::array<const char*, 4> kModeColors = {"#d62728", "#ff7f0e", "#1f77b4", "#2ca02c"};

size_t Index(FailureMode m) { return static_cast<size_t>(m); }

std::vector<std::pair<std::string, int64_t>> Top(const std::map<std::string, int64_t>& counts,
                                                 int top) {
  std::vector<std::pair<std::string, int64_t>> v(counts.begin(), counts.end());
  // Count descending, then name: deterministic.
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (top >= 0 && v.size() > static_cast<size_t>(top)) v.resize(static_cast<size_t>(top));
  return v;
}

// Fractions are rounded for the summary so that float noise (summation order) cannot make
// two equal runs differ; 1e-9 is far below anything a report shows.
double Round(double x) { return std::round(x * 1e9) / 1e9; }

json ModesJson(const ModeCounts& c) {
  json counts = json::object(), fractions = json::object();
  for (FailureMode m : kModes) {
    counts[credit::FailureModeName(m)] = c.count(m);
    fractions[credit::FailureModeName(m)] = Round(c.fraction(m));
  }
  return {{"samples", c.total()}, {"counts", counts}, {"fractions", fractions}};
}

json PairsJson(const std::vector<std::pair<std::string, int64_t>>& v, const char* key) {
  json out = json::array();
  for (const auto& [name, n] : v) out.push_back({{key, name}, {"count", n}});
  return out;
}

std::string Pct(double f) { return fmt::format("{:.1f}%", 100 * f); }

std::string MdEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string Shorten(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  size_t cut = width - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

std::string DifficultyName(const std::string& d) { return d.empty() ? "unknown" : d; }
std::string ModelName(const std::string& m) { return m.empty() ? "unknown" : m; }

}  // namespace

Report BuildReport(const StoreContents& contents, const ReportOptions& options) {
  Report report;
  report.options = options;
  report.config = contents.config;
  ReportSummary& s = report.summary;
  ReportTiming& t = report.timing;

  // Canonical order; one record per key.
  std::vector<const SampleRecord*> records;
  for (const auto& r : contents.samples) records.push_back(&r);
  std::stable_sort(
      records.begin(), records.end(), [](const SampleRecord* a, const SampleRecord* b) {
        return std::tie(a->problem, a->key, a->dup) < std::tie(b->problem, b->key, b->dup);
      });
  records.erase(std::unique(records.begin(), records.end(),
                            [](const SampleRecord* a, const SampleRecord* b) {
                              return a->problem == b->problem && a->key == b->key &&
                                     a->dup == b->dup;
                            }),
                records.end());

  s.credit = BuildCreditSummary(records, options.credit_group_sizes, options.credit_seed);
  std::map<std::string, std::string> kind_of;
  for (const auto& p : contents.problems) kind_of.emplace(p.problem, p.kind);
  int bins = std::max(1, options.position_bins);
  s.position_bins.assign(static_cast<size_t>(bins), 0);
  std::map<std::string, int64_t> constraints, errors, verdicts, kinds;
  std::map<std::string, KindQuality> quality;
  std::array<double, 4> k_sum{};
  std::array<int64_t, 4> k_n{};
  double k_total = 0, k_exec_total = 0, r_hat_total = 0, pos_total = 0;
  int64_t pos_n = 0, localized_programs = 0;
  std::set<std::string> problems;
  std::map<std::string, ProblemRow> rows;
  // (model, problem) -> (n, c) for pass@k per model.
  std::map<std::string, std::map<std::string, std::pair<int64_t, int64_t>>> model_n_c;
  std::map<std::string, ExampleRef> mode_examples, kind_examples;
  for (const SampleRecord* r : records) {
    ++s.samples;
    problems.insert(r->problem);
    const bool passes = r->tests > 0 && r->passed == r->tests;
    ProblemRow& row = rows[r->problem];
    row.problem = r->problem;
    ++row.samples;
    auto& model_row = model_n_c[r->model][r->problem];
    ++model_row.first;
    if (passes) {
      ++s.passing;
      ++row.passing;
      ++model_row.second;
    } else if (row.first_failing_key.empty() || r->key < row.first_failing_key) {
      row.first_failing_key = r->key;
    }
    r_hat_total += r->r_hat;
    if (r->empty) {
      // Nothing of an empty sample is the model's code: no mode, K or position to count.
      ++s.empty;
      ++row.empty;
      continue;
    }
    row.modes.n[Index(r->mode)]++;
    const char* mode_name = credit::FailureModeName(r->mode);
    mode_examples.emplace(mode_name, ExampleRef{mode_name, r->problem, r->key, r->dup, r->reason});
    if (r->localized) {
      kind_examples.emplace(r->divergence_kind, ExampleRef{"divergence: " + r->divergence_kind,
                                                           r->problem, r->key, r->dup, r->reason});
    }
    s.modes.n[Index(r->mode)]++;
    s.by_difficulty[r->difficulty].n[Index(r->mode)]++;
    s.by_model[r->model].n[Index(r->mode)]++;
    auto kind = kind_of.find(r->problem);
    s.by_kind[kind == kind_of.end() ? "" : kind->second].n[Index(r->mode)]++;
    if (r->k) {
      ++s.k_samples;
      k_total += *r->k;
      k_sum[Index(r->mode)] += *r->k;
      k_n[Index(r->mode)]++;
    }
    if (r->localized) {
      ++s.localized;
      kinds[r->divergence_kind]++;
      KindQuality& q = quality[r->divergence_kind];
      ++q.samples;
      if (r->localization_confidence) {
        double c = std::clamp(*r->localization_confidence, 0.0, 1.0);
        ++q.with_confidence;
        q.mean_confidence += c;  // a sum until the end
        q.confidence_bins[static_cast<size_t>(std::min(3, static_cast<int>(std::floor(c * 4))))]++;
      }
      if (r->k_executed) {
        ++s.k_executed_samples;
        k_exec_total += *r->k_executed;
      }
      if (r->relative_position) {
        double p = std::clamp(*r->relative_position, 0.0, 1.0);
        int b = std::min(bins - 1, static_cast<int>(std::floor(p * bins)));
        s.position_bins[static_cast<size_t>(b)]++;
        pos_total += p;
        ++pos_n;
      } else {
        ++s.position_in_prompt;
      }
    }
    if (!r->i_c) ++s.constraint_violated;
    if (r->i_cmp && !*r->i_cmp) ++s.not_comparable;
    if (r->mode == FailureMode::kConstraint && r->tests > 0 && r->passed == r->tests) {
      ++s.passing_constraint;
    }
    for (const auto& v : r->violations) constraints[v.constraint]++;
    if (r->mode == FailureMode::kSyntax) {
      std::string type = r->error_message.substr(0, r->error_message.find(':'));
      errors[type.empty() ? r->reason : type]++;
    }
    if (r->mode == FailureMode::kLogic) verdicts[r->verdict.empty() ? "none" : r->verdict]++;
    if (r->reference == ReferenceKind::kStandIn) ++s.samples_vs_stand_in;
    if (r->reference == ReferenceKind::kNone) ++s.samples_no_reference;
    if (!r->shared_result) {
      ++t.programs_routed;
      t.grade_seconds += r->grade_seconds;
      t.localize_seconds += r->localize_seconds;
      if (r->localized) ++localized_programs;
    }
  }
  s.problems = static_cast<int64_t>(problems.size());
  if (s.samples > 0) {
    s.r_hat_mean = Round(r_hat_total / static_cast<double>(s.samples));
    s.trigger_rate = Round(static_cast<double>(s.localized) / static_cast<double>(s.samples));
  }
  // pass@k: per problem, then the mean over problems (overall and per model).
  std::vector<std::pair<int64_t, int64_t>> n_c;
  for (auto& [id, row] : rows) {
    for (size_t i = 0; i < kPassAtK.size(); ++i) {
      std::optional<double> p = credit::PassAtK(row.samples, row.passing, kPassAtK[i]);
      if (p) row.pass_at[i] = Round(*p);
    }
    n_c.emplace_back(row.samples, row.passing);
    s.by_problem.push_back(row);
  }
  for (size_t i = 0; i < kPassAtK.size(); ++i) {
    std::optional<double> p = credit::MeanPassAtK(n_c, kPassAtK[i]);
    if (p) s.pass_at[i] = Round(*p);
  }
  if (model_n_c.size() > 1) {
    for (const auto& [model, per_problem] : model_n_c) {
      std::vector<std::pair<int64_t, int64_t>> m_n_c;
      for (const auto& [id, nc] : per_problem) m_n_c.push_back(nc);
      auto& out = s.pass_at_by_model[model];
      for (size_t i = 0; i < kPassAtK.size(); ++i) {
        std::optional<double> p = credit::MeanPassAtK(m_n_c, kPassAtK[i]);
        if (p) out[i] = Round(*p);
      }
    }
  }
  std::stable_sort(s.by_problem.begin(), s.by_problem.end(),
                   [](const ProblemRow& a, const ProblemRow& b) {
                     double pa = static_cast<double>(a.passing) / static_cast<double>(a.samples);
                     double pb = static_cast<double>(b.passing) / static_cast<double>(b.samples);
                     if (pa != pb) return pa < pb;
                     if (a.samples != b.samples) return a.samples > b.samples;
                     return a.problem < b.problem;
                   });
  for (FailureMode m : kModes) {
    auto it = mode_examples.find(credit::FailureModeName(m));
    if (it != mode_examples.end()) s.examples.push_back(it->second);
  }
  for (const auto& [kind, example] : kind_examples) s.examples.push_back(example);
  const size_t worst_begin = s.examples.size();
  constexpr size_t kWorstExamples = 5;
  for (const ProblemRow& row : s.by_problem) {
    if (s.examples.size() >= worst_begin + kWorstExamples) break;
    if (row.first_failing_key.empty()) continue;
    int32_t dup = 0;
    std::string what;
    for (const SampleRecord* r : records) {
      if (r->problem == row.problem && r->key == row.first_failing_key) {
        dup = r->dup;
        what = r->empty ? "empty sample" : r->reason;
        break;
      }
    }
    s.examples.push_back(
        {"worst problem " + row.problem, row.problem, row.first_failing_key, dup, what});
  }
  if (s.modes.count(FailureMode::kLogic) > 0) {
    s.trigger_rate_logic = Round(static_cast<double>(s.localized) /
                                 static_cast<double>(s.modes.count(FailureMode::kLogic)));
  }
  if (s.k_samples > 0) s.k_mean = Round(k_total / static_cast<double>(s.k_samples));
  for (size_t m = 0; m < 4; ++m) {
    if (k_n[m] > 0) s.k_mean_by_mode[m] = Round(k_sum[m] / static_cast<double>(k_n[m]));
  }
  if (s.k_executed_samples > 0) {
    s.k_executed_mean = Round(k_exec_total / static_cast<double>(s.k_executed_samples));
  }
  if (pos_n > 0) s.position_mean = Round(pos_total / static_cast<double>(pos_n));
  s.top_constraints = Top(constraints, options.top);
  s.top_errors = Top(errors, options.top);
  s.logic_verdicts = Top(verdicts, -1);
  s.divergence_kinds = Top(kinds, -1);
  for (const auto& [name, n] : s.divergence_kinds) {
    KindQuality q = quality[name];
    q.kind = name;
    q.mean_confidence =
        q.with_confidence ? Round(q.mean_confidence / static_cast<double>(q.with_confidence)) : 0;
    s.localization_quality.push_back(q);
  }

  // Problems by reference, in id order (one resolution per problem).
  std::map<std::string, const ProblemResolution*> resolutions;
  for (const auto& p : contents.problems) resolutions.emplace(p.problem, &p);
  for (const auto& [id, p] : resolutions) {
    switch (p->reference) {
      case ReferenceKind::kGiven:
        ++s.references_given;
        break;
      case ReferenceKind::kStandIn:
        ++s.references_stand_in;
        break;
      case ReferenceKind::kNone:
        ++s.references_none;
        break;
    }
    if (p->reference_failed)
      s.failed_references.push_back({id, p->reference_failure, p->reference});
  }
  s.bad = contents.bad;
  std::sort(s.bad.begin(), s.bad.end(), [](const BadRecord& a, const BadRecord& b) {
    return std::tie(a.file, a.line, a.message) < std::tie(b.file, b.line, b.message);
  });
  s.bad.erase(std::unique(s.bad.begin(), s.bad.end(),
                          [](const BadRecord& a, const BadRecord& b) {
                            return a.file == b.file && a.line == b.line && a.message == b.message;
                          }),
              s.bad.end());

  t.sessions = static_cast<int64_t>(contents.sessions.size());
  for (const auto& session : contents.sessions) {
    t.wall_seconds += session.wall_seconds;
    t.samples_routed += session.samples_routed;
    t.workers = session.workers;
    t.load_average = session.load_average;
    t.host = session.host;
  }
  if (t.wall_seconds > 0)
    t.samples_per_second = static_cast<double>(t.samples_routed) / t.wall_seconds;
  if (t.programs_routed > 0)
    t.grade_mean_ms = 1000 * t.grade_seconds / static_cast<double>(t.programs_routed);
  if (localized_programs > 0)
    t.localize_mean_ms = 1000 * t.localize_seconds / static_cast<double>(localized_programs);
  return report;
}

namespace {

json CreditJson(const CreditSummary& c) {
  json groups = json::array();
  for (const CreditGroupCounts& g : c.by_group_size) {
    groups.push_back({{"group_size", g.group_size},
                      {"groups", g.groups},
                      {"problems", g.problems},
                      {"grouped_samples", g.grouped_samples},
                      {"ungrouped_samples", g.ungrouped_samples},
                      {"logic_localized", g.logic_localized},
                      {"logic_localized_positive", g.logic_localized_positive},
                      {"logic_localized_positive_mixed", g.logic_localized_positive_mixed},
                      {"positive_share", Round(g.positive_share())},
                      {"groups_with_logic_and_syntax", g.groups_with_logic_and_syntax},
                      {"groups_logic_outranks_syntax", g.groups_logic_outranks_syntax},
                      {"logic_outranks_syntax_share", Round(g.outranks_share())}});
  }
  return {{"seed", c.seed},
          {"reward", "partial (R_hat * I_C), A_i = R_i - mean R"},
          {"groups", groups},
          {"samples", c.samples},
          {"syntax", c.syntax},
          {"syntax_by_kind", PairsJson(c.syntax_by_kind, "kind")}};
}

std::string CreditMarkdown(const CreditSummary& c) {
  std::string md = fmt::format(
      "\n## Credit: when localized credit rewards the bug\n\n"
      "Each problem's samples in seeded random groups of G (seed {}; the n mod G left over are "
      "not grouped), partial-credit reward R = R_hat * I_C (0 for SYNTAX), A_i = R_i - mean R. "
      "A localized LOGIC sample with A_i > 0 is one whose positive advantage the paper's "
      "operator puts on its divergent span (docs/credit.md, `credit.positive_logic`).\n\n"
      "| G | groups (problems) | ungrouped | localized LOGIC | with A > 0 | of those, in a group "
      "with SYNTAX/CONSTRAINT | groups with LOGIC and SYNTAX | groups where LOGIC outranks "
      "SYNTAX |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      c.seed);
  for (const CreditGroupCounts& g : c.by_group_size) {
    md += fmt::format("| {} | {} ({}) | {} | {} | {} ({}) | {} | {} | {} ({}) |\n", g.group_size,
                      g.groups, g.problems, g.ungrouped_samples, g.logic_localized,
                      g.logic_localized_positive, Pct(g.positive_share()),
                      g.logic_localized_positive_mixed, g.groups_with_logic_and_syntax,
                      g.groups_logic_outranks_syntax, Pct(g.outranks_share()));
  }
  if (c.syntax > 0) {
    md += fmt::format(
        "\nSYNTAX failures by exception kind ({} of {} non-empty samples; `credit.syntax: "
        "cause` widens NameError, UnboundLocalError and AttributeError on a module or self to "
        "the name's binding sites):\n\n| kind | samples | of SYNTAX |\n|---|---:|---:|\n",
        c.syntax, c.samples);
    for (const auto& [kind, n] : c.syntax_by_kind) {
      md += fmt::format("| {} | {} | {} |\n", MdEscape(kind), n,
                        Pct(static_cast<double>(n) / static_cast<double>(c.syntax)));
    }
  }
  return md;
}

json SummaryObject(const Report& report) {
  const ReportSummary& s = report.summary;
  json by_difficulty = json::object(), by_model = json::object(), by_kind = json::object();
  for (const auto& [k, c] : s.by_kind) by_kind[k.empty() ? "unknown" : k] = ModesJson(c);
  for (const auto& [d, c] : s.by_difficulty) by_difficulty[DifficultyName(d)] = ModesJson(c);
  for (const auto& [m, c] : s.by_model) by_model[ModelName(m)] = ModesJson(c);
  json k_by_mode = json::object();
  for (FailureMode m : kModes) k_by_mode[credit::FailureModeName(m)] = s.k_mean_by_mode[Index(m)];
  json quality_json = json::array();
  for (const KindQuality& q : s.localization_quality) {
    quality_json.push_back({{"kind", q.kind},
                            {"samples", q.samples},
                            {"with_confidence", q.with_confidence},
                            {"mean_confidence", q.mean_confidence},
                            {"confidence_bins", q.confidence_bins}});
  }
  json bins = json::array();
  int n = static_cast<int>(s.position_bins.size());
  for (int b = 0; b < n; ++b) {
    bins.push_back({{"from", Round(static_cast<double>(b) / n)},
                    {"to", Round(static_cast<double>(b + 1) / n)},
                    {"count", s.position_bins[static_cast<size_t>(b)]}});
  }
  json failed = json::array();
  for (const auto& f : s.failed_references) {
    failed.push_back({{"problem", f.problem},
                      {"failure", f.failure},
                      {"fallback", ReferenceKindName(f.fallback)}});
  }
  json bad = json::array();
  for (const auto& b : s.bad)
    bad.push_back({{"file", b.file}, {"line", b.line}, {"message", b.message}});
  auto pass_at = [](const std::array<std::optional<double>, 3>& v) {
    json out = json::object();
    for (size_t i = 0; i < kPassAtK.size(); ++i) {
      out[fmt::format("pass@{}", kPassAtK[i])] = v[i] ? json(*v[i]) : json(nullptr);
    }
    return out;
  };
  json by_problem = json::array();
  for (const ProblemRow& row : s.by_problem) {
    by_problem.push_back({{"problem", row.problem},
                          {"n", row.samples},
                          {"c", row.passing},
                          {"empty", row.empty},
                          {"pass_at_k", pass_at(row.pass_at)},
                          {"modes", ModesJson(row.modes)}});
  }
  json pass_by_model = json::object();
  for (const auto& [m, v] : s.pass_at_by_model) pass_by_model[ModelName(m)] = pass_at(v);
  json examples = json::array();
  for (const ExampleRef& e : s.examples) {
    examples.push_back({{"label", e.label},
                        {"problem", e.problem},
                        {"key", e.key},
                        {"dup", e.dup},
                        {"what", e.what}});
  }
  return {
      {"samples", s.samples},
      {"problems", s.problems},
      {"empty_samples", s.empty},
      {"passing_samples", s.passing},
      {"pass_at_k", pass_at(s.pass_at)},
      {"pass_at_k_by_model", pass_by_model},
      {"modes", ModesJson(s.modes)},
      {"by_difficulty", by_difficulty},
      {"by_model", by_model},
      {"by_problem_kind", by_kind},
      {"r_hat_mean", s.r_hat_mean},
      {"boundaries",
       {{"k_mean", s.k_mean},
        {"k_samples", s.k_samples},
        {"k_mean_by_mode", k_by_mode},
        {"k_executed_mean", s.k_executed_mean},
        {"k_executed_samples", s.k_executed_samples}}},
      {"localization",
       {{"localized", s.localized},
        {"trigger_rate", s.trigger_rate},
        {"trigger_rate_of_logic", s.trigger_rate_logic},
        {"divergence_kinds", PairsJson(s.divergence_kinds, "kind")},
        {"quality_by_kind", quality_json},
        {"position_histogram", bins},
        {"position_in_prompt", s.position_in_prompt},
        {"position_mean", s.position_mean}}},
      {"constraints",
       {{"violated_samples", s.constraint_violated},
        {"not_comparable_samples", s.not_comparable},
        {"passing_but_constraint_samples", s.passing_constraint},
        {"top_violated", PairsJson(s.top_constraints, "constraint")}}},
      {"syntax_errors", PairsJson(s.top_errors, "error")},
      {"logic_verdicts", PairsJson(s.logic_verdicts, "verdict")},
      {"references",
       {{"given", s.references_given},
        {"stand_in", s.references_stand_in},
        {"none", s.references_none},
        {"samples_vs_stand_in", s.samples_vs_stand_in},
        {"samples_without_reference", s.samples_no_reference},
        {"failed_references", failed}}},
      {"bad_records", bad},
      {"credit", CreditJson(s.credit)},
      {"by_problem", by_problem},
      {"examples", examples},
  };
}

json TimingObject(const Report& report) {
  const ReportTiming& t = report.timing;
  return {{"sessions", t.sessions},
          {"wall_seconds", t.wall_seconds},
          {"samples_routed", t.samples_routed},
          {"programs_routed", t.programs_routed},
          {"samples_per_second", t.samples_per_second},
          {"grade_seconds", t.grade_seconds},
          {"localize_seconds", t.localize_seconds},
          {"grade_mean_ms", t.grade_mean_ms},
          {"localize_mean_ms", t.localize_mean_ms},
          {"workers", t.workers},
          {"load_average", t.load_average},
          {"host", t.host}};
}

}  // namespace

std::string SummaryJson(const Report& report) {
  json j = {{"summary", SummaryObject(report)}};
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string ReportJson(const Report& report) {
  json j = {{"config", json::parse(report.config.ToJson())},
            {"summary", SummaryObject(report)},
            {"timing", TimingObject(report)}};
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string ReportMarkdown(const Report& report) {
  const ReportSummary& s = report.summary;
  const ReportTiming& t = report.timing;
  const RunConfig& c = report.config;
  std::string md;
  md += fmt::format("# {}\n\n", report.options.title);
  md += fmt::format(
      "Problems `{}` ({}), samples `{}`; constraints: {}; per-test timeout {} s; run-time "
      "errors routed to {}; shard {}/{}; egca {} ({}).\n\n",
      c.problems_path, c.problems_format, c.samples_path, c.constraints, c.timeout_seconds,
      c.runtime_error_is_logic ? "LOGIC" : "SYNTAX", c.shard_index, c.shard_count, c.egca_version,
      c.egca_commit.empty() ? "unknown commit" : c.egca_commit);
  md += fmt::format("**{} samples** of **{} problems**; mean R_hat {:.3f}.\n\n", s.samples,
                    s.problems, s.r_hat_mean);
  md += "![modes and divergence positions](report.svg)\n\n";

  auto pass_cell = [](const std::optional<double>& v) {
    return v ? fmt::format("{:.2f}%", 100 * *v) : std::string("n/a");
  };
  md += fmt::format(
      "## Tests passed\n\n{} samples ({}) pass every test. pass@k (unbiased estimator, mean "
      "over problems; n/a where some problem has fewer than k samples):\n\n"
      "| | pass@1 | pass@10 | pass@100 |\n|---|---:|---:|---:|\n| all samples | {} | {} | {} |\n",
      s.passing, Pct(s.samples ? static_cast<double>(s.passing) / s.samples : 0),
      pass_cell(s.pass_at[0]), pass_cell(s.pass_at[1]), pass_cell(s.pass_at[2]));
  for (const auto& [m, v] : s.pass_at_by_model) {
    md += fmt::format("| {} | {} | {} | {} |\n", MdEscape(ModelName(m)), pass_cell(v[0]),
                      pass_cell(v[1]), pass_cell(v[2]));
  }
  md +=
      "\nCORRECT is not \"passes the tests\": a program that passes every test is CONSTRAINT "
      "when a static gate (I_C, I_cmp) rejects it (eq. 5; `--passing-bypasses-gates` turns "
      "that off), and pass@k counts every passing program.\n\n";
  if (s.empty > 0) {
    md += fmt::format(
        "{} samples ({}) are empty (the completion holds no code): graded, never localized, "
        "left out of the mode tables below, counted as failures in pass@k.\n\n",
        s.empty, Pct(static_cast<double>(s.empty) / s.samples));
  }

  md += fmt::format("## Failure modes\n\n{} non-empty samples.\n\n", s.modes.total());
  md += "| mode | samples | fraction |\n|---|---:|---:|\n";
  for (FailureMode m : kModes) {
    md += fmt::format("| {} | {} | {} |\n", credit::FailureModeName(m), s.modes.count(m),
                      Pct(s.modes.fraction(m)));
  }
  auto table = [&](const char* title, const char* column,
                   const std::map<std::string, ModeCounts>& rows, bool model) {
    md += fmt::format(
        "\n### {}\n\n| {} | samples | SYNTAX | CONSTRAINT | LOGIC | CORRECT |\n"
        "|---|---:|---:|---:|---:|---:|\n",
        title, column);
    for (const auto& [name, counts] : rows) {
      md += fmt::format("| {} | {}", MdEscape(model ? ModelName(name) : DifficultyName(name)),
                        counts.total());
      for (FailureMode m : kModes) md += " | " + Pct(counts.fraction(m));
      md += " |\n";
    }
  };
  table("By difficulty", "difficulty", s.by_difficulty, false);
  table("By how the problem is tested", "tests", s.by_kind, false);
  table("By source model", "model", s.by_model, true);

  md += "\n## Boundaries and localization\n\n| measure | value |\n|---|---:|\n";
  md += fmt::format("| average K (boundaries per program, {} programs that parse) | {:.2f} |\n",
                    s.k_samples, s.k_mean);
  for (FailureMode m : kModes) {
    if (m == FailureMode::kSyntax) continue;
    md += fmt::format("| average K, {} | {:.2f} |\n", credit::FailureModeName(m),
                      s.k_mean_by_mode[Index(m)]);
  }
  md += fmt::format("| localized (LOGIC with an earliest divergence) | {} |\n", s.localized);
  md += fmt::format("| trigger rate (of all samples) | {} |\n", Pct(s.trigger_rate));
  md += fmt::format("| trigger rate (of LOGIC samples) | {} |\n", Pct(s.trigger_rate_logic));
  md += fmt::format("| executed boundaries on the failing test (localized) | {:.2f} |\n",
                    s.k_executed_mean);

  if (!s.localization_quality.empty()) {
    md +=
        "\n| earliest divergence kind | samples | mean confidence | confidence [0, .25) | [.25, .5) "
        "| [.5, .75) | [.75, 1] |\n|---|---:|---:|---:|---:|---:|---:|\n";
    for (const KindQuality& q : s.localization_quality) {
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", q.kind, q.samples,
                        q.with_confidence ? fmt::format("{:.2f}", q.mean_confidence) : "-",
                        q.confidence_bins[0], q.confidence_bins[1], q.confidence_bins[2],
                        q.confidence_bins[3]);
    }
  }
  md +=
      "\n### Where the earliest divergence falls\n\nRelative position of the span's first "
      "line within the generated code (0 = first generated line, 1 = after the last).\n\n"
      "| position | samples | share |\n|---|---:|---|\n";
  int64_t binned = 0;
  for (int64_t n : s.position_bins) binned += n;
  int nb = static_cast<int>(s.position_bins.size());
  for (int b = 0; b < nb; ++b) {
    int64_t n = s.position_bins[static_cast<size_t>(b)];
    double f = binned ? static_cast<double>(n) / static_cast<double>(binned) : 0;
    md += fmt::format("| [{:.1f}, {:.1f}) | {} | {} {} |\n", static_cast<double>(b) / nb,
                      static_cast<double>(b + 1) / nb, n,
                      std::string(static_cast<size_t>(std::lround(f * 40)), '#'), Pct(f));
  }
  md += fmt::format(
      "\nMean position {:.3f}; {} localized spans start in the prompt (not "
      "binned).\n",
      s.position_mean, s.position_in_prompt);

  md += fmt::format(
      "\n## Constraints\n\n{} samples violate a constraint (I_C = 0); {} are not "
      "comparable to the reference (I_cmp = 0).\n\n",
      s.constraint_violated, s.not_comparable);
  md += fmt::format(
      "{} CONSTRAINT samples pass every test (R_hat = 1): the gates, not the "
      "tests, decide their mode.\n\n",
      s.passing_constraint);
  if (!s.top_constraints.empty()) {
    md += "| most violated constraint | samples |\n|---|---:|\n";
    for (const auto& [name, n] : s.top_constraints)
      md += fmt::format("| `{}` | {} |\n", MdEscape(name), n);
  }
  if (!s.top_errors.empty()) {
    md += "\n## SYNTAX samples by error\n\n| error | samples |\n|---|---:|\n";
    for (const auto& [name, n] : s.top_errors)
      md += fmt::format("| {} | {} |\n", MdEscape(name), n);
  }
  if (!s.logic_verdicts.empty()) {
    md += "\n## LOGIC samples by first failing verdict\n\n| verdict | samples |\n|---|---:|\n";
    for (const auto& [name, n] : s.logic_verdicts) md += fmt::format("| {} | {} |\n", name, n);
  }

  md += fmt::format(
      "\n## References\n\n| reference | problems | samples |\n|---|---:|---:|\n"
      "| given (passes its own tests) | {} | {} |\n| stand-in (a passing candidate) | {} | {} |\n"
      "| none (no passing candidate: graded only) | {} | {} |\n",
      s.references_given, s.samples - s.samples_vs_stand_in - s.samples_no_reference,
      s.references_stand_in, s.samples_vs_stand_in, s.references_none, s.samples_no_reference);
  if (!s.failed_references.empty()) {
    md +=
        fmt::format("\n{} given references fail their own tests:\n\n", s.failed_references.size());
    size_t shown = 0;
    for (const auto& f : s.failed_references) {
      if (++shown > 30) {
        md += fmt::format("- ... and {} more (report.json)\n", s.failed_references.size() - 30);
        break;
      }
      md += fmt::format("- {}: {} (routed against: {})\n", f.problem,
                        MdEscape(Shorten(f.failure, 160)), ReferenceKindName(f.fallback));
    }
  }

  // Per problem, worst first.
  constexpr size_t kProblemRows = 30;
  md += fmt::format(
      "\n## Problems, worst first\n\n{} of {} problems (all of them are in report.json). "
      "c = samples that pass every test; the mode mix is over non-empty samples.\n\n"
      "| problem | n | c | empty | pass@1 | pass@10 | SYNTAX | CONSTRAINT | LOGIC | CORRECT |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      std::min(kProblemRows, s.by_problem.size()), s.by_problem.size());
  for (size_t i = 0; i < s.by_problem.size() && i < kProblemRows; ++i) {
    const ProblemRow& row = s.by_problem[i];
    md += fmt::format("| {} | {} | {} | {} | {} | {}", MdEscape(row.problem), row.samples,
                      row.passing, row.empty, pass_cell(row.pass_at[0]), pass_cell(row.pass_at[1]));
    for (FailureMode m : kModes) md += fmt::format(" | {}", row.modes.count(m));
    md += " |\n";
  }
  if (!s.examples.empty()) {
    md +=
        "\n## Examples to look at\n\nOne sample per mode and per divergence kind, then the "
        "worst problems' first failing sample. `egca-batch show STORE KEY` prints its route and "
        "trace view (`--html FILE` writes the page; `egca-batch report --views` writes the pages "
        "of all of them and links them here).\n\n| example | problem | key | why |\n"
        "|---|---|---|---|\n";
    for (const ExampleRef& e : s.examples) {
      std::string key =
          fmt::format("`{}{}`", e.key, e.dup > 0 ? fmt::format("#{}", e.dup) : "");
      auto view = report.options.example_views.find(fmt::format("{}#{}", e.key, e.dup));
      if (view != report.options.example_views.end()) {
        key = fmt::format("[{}]({})", key, view->second);
      }
      md += fmt::format("| {} | {} | {} | {} |\n", MdEscape(e.label), MdEscape(e.problem), key,
                        MdEscape(Shorten(e.what, 120)));
    }
  }

  md += CreditMarkdown(s.credit);

  md += fmt::format("\n## Bad records\n\n{} bad input records were reported and skipped.\n",
                    s.bad.size());
  if (!s.bad.empty()) {
    md += "\n";
    size_t shown = 0;
    for (const auto& b : s.bad) {
      if (++shown > 50) {
        md += fmt::format("- ... and {} more (report.json)\n", s.bad.size() - 50);
        break;
      }
      md += "- " + MdEscape(Shorten(b.ToString(), 200)) + "\n";
    }
  }

  md += "\n## Timing\n\n| measure | value |\n|---|---:|\n";
  md += fmt::format("| wall time ({} session{}) | {:.1f} s |\n", t.sessions,
                    t.sessions == 1 ? "" : "s", t.wall_seconds);
  md += fmt::format("| samples routed / programs routed | {} / {} |\n", t.samples_routed,
                    t.programs_routed);
  md += fmt::format("| samples/s | {:.1f} |\n", t.samples_per_second);
  md += fmt::format("| grading (untraced runs), total / per program | {:.1f} s / {:.1f} ms |\n",
                    t.grade_seconds, t.grade_mean_ms);
  md += fmt::format(
      "| localization (traced runs + alignment), total / per localized program | "
      "{:.1f} s / {:.1f} ms |\n",
      t.localize_seconds, t.localize_mean_ms);
  md += fmt::format("| workers | {} |\n| load average (1 min, end of run) | {:.2f} |\n", t.workers,
                    t.load_average);
  return md;
}

std::string ReportSvg(const Report& report) {
  const ReportSummary& s = report.summary;
  struct Row {
    std::string label;
    ModeCounts counts;
  };
  std::vector<std::pair<std::string, std::vector<Row>>> groups;
  groups.push_back({"all samples", {{"all", s.modes}}});
  std::vector<Row> models, difficulties;
  for (const auto& [m, c] : s.by_model) models.push_back({ModelName(m), c});
  for (const auto& [d, c] : s.by_difficulty) difficulties.push_back({DifficultyName(d), c});
  if (!models.empty()) groups.push_back({"by source model", models});
  if (!difficulties.empty()) groups.push_back({"by difficulty", difficulties});
  if (!s.by_kind.empty()) {
    std::vector<Row> kinds;
    for (const auto& [k, c] : s.by_kind) kinds.push_back({DifficultyName(k), c});
    groups.push_back({"by how the problem is tested", kinds});
  }

  const int width = 960, label_w = 300, bar_w = 560, row_h = 22;
  std::string body;
  int y = 60;
  // Legend.
  for (size_t i = 0; i < kModes.size(); ++i) {
    int x = label_w + static_cast<int>(i) * 140;
    body += fmt::format(
        "<rect x=\"{}\" y=\"32\" width=\"14\" height=\"14\" fill=\"{}\"/>"
        "<text x=\"{}\" y=\"44\">{}</text>\n",
        x, kModeColors[i], x + 20, credit::FailureModeName(kModes[i]));
  }
  for (const auto& [title, rows] : groups) {
    y += 8;
    body += fmt::format("<text x=\"10\" y=\"{}\" font-weight=\"bold\">{}</text>\n", y + 14,
                        XmlEscape(title));
    y += 22;
    for (const Row& row : rows) {
      body += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", label_w - 8,
                          y + 15, XmlEscape(Shorten(row.label, 44)));
      double x = label_w;
      for (size_t i = 0; i < kModes.size(); ++i) {
        double w = bar_w * row.counts.fraction(kModes[i]);
        if (w <= 0) continue;
        body += fmt::format(
            "<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\">"
            "<title>{} {} ({})</title></rect>\n",
            x, y, w, row_h - 4, kModeColors[i], credit::FailureModeName(kModes[i]),
            row.counts.count(kModes[i]), Pct(row.counts.fraction(kModes[i])));
        if (w >= 40) {
          body += fmt::format(
              "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#fff\">{:.0f}%</text>\n",
              x + w / 2, y + 14, 100 * row.counts.fraction(kModes[i]));
        }
        x += w;
      }
      body += fmt::format("<text x=\"{}\" y=\"{}\">n={}</text>\n", label_w + bar_w + 8, y + 15,
                          row.counts.total());
      y += row_h;
    }
  }
  // Histogram of relative positions.
  y += 30;
  int64_t top = 1, binned = 0;
  for (int64_t n : s.position_bins) {
    top = std::max(top, n);
    binned += n;
  }
  body += fmt::format(
      "<text x=\"10\" y=\"{}\" font-weight=\"bold\">earliest divergence: relative position in the "
      "generated code ({} localized samples)</text>\n",
      y, binned);
  y += 16;
  const int hist_h = 180, hist_x = label_w;
  int nb = static_cast<int>(s.position_bins.size());
  double bw = static_cast<double>(bar_w) / std::max(1, nb);
  for (int b = 0; b < nb; ++b) {
    int64_t n = s.position_bins[static_cast<size_t>(b)];
    double h = hist_h * static_cast<double>(n) / static_cast<double>(top);
    double x = hist_x + b * bw;
    body += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
        "fill=\"#1f77b4\"><title>[{:.1f}, {:.1f}): {}</title></rect>\n",
        x + 1, y + hist_h - h, bw - 2, h, static_cast<double>(b) / nb,
        static_cast<double>(b + 1) / nb, n);
    body += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                        x + bw / 2, y + hist_h - h - 4, n);
  }
  body += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/>\n", hist_x,
                      y + hist_h, hist_x + bar_w, y + hist_h);
  for (int b = 0; b <= nb; b += std::max(1, nb / 5)) {
    body += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.1f}</text>\n",
                        hist_x + b * bw, y + hist_h + 16, static_cast<double>(b) / nb);
  }
  y += hist_h + 40;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n"
      "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">{}</text>\n"
      "<text x=\"10\" y=\"44\">{} samples, {} problems</text>\n",
      width, y, width, y, XmlEscape(Shorten(report.options.title, 110)), s.samples, s.problems);
  return svg + body + "</svg>\n";
}

Status WriteReport(const Report& report, const std::string& dir) {
  EGCA_RETURN_IF_ERROR(WriteFileAtomic(dir + "/report.json", ReportJson(report)));
  EGCA_RETURN_IF_ERROR(WriteFileAtomic(dir + "/report.md", ReportMarkdown(report)));
  return WriteFileAtomic(dir + "/report.svg", ReportSvg(report));
}

}  // namespace egca::batch
