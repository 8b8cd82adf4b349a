// Report arithmetic on hand-made records (every expected value computed by hand in the
// comments), determinism, and the well-formedness of the SVG.
#include "egca/batch/report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

namespace egca::batch {
namespace {

// A sample key for tests: `n` as 64 hex digits (keys sort as the numbers do).
std::string TestKey(uint64_t n) { return fmt::format("{:064x}", n); }

SampleRecord Rec(const std::string& problem, uint64_t key, FailureMode mode,
                 const std::string& model, const std::string& difficulty,
                 std::optional<int32_t> k) {
  SampleRecord r;
  r.problem = problem;
  r.key = TestKey(key);
  r.mode = mode;
  r.model = model;
  r.difficulty = difficulty;
  r.k = k;
  return r;
}

LocatedSpan At(int line) {
  LocatedSpan s;
  s.program.begin.line = line;
  s.program.end.line = line;
  return s;
}

// 8 distinct samples (+ one duplicate record of the 8th):
//   #  mode        model diff       K   localized  position   notes
//   1  SYNTAX      A     intro      -   -          -          SyntaxError
//   2  CONSTRAINT  A     intro      4   -          -          I_cmp = 0
//   3  CONSTRAINT  B     interview  6   -          -          I_C = 0: two violations
//   4  LOGIC       B     interview  10  yes (kx 4) 0.05       r_hat 0.5
//   5  LOGIC       A     interview  8   yes (kx 6) 0.55       vs stand-in
//   6  LOGIC       B     ""         7   no         -          vs stand-in, TIMEOUT
//   7  LOGIC       A     intro      9   yes (kx 2) in prompt
//   8  CORRECT     A     intro      5   -          -          r_hat 1
StoreContents Contents() {
  StoreContents c;
  c.config.problems_path = "p.jsonl";
  c.config.egca_version = "0.1.0";
  auto& s = c.samples;
  s.push_back(Rec("p1", 1, FailureMode::kSyntax, "A", "intro", std::nullopt));
  s.back().error_message = "SyntaxError: invalid syntax";
  s.push_back(Rec("p1", 2, FailureMode::kConstraint, "A", "intro", 4));
  s.back().i_cmp = false;
  s.push_back(Rec("p1", 3, FailureMode::kConstraint, "B", "interview", 6));
  s.back().i_c = false;
  s.back().i_cmp = true;
  s.back().passed = s.back().tests = 2;
  s.back().violations = {{"max_loop_depth(1)", "depth 2", std::nullopt},
                         {"forbids_sorting", "sorted()", std::nullopt}};
  s.push_back(Rec("p2", 4, FailureMode::kLogic, "B", "interview", 10));
  s.back().localized = true;
  s.back().k_executed = 4;
  s.back().earliest = At(3);
  s.back().relative_position = 0.05;
  s.back().divergence_kind = "value";
  s.back().localization_confidence = 0.9;
  s.back().r_hat = 0.5;
  s.back().verdict = "WRONG_ANSWER";
  s.push_back(Rec("p2", 5, FailureMode::kLogic, "A", "interview", 8));
  s.back().localized = true;
  s.back().k_executed = 6;
  s.back().earliest = At(9);
  s.back().relative_position = 0.55;
  s.back().divergence_kind = "control";
  s.back().localization_confidence = 0.25;
  s.back().reference = ReferenceKind::kStandIn;
  s.back().verdict = "WRONG_ANSWER";
  s.push_back(Rec("p2", 6, FailureMode::kLogic, "B", "", 7));
  s.back().reference = ReferenceKind::kStandIn;
  s.back().verdict = "TIMEOUT";
  s.push_back(Rec("p3", 7, FailureMode::kLogic, "A", "intro", 9));
  s.back().localized = true;
  s.back().k_executed = 2;
  s.back().earliest = At(1);
  s.back().divergence_kind = "value";
  s.back().localization_confidence = 0.3;
  s.back().verdict = "WRONG_ANSWER";
  s.push_back(Rec("p3", 8, FailureMode::kCorrect, "A", "intro", 5));
  s.back().r_hat = 1.0;
  s.back().grade_seconds = 0.2;
  s.push_back(s.back());  // the same key again (a resumed run's repeat): counted once
  s.back().shared_result = true;

  ProblemResolution given, stand_in, none;
  given.problem = "p1";
  stand_in.problem = "p2";
  stand_in.reference = ReferenceKind::kStandIn;
  stand_in.reference_failed = true;
  stand_in.reference_failure = "reference 1: test 2: WRONG_ANSWER";
  none.problem = "p3";
  none.reference = ReferenceKind::kNone;
  c.problems = {given, stand_in, none};
  c.bad = {{"s.jsonl", 9, "missing field \"completion\""},
           {"s.jsonl", 2, "not JSON"},
           {"s.jsonl", 2, "not JSON"}};
  c.sessions = {{10.0, 6, 6, 2, 1.5, "", ""}, {5.0, 2, 2, 2, 2.5, "", "host"}};
  return c;
}

TEST(Report, ModeFractionsPerModelAndDifficulty) {
  Report r = BuildReport(Contents());
  const ReportSummary& s = r.summary;
  EXPECT_EQ(s.samples, 8);
  EXPECT_EQ(s.problems, 3);
  EXPECT_EQ(s.modes.count(FailureMode::kSyntax), 1);
  EXPECT_EQ(s.modes.count(FailureMode::kConstraint), 2);
  EXPECT_EQ(s.modes.count(FailureMode::kLogic), 4);
  EXPECT_EQ(s.modes.count(FailureMode::kCorrect), 1);
  EXPECT_DOUBLE_EQ(s.modes.fraction(FailureMode::kLogic), 0.5);
  EXPECT_DOUBLE_EQ(s.modes.fraction(FailureMode::kSyntax), 0.125);
  // Model A: records 1, 2, 5, 7, 8; model B: 3, 4, 6.
  EXPECT_EQ(s.by_model.at("A").total(), 5);
  EXPECT_EQ(s.by_model.at("A").count(FailureMode::kLogic), 2);
  EXPECT_EQ(s.by_model.at("B").total(), 3);
  EXPECT_DOUBLE_EQ(s.by_model.at("B").fraction(FailureMode::kLogic), 2.0 / 3);
  EXPECT_EQ(s.by_difficulty.at("intro").total(), 4);
  EXPECT_EQ(s.by_difficulty.at("interview").total(), 3);
  EXPECT_EQ(s.by_difficulty.at("").total(), 1);
  // (0.5 + 1.0) / 8
  EXPECT_DOUBLE_EQ(s.r_hat_mean, 0.1875);
}

TEST(Report, BoundariesTriggerRateAndPositions) {
  Report r = BuildReport(Contents());
  const ReportSummary& s = r.summary;
  // K over the 7 samples that parse: (4 + 6 + 10 + 8 + 7 + 9 + 5) / 7 = 49 / 7.
  EXPECT_EQ(s.k_samples, 7);
  EXPECT_DOUBLE_EQ(s.k_mean, 7.0);
  EXPECT_DOUBLE_EQ(s.k_mean_by_mode[static_cast<size_t>(FailureMode::kConstraint)], 5.0);
  EXPECT_DOUBLE_EQ(s.k_mean_by_mode[static_cast<size_t>(FailureMode::kLogic)], 8.5);
  EXPECT_DOUBLE_EQ(s.k_mean_by_mode[static_cast<size_t>(FailureMode::kCorrect)], 5.0);
  // Localized: 4, 5, 7. Trigger rate 3/8 of all, 3/4 of LOGIC.
  EXPECT_EQ(s.localized, 3);
  EXPECT_DOUBLE_EQ(s.trigger_rate, 0.375);
  EXPECT_DOUBLE_EQ(s.trigger_rate_logic, 0.75);
  EXPECT_DOUBLE_EQ(s.k_executed_mean, 4.0);  // (4 + 6 + 2) / 3
  // Positions 0.05 -> bin [0.0, 0.1), 0.55 -> bin [0.5, 0.6); #7 starts in the prompt.
  ASSERT_EQ(s.position_bins.size(), 10u);
  std::vector<int64_t> bins = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0};
  EXPECT_EQ(s.position_bins, bins);
  EXPECT_EQ(s.position_in_prompt, 1);
  // value: #4, #7; control: #5.
  std::vector<std::pair<std::string, int64_t>> kinds = {{"value", 2}, {"control", 1}};
  EXPECT_EQ(s.divergence_kinds, kinds);
  // Quality by kind: value #4 (0.9) and #7 (0.3): mean 0.6, bins [.25, .5) and [.75, 1];
  // control #5 (0.25, the bin edge goes up): bin [.25, .5).
  ASSERT_EQ(s.localization_quality.size(), 2u);
  EXPECT_EQ(s.localization_quality[0].kind, "value");
  EXPECT_EQ(s.localization_quality[0].samples, 2);
  EXPECT_EQ(s.localization_quality[0].with_confidence, 2);
  EXPECT_DOUBLE_EQ(s.localization_quality[0].mean_confidence, 0.6);
  EXPECT_EQ(s.localization_quality[0].confidence_bins, (std::array<int64_t, 4>{0, 1, 0, 1}));
  EXPECT_EQ(s.localization_quality[1].kind, "control");
  EXPECT_DOUBLE_EQ(s.localization_quality[1].mean_confidence, 0.25);
  EXPECT_EQ(s.localization_quality[1].confidence_bins, (std::array<int64_t, 4>{0, 1, 0, 0}));
  std::string md = ReportMarkdown(r);
  EXPECT_NE(md.find("| value | 2 | 0.60 | 0 | 1 | 0 | 1 |"), std::string::npos) << md;
  EXPECT_DOUBLE_EQ(s.position_mean, 0.3);
}

TEST(Report, ConstraintsReferencesBadRecordsTiming) {
  Report r = BuildReport(Contents());
  const ReportSummary& s = r.summary;
  EXPECT_EQ(s.constraint_violated, 1);
  EXPECT_EQ(s.not_comparable, 1);
  EXPECT_EQ(s.passing_constraint, 1);  // #3 passes its 2 tests
  // Equal counts: by name.
  ASSERT_EQ(s.top_constraints.size(), 2u);
  EXPECT_EQ(s.top_constraints[0].first, "forbids_sorting");
  EXPECT_EQ(s.top_constraints[1].first, "max_loop_depth(1)");
  ASSERT_EQ(s.top_errors.size(), 1u);
  EXPECT_EQ(s.top_errors[0], (std::pair<std::string, int64_t>{"SyntaxError", 1}));
  ASSERT_EQ(s.logic_verdicts.size(), 2u);
  EXPECT_EQ(s.logic_verdicts[0], (std::pair<std::string, int64_t>{"WRONG_ANSWER", 3}));
  EXPECT_EQ(s.references_given, 1);
  EXPECT_EQ(s.references_stand_in, 1);
  EXPECT_EQ(s.references_none, 1);
  EXPECT_EQ(s.samples_vs_stand_in, 2);
  ASSERT_EQ(s.failed_references.size(), 1u);
  EXPECT_EQ(s.failed_references[0].problem, "p2");
  // Deduplicated and sorted by file, line.
  ASSERT_EQ(s.bad.size(), 2u);
  EXPECT_EQ(s.bad[0].line, 2);
  EXPECT_EQ(s.bad[1].line, 9);
  // Two sessions: 8 samples in 15 s.
  EXPECT_DOUBLE_EQ(r.timing.wall_seconds, 15.0);
  EXPECT_DOUBLE_EQ(r.timing.samples_per_second, 8.0 / 15.0);
  EXPECT_DOUBLE_EQ(r.timing.load_average, 2.5);
}

TEST(Report, SummaryIsIndependentOfRecordOrderAndTiming) {
  StoreContents a = Contents();
  StoreContents b = Contents();
  std::mt19937 rng(7);
  std::shuffle(b.samples.begin(), b.samples.end(), rng);
  std::shuffle(b.problems.begin(), b.problems.end(), rng);
  std::reverse(b.bad.begin(), b.bad.end());
  for (auto& s : b.samples) s.grade_seconds += 1;
  b.sessions.pop_back();
  std::string sa = SummaryJson(BuildReport(a));
  EXPECT_EQ(sa, SummaryJson(BuildReport(b)));
  EXPECT_NE(ReportJson(BuildReport(a)), ReportJson(BuildReport(b)));  // timing differs
  EXPECT_NE(sa.find("\"trigger_rate\": 0.375"), std::string::npos) << sa;
}

TEST(Report, MarkdownTables) {
  std::string md = ReportMarkdown(BuildReport(Contents()));
  EXPECT_NE(md.find("| SYNTAX | 1 | 12.5% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| LOGIC | 4 | 50.0% |"), std::string::npos);
  EXPECT_NE(md.find("| B | 3 | 0.0% | 33.3% | 66.7% | 0.0% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| unknown | 1 |"), std::string::npos);
  EXPECT_NE(md.find("| trigger rate (of all samples) | 37.5% |"), std::string::npos);
  EXPECT_NE(md.find("p2: reference 1: test 2: WRONG_ANSWER"), std::string::npos);
  EXPECT_NE(md.find("s.jsonl:9: missing field"), std::string::npos);
  EXPECT_NE(md.find("![modes and divergence positions](report.svg)"), std::string::npos);
}

// A minimal XML check: every tag closes in order, attributes are quoted, no stray '<'/'&'.
bool WellFormed(const std::string& xml, std::string* why) {
  std::vector<std::string> stack;
  size_t i = 0;
  while (i < xml.size()) {
    if (xml[i] == '&') {
      size_t semi = xml.find(';', i);
      std::string entity = xml.substr(i, semi == std::string::npos ? 1 : semi - i + 1);
      if (entity != "&lt;" && entity != "&gt;" && entity != "&amp;" && entity != "&quot;") {
        *why = "bad entity at " + std::to_string(i);
        return false;
      }
      i = semi + 1;
      continue;
    }
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    size_t close = i + 1;
    bool quoted = false;
    while (close < xml.size() && (quoted || xml[close] != '>')) {
      if (xml[close] == '"') quoted = !quoted;
      if (!quoted && xml[close] == '<') {
        *why = "'<' inside a tag at " + std::to_string(close);
        return false;
      }
      ++close;
    }
    if (close >= xml.size()) {
      *why = "unterminated tag";
      return false;
    }
    std::string tag = xml.substr(i + 1, close - i - 1);
    if (tag.rfind('/', 0) == 0) {
      std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) {
        *why = "</" + name + "> closes " + (stack.empty() ? "nothing" : stack.back());
        return false;
      }
      stack.pop_back();
    } else if (tag.back() != '/') {
      stack.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
    i = close + 1;
  }
  if (!stack.empty()) {
    *why = "<" + stack.back() + "> never closed";
    return false;
  }
  return true;
}

TEST(Report, SvgIsWellFormed) {
  StoreContents c = Contents();
  c.samples[0].model = "model <with> \"odd\" & chars";
  std::string svg = ReportSvg(BuildReport(c));
  std::string why;
  EXPECT_TRUE(WellFormed(svg, &why)) << why << "\n" << svg;
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  for (const char* mode : {"SYNTAX", "CONSTRAINT", "LOGIC", "CORRECT"}) {
    EXPECT_NE(svg.find(mode), std::string::npos) << mode;
  }
  EXPECT_NE(svg.find("model &lt;with&gt; &quot;odd&quot; &amp; chars"), std::string::npos);
  // The checker itself rejects broken markup.
  EXPECT_FALSE(WellFormed("<svg><rect></svg>", &why));
  EXPECT_FALSE(WellFormed("<svg>a & b</svg>", &why));
}

TEST(Report, EmptyStore) {
  StoreContents c;
  Report r = BuildReport(c);
  EXPECT_EQ(r.summary.samples, 0);
  EXPECT_DOUBLE_EQ(r.summary.trigger_rate, 0);
  std::string why;
  EXPECT_TRUE(WellFormed(ReportSvg(r), &why)) << why;
  EXPECT_NE(ReportMarkdown(r).find("**0 samples**"), std::string::npos);
}

// Issue 16, point 10: pass@k per problem and overall, with hand-computed values. Problem q1
// has 10 samples of which 3 pass (one of them CONSTRAINT: it passes but a gate rejects it)
// and 1 is empty; q2 has 10 samples, none passing.
//   q1: pass@1 = 3/10; pass@10 = 1 (n = k, c > 0). q2: pass@1 = 0, pass@10 = 0.
//   mean: pass@1 = 0.15, pass@10 = 0.5; pass@100: n < 100, absent.
TEST(Report, PassAtKPerProblemAndEmptySamplesApart) {
  StoreContents c;
  for (uint64_t k = 1; k <= 10; ++k) {
    SampleRecord r = Rec("q1", k, FailureMode::kLogic, "A", "", 5);
    r.tests = 4;
    r.passed = k <= 3 ? 4 : 1;
    if (k <= 2) r.mode = FailureMode::kCorrect;
    if (k == 3) r.mode = FailureMode::kConstraint;
    if (k == 10) {
      r.empty = true;
      r.passed = 0;
    }
    c.samples.push_back(r);
    SampleRecord f = Rec("q2", 100 + k, FailureMode::kSyntax, "A", "", std::nullopt);
    f.tests = 4;
    c.samples.push_back(f);
  }
  Report report = BuildReport(c);
  const ReportSummary& s = report.summary;
  EXPECT_EQ(s.samples, 20);
  EXPECT_EQ(s.empty, 1);
  EXPECT_EQ(s.passing, 3);
  EXPECT_EQ(s.modes.total(), 19);  // the empty sample is no mode's
  EXPECT_EQ(s.modes.count(FailureMode::kLogic), 6);
  ASSERT_TRUE(s.pass_at[0] && s.pass_at[1]);
  EXPECT_DOUBLE_EQ(*s.pass_at[0], 0.15);
  EXPECT_DOUBLE_EQ(*s.pass_at[1], 0.5);
  EXPECT_FALSE(s.pass_at[2]);
  ASSERT_EQ(s.by_problem.size(), 2u);
  EXPECT_EQ(s.by_problem[0].problem, "q2");  // worst first
  EXPECT_EQ(s.by_problem[1].samples, 10);
  EXPECT_EQ(s.by_problem[1].passing, 3);
  EXPECT_EQ(s.by_problem[1].empty, 1);
  EXPECT_DOUBLE_EQ(*s.by_problem[1].pass_at[0], 0.3);
  // One example per mode present, then the worst problems' first failing sample.
  std::vector<std::string> labels;
  for (const ExampleRef& e : s.examples) labels.push_back(e.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"SYNTAX", "CONSTRAINT", "LOGIC", "CORRECT",
                                              "worst problem q2", "worst problem q1"}));
  EXPECT_EQ(s.examples[5].key, TestKey(4));  // q1's smallest failing key
  std::string md = ReportMarkdown(report);
  EXPECT_NE(md.find("| all samples | 15.00% | 50.00% | n/a |"), std::string::npos) << md;
  EXPECT_NE(md.find("| q1 | 10 | 3 | 1 | 30.00% | 100.00% | 0 | 1 | 6 | 2 |"), std::string::npos)
      << md;
}

// Point 12: the SVG has the by-test-kind bars docs/batch.md promises, one kind or several.
TEST(Report, SvgHasBarsByTestKind) {
  StoreContents c = Contents();
  for (ProblemResolution& p : c.problems) p.kind = "assert";
  std::string svg = ReportSvg(BuildReport(c));
  EXPECT_NE(svg.find("by how the problem is tested"), std::string::npos);
  EXPECT_NE(svg.find(">assert</text>"), std::string::npos) << svg;
}

}  // namespace
}  // namespace egca::batch

namespace egca::batch {
namespace {

// The credit section (issue 37), by hand. Problem q, 8 samples (one group of G = 8 whatever
// the seed):
//   CORRECT r_hat 1 (x2)                   R = 1, 1
//   LOGIC localized r_hat 0.5, 0.25, 0     R = 0.5, 0.25, 0
//   LOGIC not localized r_hat 0.5          R = 0.5
//   SYNTAX r_hat 0.5 (x2: raised late)     R = 0 (SYNTAX gets no reward)
// mean R = 3.25 / 8 = 0.40625: of the 3 localized LOGIC samples only r_hat 0.5 has A > 0
// (+0.09375), in a group with SYNTAX; the group holds LOGIC and SYNTAX and LOGIC's best R
// 0.5 > SYNTAX's 0. Problem r has 4 samples: no group of 8. G = 16: no group at all.
TEST(Report, CreditSectionByHand) {
  StoreContents c;
  auto add = [&](const std::string& p, uint64_t key, FailureMode mode, double r_hat, bool loc) {
    SampleRecord r = Rec(p, key, mode, "A", "", std::nullopt);
    r.r_hat = r_hat;
    r.tests = 4;
    r.passed = static_cast<int32_t>(r_hat * 4);
    r.localized = loc;
    c.samples.push_back(r);
  };
  add("q", 1, FailureMode::kCorrect, 1.0, false);
  add("q", 2, FailureMode::kCorrect, 1.0, false);
  add("q", 3, FailureMode::kLogic, 0.5, true);
  add("q", 4, FailureMode::kLogic, 0.25, true);
  add("q", 5, FailureMode::kLogic, 0.0, true);
  add("q", 6, FailureMode::kLogic, 0.5, false);
  add("q", 7, FailureMode::kSyntax, 0.5, false);
  c.samples.back().error_type = "NameError";
  add("q", 8, FailureMode::kSyntax, 0.5, false);
  c.samples.back().error_message = "SyntaxError: invalid syntax";  // a store without error_type
  for (uint64_t k = 9; k <= 12; ++k) add("r", k, FailureMode::kLogic, 0.5, true);
  for (uint64_t seed : {0, 7}) {
    ReportOptions o;
    o.credit_seed = seed;
    const CreditSummary& cs = BuildReport(c, o).summary.credit;
    ASSERT_EQ(cs.by_group_size.size(), 2u);
    const CreditGroupCounts& g8 = cs.by_group_size[0];
    EXPECT_EQ(g8.group_size, 8);
    EXPECT_EQ(g8.groups, 1);
    EXPECT_EQ(g8.problems, 1);
    EXPECT_EQ(g8.ungrouped_samples, 4);
    EXPECT_EQ(g8.logic_localized, 3);
    EXPECT_EQ(g8.logic_localized_positive, 1);
    EXPECT_EQ(g8.logic_localized_positive_mixed, 1);
    EXPECT_EQ(g8.groups_with_logic_and_syntax, 1);
    EXPECT_EQ(g8.groups_logic_outranks_syntax, 1);
    EXPECT_DOUBLE_EQ(g8.positive_share(), 1.0 / 3);
    const CreditGroupCounts& g16 = cs.by_group_size[1];
    EXPECT_EQ(g16.groups, 0);
    EXPECT_EQ(g16.ungrouped_samples, 12);
    EXPECT_EQ(cs.syntax, 2);
    EXPECT_EQ(cs.samples, 12);
    ASSERT_EQ(cs.syntax_by_kind.size(), 2u);
    EXPECT_EQ(cs.syntax_by_kind[0], (std::pair<std::string, int64_t>{"NameError", 1}));
    EXPECT_EQ(cs.syntax_by_kind[1], (std::pair<std::string, int64_t>{"SyntaxError", 1}));
  }
  const Report report = BuildReport(c);
  EXPECT_NE(ReportMarkdown(report).find("| 8 | 1 (1) | 4 | 3 | 1 (33.3%) | 1 | 1 | 1 (100.0%) |"),
            std::string::npos)
      << ReportMarkdown(report);
  EXPECT_NE(SummaryJson(report).find("\"logic_localized_positive\": 1"), std::string::npos);
}

// Groups are drawn per problem: 16 samples make two groups of 8 whose make-up depends on the
// seed, never on the order the records come in.
TEST(Report, CreditGroupsAreSeededAndOrderFree) {
  StoreContents c;
  for (uint64_t k = 1; k <= 16; ++k) {
    SampleRecord r = Rec("p", k, k <= 4 ? FailureMode::kSyntax : FailureMode::kLogic, "A", "",
                         std::nullopt);
    r.r_hat = k <= 4 ? 0.0 : static_cast<double>(k % 4) / 4;
    r.localized = k > 4;
    c.samples.push_back(r);
  }
  StoreContents reversed = c;
  std::reverse(reversed.samples.begin(), reversed.samples.end());
  std::set<int64_t> positives;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    ReportOptions o;
    o.credit_seed = seed;
    const CreditGroupCounts a = BuildReport(c, o).summary.credit.by_group_size[0];
    const CreditGroupCounts b = BuildReport(reversed, o).summary.credit.by_group_size[0];
    EXPECT_EQ(a.groups, 2);
    EXPECT_EQ(a.logic_localized, 12);
    EXPECT_EQ(a.logic_localized_positive, b.logic_localized_positive) << seed;
    EXPECT_EQ(a.groups_logic_outranks_syntax, b.groups_logic_outranks_syntax) << seed;
    positives.insert(a.logic_localized_positive);
  }
  EXPECT_GT(positives.size(), 1u);  // the seed changes the groups
}

}  // namespace
}  // namespace egca::batch
