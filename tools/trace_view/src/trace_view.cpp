#include "egca/tools/trace_view.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "egca/core/text.h"
#include "egca/tracer/test_args.h"

namespace egca::tools {

std::string OneLine(const std::string& text, size_t width) {
  std::string out;
  for (char c : text) out += (c == '\n') ? std::string("\\n") : std::string(1, c == '\t' ? ' ' : c);
  if (out.size() <= width) return out;
  size_t cut = width > 3 ? width - 3 : width;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  return out.substr(0, cut) + "...";
}

std::string VerdictDetail(const egca::sandbox::Verdict& v) {
  using egca::sandbox::VerdictKind;
  switch (v.kind) {
    case VerdictKind::kOk:
      return v.actual.empty() ? "" : "-> " + v.actual;
    case VerdictKind::kWrongAnswer:
      // A failing assert of a test's main (C++) says which, in detail, with no values.
      if (v.actual.empty() && v.expected.empty() && !v.detail.empty()) return v.detail;
      return fmt::format("got {}, expected {}", v.actual, v.expected);
    case VerdictKind::kSyntaxError:
    case VerdictKind::kRuntimeError: {
      std::string text = v.error_type + (v.message.empty() ? "" : ": " + v.message);
      if (v.line > 0) text += fmt::format(" at {}:{}", v.line, v.column);
      if (!v.detail.empty()) text += " (" + v.detail + ")";
      return text;
    }
    default:
      return v.detail;
  }
}

namespace {

using egca::SourceSpan;
using egca::diff::AlignedPair;
using egca::diff::Divergence;
using egca::diff::DivergenceReport;
using egca::diff::Step;
using egca::gates::FailureMode;
using egca::gates::RouteResult;
using json = nlohmann::ordered_json;

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

std::string LineText(const std::string& source, int line) {
  egca::LineIndex index(source);
  if (line < 1 || line > index.line_count()) return "";
  return Trim(index.LineText(line));
}

// A test's verdict detail, saying where the expected value came from.
std::string TestDetail(const egca::sandbox::Verdict& v, bool from_reference) {
  std::string d = VerdictDetail(v);
  if (from_reference && v.kind == egca::sandbox::VerdictKind::kWrongAnswer) {
    d = fmt::format("got {}, the reference gives {}", v.actual, v.expected);
  } else if (from_reference && v.passed()) {
    d += d.empty() ? "same as the reference" : " (same as the reference)";
  }
  return d;
}

std::string Changes(const Step& s, size_t width) {
  std::string out;
  for (const std::string& name : s.changed) {
    for (const auto& [n, v] : s.state) {
      if (n == name) out += fmt::format("{}{}={}", out.empty() ? "" : " ", n, v);
    }
  }
  if (s.returned) out += (out.empty() ? "" : " ") + std::string("-> ") + s.return_value;
  if (!s.exception.empty()) out += (out.empty() ? "" : " ") + std::string("! ") + s.exception;
  return OneLine(out, width);
}

// Passing every test is not CORRECT when a gate rejects the program (eq. 5): say so.
std::string PassesGatedNote(const RouteResult& r) {
  if (!r.grading.all_passed() || r.mode == FailureMode::kCorrect) return "";
  return fmt::format(
      "passes all tests, but routed {} by a static gate (eq. 5; --passing-bypasses-gates: "
      "CORRECT)",
      egca::gates::FailureModeName(r.mode));
}

// Index of the last pair to show: the earliest divergence's pair (a control divergence is
// detected at the pair after the blamed step).
size_t LastPairShown(const DivergenceReport& r) {
  if (!r.earliest) return r.alignment.pairs.size();
  return std::min<size_t>(r.alignment.pairs.size(), static_cast<size_t>(r.earliest->pair) + 1);
}

// ---------------------------------------------------------------- text output
struct Style {
  bool color = false;
  size_t width = 120;  // terminal columns the tables must fit in
  std::string Bold(const std::string& s) const { return color ? "\x1b[1m" + s + "\x1b[0m" : s; }
  std::string Red(const std::string& s) const { return color ? "\x1b[1;31m" + s + "\x1b[0m" : s; }
  std::string Dim(const std::string& s) const { return color ? "\x1b[2m" + s + "\x1b[0m" : s; }
  std::string Mark(const std::string& s) const {
    return color ? "\x1b[1;97;41m" + s + "\x1b[0m" : s;
  }
};

void PrintSourceWithSpan(const std::string& source, const SourceSpan& span, const Style& st) {
  egca::LineIndex index(source);
  int first = std::max(1, span.begin.line - 3),
      last = std::min(index.line_count(), span.end.line + 3);
  for (int line = first; line <= last; ++line) {
    std::string text(index.LineText(line));
    bool inside = line >= span.begin.line && line <= span.end.line;
    size_t b = line == span.begin.line ? std::min<size_t>(span.begin.column, text.size()) : 0;
    size_t e = line == span.end.line ? std::min<size_t>(span.end.column, text.size()) : text.size();
    if (!inside || e < b) e = b = text.size();
    if (st.color) {
      fmt::print("{:>4} | {}{}{}\n", line, text.substr(0, b), st.Mark(text.substr(b, e - b)),
                 text.substr(e));
    } else {
      fmt::print("{}{:>3} | {}\n", inside ? ">" : " ", line, text);
      if (inside && e > b) fmt::print("      {}{}\n", std::string(b, ' '), std::string(e - b, '^'));
    }
  }
}

void PrintDivergence(const char* label, const Divergence& d, const std::string& cand,
                     const Style& st) {
  // C++ snapshots do not name their function: no "in".
  fmt::print("{} {} divergence{} at line {} [{}]: {}\n", st.Bold(label),
             egca::diff::DivergenceKindName(d.kind), d.function.empty() ? "" : " in " + d.function,
             d.line, d.span.ToString(), d.detail);
  if (!d.evidence.empty()) fmt::print("    confidence {:.2f}: {}\n", d.confidence, d.evidence);
  for (const auto& v : d.variables) {
    std::string name = v.candidate_name == v.reference_name
                           ? v.candidate_name
                           : v.candidate_name + " (ref: " + v.reference_name + ")";
    fmt::print("    {}: candidate {}  reference {}\n", name, OneLine(v.candidate_value, 60),
               OneLine(v.reference_value, 60));
  }
  if (!d.context.empty()) {
    std::string ctx;
    for (const auto& [n, v] : d.context) ctx += fmt::format(" {}={}", n, OneLine(v, 30));
    fmt::print("    at{}\n", ctx);
  }
}

// Column widths of the aligned-steps table in `width` terminal columns: each side's
// "line source" cell, and each side's changes.
struct StepColumns {
  size_t side = 36, changes = 40;
  explicit StepColumns(size_t width) {
    // A row: marker, step number and separators (9), two sides, " || " between the changes.
    size_t avail = width > 13 ? width - 13 : 0;
    side = std::clamp<size_t>(avail / 4, 12, 36);
    changes = std::max<size_t>(8, (avail > 2 * side ? avail - 2 * side : 0) / 2);
  }
};

void PrintTextOf(const RouteResult& r, const std::vector<egca::tracer::TestCase>& tests,
                 const std::vector<bool>& from_reference, const std::string& cand,
                 const std::string& ref, size_t max_steps, const Style& st) {
  fmt::print("{} {}  ({})\n", st.Bold("mode"), st.Bold(egca::gates::FailureModeName(r.mode)),
             r.reason);
  fmt::print("R_hat {:.4f} ({}/{})  I_C {}  R {:.4f}", r.pass_fraction, r.grading.passed,
             r.grading.total, r.constraints_satisfied ? 1 : 0, r.reward);
  if (r.comparability) {
    fmt::print("  I_cmp {} (similarity {:.3f}, threshold {:.2f})",
               r.comparability->comparable ? 1 : 0, r.comparability->score,
               r.comparability->threshold);
  }
  fmt::print("\n");
  if (!PassesGatedNote(r).empty()) fmt::print("{}\n", PassesGatedNote(r));
  fmt::print("\n");
  const size_t name_width = std::clamp<size_t>(st.width / 4, 16, 32);
  const size_t detail_width = st.width > name_width + 26 ? st.width - name_width - 26 : 20;
  for (size_t i = 0; i < r.grading.tests.size(); ++i) {
    const auto& v = r.grading.tests[i].verdict;
    std::string verdict = egca::sandbox::VerdictName(v.kind);
    fmt::print("  {:>3} {:<{}} {:<14} {}\n", i + 1, OneLine(tests[i].name, name_width), name_width,
               v.passed() ? verdict : st.Red(verdict),
               OneLine(TestDetail(v, from_reference[i]), detail_width));
  }
  for (const auto& c : r.constraint_violations) {
    fmt::print("  constraint violated: {}\n", c.ToString());
    if (c.span) PrintSourceWithSpan(cand, *c.span, st);
  }
  if (r.error_span) {
    fmt::print("\n{} [{}] {}\n", st.Bold("error"), r.error_span->ToString(), r.error_message);
    PrintSourceWithSpan(cand, *r.error_span, st);
  }
  if (r.mode != FailureMode::kLogic) return;
  fmt::print("\nlocalized on test {}: {}\n", r.first_failing_test + 1,
             OneLine(tests[r.first_failing_test].name, st.width > 30 ? st.width - 30 : 40));
  if (!r.divergence) {
    fmt::print("no localization: {}\n", r.localization_note);
    return;
  }
  const DivergenceReport& d = *r.divergence;
  const auto& a = d.alignment;
  const StepColumns cols(st.width);
  size_t end = LastPairShown(d);
  size_t begin = end > max_steps ? end - max_steps : 0;
  fmt::print("\n{:>5}  {:<{}} {:<{}} {}\n", "step", "candidate", cols.side, "reference", cols.side,
             "changes (candidate || reference)");
  if (begin > 0)
    fmt::print("{}\n", st.Dim(fmt::format("  ... {} earlier aligned steps agree", begin)));
  for (size_t k = begin; k < end; ++k) {
    const AlignedPair& p = a.pairs[k];
    auto side = [&](int32_t idx, const std::vector<Step>& steps, const std::string& src) {
      if (idx < 0) return std::string("-");
      const Step& s = steps[idx];
      return OneLine(fmt::format("{:>3} {}", s.first_line, LineText(src, s.first_line)), cols.side);
    };
    std::string ch = p.candidate >= 0 ? Changes(a.candidate_steps[p.candidate], cols.changes) : "";
    std::string rh = p.reference >= 0 ? Changes(a.reference_steps[p.reference], cols.changes) : "";
    std::string row = fmt::format("{}{:>4}  {:<{}} {:<{}} {}{}", p.diverges ? ">" : " ", k,
                                  side(p.candidate, a.candidate_steps, cand), cols.side,
                                  side(p.reference, a.reference_steps, ref), cols.side, ch,
                                  rh.empty() && ch.empty() ? "" : " || " + rh);
    fmt::print("{}\n", p.diverges ? st.Red(row) : row);
  }
  fmt::print("\n");
  if (!d.earliest) {
    fmt::print("no divergence found: {}\n", d.note);
    return;
  }
  PrintDivergence("earliest", *d.earliest, cand, st);
  PrintSourceWithSpan(cand, d.earliest->span, st);
  if (d.last && d.divergence_count > 1) {
    fmt::print("\n");
    PrintDivergence("last", *d.last, cand, st);
  }
  if (d.random_boundary)
    fmt::print("random executed boundary [{}]\n", d.random_boundary->ToString());
}

// ---------------------------------------------------------------- JSON output
json SpanJson(const std::optional<SourceSpan>& s) {
  if (!s) return nullptr;
  return {{"start_line", s->begin.line}, {"start_col", s->begin.column}, {"end_line", s->end.line},
          {"end_col", s->end.column},    {"begin_byte", s->begin_byte},  {"end_byte", s->end_byte}};
}

json ViolationsJson(const std::vector<egca::gates::ConstraintViolation>& violations) {
  json out = json::array();
  for (const auto& v : violations) {
    out.push_back(
        {{"constraint", v.constraint}, {"message", v.message}, {"span", SpanJson(v.span)}});
  }
  return out;
}

json StepJson(const Step& s) {
  json state = json::object();
  for (const auto& [n, v] : s.state) state[n] = v;
  json j = {{"function", s.function}, {"line", s.first_line}, {"block", s.block},
            {"frame", s.frame},       {"changed", s.changed}, {"state", state}};
  if (s.returned) j["return"] = s.return_value;
  if (!s.exception.empty()) j["exception"] = s.exception;
  return j;
}

json DivergenceJson(const Divergence& d) {
  json vars = json::array();
  for (const auto& v : d.variables) {
    vars.push_back({{"candidate_name", v.candidate_name},
                    {"reference_name", v.reference_name},
                    {"candidate_value", v.candidate_value},
                    {"reference_value", v.reference_value}});
  }
  json ctx = json::object();
  for (const auto& [n, v] : d.context) ctx[n] = v;
  return {{"kind", egca::diff::DivergenceKindName(d.kind)},
          {"function", d.function},
          {"line", d.line},
          {"span", SpanJson(d.span)},
          {"block_span", SpanJson(d.block_span)},
          {"pair", d.pair},
          {"detail", d.detail},
          {"confidence", d.confidence},
          {"evidence", d.evidence},
          {"variables", vars},
          {"context", ctx}};
}

// Test numbers are 1-based here as in the text and HTML views.
json RouteJsonOf(const RouteResult& r, const std::vector<egca::tracer::TestCase>& tests,
                 const std::vector<bool>& from_reference) {
  json t = json::array();
  for (size_t i = 0; i < r.grading.tests.size(); ++i) {
    const auto& v = r.grading.tests[i].verdict;
    t.push_back({{"number", i + 1},
                 {"name", tests[i].name},
                 {"verdict", egca::sandbox::VerdictName(v.kind)},
                 {"passed", v.passed()},
                 {"expected_from_reference", static_cast<bool>(from_reference[i])},
                 {"detail", TestDetail(v, from_reference[i])}});
  }
  json j = {{"mode", egca::gates::FailureModeName(r.mode)},
            {"reason", r.reason},
            {"pass_fraction", r.pass_fraction},
            {"passes_all_tests", r.grading.all_passed()},
            {"constraints_satisfied", r.constraints_satisfied},
            {"constraint_violations", ViolationsJson(r.constraint_violations)},
            {"reward", r.reward},
            {"comparable", r.comparability ? json(r.comparability->comparable) : json(nullptr)},
            {"similarity", r.comparability ? json(r.comparability->score) : json(nullptr)},
            {"tests", t},
            {"first_failing_test",
             r.first_failing_test >= 0 ? json(r.first_failing_test + 1) : json(nullptr)},
            {"error_span", SpanJson(r.error_span)},
            {"error_message", r.error_message},
            {"earliest_divergence", SpanJson(r.earliest_divergence)},
            {"last_divergence", SpanJson(r.last_divergence)},
            {"random_boundary", SpanJson(r.random_boundary)},
            {"localization_note", r.localization_note},
            {"grade_seconds", r.grade_seconds},
            {"localize_seconds", r.localize_seconds}};
  if (r.divergence) {
    const DivergenceReport& d = *r.divergence;
    json pairs = json::array();
    size_t end = LastPairShown(d);
    for (size_t k = 0; k < end; ++k) {
      const AlignedPair& p = d.alignment.pairs[k];
      pairs.push_back(
          {{"candidate",
            p.candidate >= 0 ? StepJson(d.alignment.candidate_steps[p.candidate]) : json(nullptr)},
           {"reference",
            p.reference >= 0 ? StepJson(d.alignment.reference_steps[p.reference]) : json(nullptr)},
           {"diverges", p.diverges}});
    }
    json renamed = json::array();
    for (const auto& v : d.alignment.variables) {
      if (v.renamed)
        renamed.push_back(
            {{"function", v.function}, {"candidate", v.candidate}, {"reference", v.reference}});
    }
    j["divergence"] = {{"earliest", d.earliest ? DivergenceJson(*d.earliest) : json(nullptr)},
                       {"last", d.last ? DivergenceJson(*d.last) : json(nullptr)},
                       {"count", d.divergence_count},
                       {"note", d.note},
                       {"renamed_variables", renamed},
                       {"candidate_truncated", d.alignment.candidate_truncated},
                       {"reference_truncated", d.alignment.reference_truncated},
                       {"steps", pairs}};
  }
  return j;
}

// ---------------------------------------------------------------- HTML output

// Source as numbered lines with `span` wrapped in <mark>.
std::string SourceHtml(const std::string& source, const std::optional<SourceSpan>& span) {
  std::string marked;
  if (span && span->end_byte <= source.size() && !span->empty()) {
    marked = egca::XmlEscape(std::string_view(source).substr(0, span->begin_byte)) + "\x01" +
             egca::XmlEscape(std::string_view(source).substr(span->begin_byte,
                                                             span->end_byte - span->begin_byte)) +
             "\x02" + egca::XmlEscape(std::string_view(source).substr(span->end_byte));
  } else {
    marked = egca::XmlEscape(source);
  }
  std::string out;
  int line = 1;
  bool open = false;
  out += "<span class=ln>1</span>";
  for (char c : marked) {
    if (c == '\x01') {
      out += "<mark>";
      open = true;
      continue;
    }
    if (c == '\x02') {
      out += "</mark>";
      open = false;
      continue;
    }
    if (c == '\n') {
      if (open) out += "</mark>";
      out += fmt::format("\n<span class=ln>{}</span>", ++line);
      if (open) out += "<mark>";
      continue;
    }
    out += c;
  }
  return out;
}

// What a test feeds the program, for the page: the call, the standard input, the test code.
std::string TestInput(const egca::tracer::TestCase& t) {
  switch (t.kind) {
    case egca::tracer::TestKind::kCall:
      return fmt::format("{}(*{})", t.function, t.args_json);
    case egca::tracer::TestKind::kStdio:
      return t.stdin_data;
    case egca::tracer::TestKind::kAssert:
      return (t.setup_code.empty() ? "" : t.setup_code + "\n") + t.test_code +
             (t.entry_point.empty() ? "" : "\ncheck(" + t.entry_point + ")");
  }
  return "";
}

std::string DivergenceHtml(const char* label, const Divergence& d) {
  std::string h = fmt::format("<h3>{} divergence ({}){} at line {} [{}]</h3><p>{}</p>", label,
                              egca::diff::DivergenceKindName(d.kind),
                              d.function.empty() ? "" : " in " + egca::XmlEscape(d.function),
                              d.line, d.span.ToString(), egca::XmlEscape(d.detail));
  if (!d.variables.empty()) {
    h += "<table><tr><th>variable</th><th>candidate</th><th>reference</th></tr>";
    for (const auto& v : d.variables) {
      std::string name = v.candidate_name == v.reference_name
                             ? v.candidate_name
                             : v.candidate_name + " (ref: " + v.reference_name + ")";
      h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>", egca::XmlEscape(name),
                       egca::XmlEscape(OneLine(v.candidate_value, 120)),
                       egca::XmlEscape(OneLine(v.reference_value, 120)));
    }
    h += "</table>";
  }
  std::string ctx;
  for (const auto& [n, v] : d.context) ctx += fmt::format(" {}={}", n, v);
  if (!ctx.empty()) h += "<p>at <code>" + egca::XmlEscape(ctx) + "</code></p>";
  return h;
}

std::string HtmlOf(const RouteResult& r, const std::vector<egca::tracer::TestCase>& tests,
                   const std::vector<bool>& from_reference, const std::string& cand_path,
                   const std::string& cand, const std::string& ref_path, const std::string& ref) {
  std::optional<SourceSpan> cand_span =
      r.mode == FailureMode::kSyntax ? r.error_span : r.earliest_divergence;
  std::optional<SourceSpan> ref_span;
  if (r.divergence && r.divergence->earliest && r.divergence->earliest->reference_step >= 0) {
    const Step& s = r.divergence->alignment.reference_steps[r.divergence->earliest->reference_step];
    ref_span = s.last_statement;
  }
  std::string h;
  h += "<!DOCTYPE html><html><head><meta charset=utf-8><title>egca-trace</title><style>"
       "body{font-family:sans-serif;margin:1.5em;color:#222}"
       "pre{background:#f7f7f7;border:1px solid #ddd;padding:.6em;overflow:auto;font-size:13px}"
       ".ln{display:inline-block;width:2.5em;color:#999;user-select:none}"
       "mark{background:#ffb3b3;outline:1px solid #d33}"
       ".cols{display:flex;gap:1em}.cols>div{flex:1;min-width:0}"
       "table{border-collapse:collapse;font-size:12px;font-family:monospace}"
       "td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}"
       "tr.div td{background:#ffd6d6;font-weight:bold}.mode{font-size:1.4em;font-weight:bold}"
       ".pass{color:#080}.fail{color:#c00}</style></head><body>";
  h += fmt::format("<div class=mode>{}</div><p>{}</p>", egca::gates::FailureModeName(r.mode),
                   egca::XmlEscape(r.reason));
  h += fmt::format("<p>R_hat {:.4f} ({}/{}), I_C {}, R {:.4f}", r.pass_fraction, r.grading.passed,
                   r.grading.total, r.constraints_satisfied ? 1 : 0, r.reward);
  if (r.comparability)
    h += fmt::format(", I_cmp {} (similarity {:.3f})", r.comparability->comparable ? 1 : 0,
                     r.comparability->score);
  h += "</p>";
  if (!PassesGatedNote(r).empty()) h += "<p><b>" + egca::XmlEscape(PassesGatedNote(r)) + "</b></p>";
  h += "<table><tr><th>#</th><th>test</th><th>verdict</th><th>detail</th></tr>";
  for (size_t i = 0; i < r.grading.tests.size(); ++i) {
    const auto& v = r.grading.tests[i].verdict;
    h += fmt::format("<tr><td>{}</td><td>{}</td><td class={}>{}</td><td>{}</td></tr>", i + 1,
                     egca::XmlEscape(OneLine(tests[i].name, 80)), v.passed() ? "pass" : "fail",
                     egca::sandbox::VerdictName(v.kind),
                     egca::XmlEscape(OneLine(TestDetail(v, from_reference[i]), 160)));
  }
  h += "</table>";
  if (r.error_span) {
    h += fmt::format("<h3>Error [{}]</h3><p>{}</p>", r.error_span->ToString(),
                     egca::XmlEscape(r.error_message));
  }
  if (r.mode == FailureMode::kLogic && r.first_failing_test >= 0 &&
      static_cast<size_t>(r.first_failing_test) < tests.size()) {
    const egca::tracer::TestCase& t = tests[r.first_failing_test];
    h += fmt::format("<h3>Localized on test {}: {}</h3><p>input ({}):</p><pre>{}</pre>",
                     r.first_failing_test + 1, egca::XmlEscape(OneLine(t.name, 120)),
                     egca::tracer::TestKindName(t.kind), egca::XmlEscape(TestInput(t)));
  }
  if (r.divergence && r.divergence->earliest) {
    h += DivergenceHtml("Earliest", *r.divergence->earliest);
    if (r.divergence->last && r.divergence->divergence_count > 1) {
      h += DivergenceHtml("Last", *r.divergence->last);
    }
    if (r.divergence->random_boundary) {
      h += fmt::format("<p>Random executed boundary (the paper's ablation target): [{}]</p>",
                       r.divergence->random_boundary->ToString());
    }
  } else if (!r.localization_note.empty()) {
    h += "<p>" + egca::XmlEscape(r.localization_note) + "</p>";
  }
  h += fmt::format(
      "<div class=cols><div><h4>candidate: {}</h4><pre>{}</pre></div>"
      "<div><h4>reference: {}</h4><pre>{}</pre></div></div>",
      egca::XmlEscape(cand_path), SourceHtml(cand, cand_span), egca::XmlEscape(ref_path),
      SourceHtml(ref, ref_span));
  if (r.divergence) {
    const DivergenceReport& d = *r.divergence;
    h += "<h3>Aligned steps</h3><table><tr><th>#</th><th>candidate line</th><th>candidate "
         "changes</th>"
         "<th>reference line</th><th>reference changes</th></tr>";
    size_t end = LastPairShown(d);
    size_t begin = end > 200 ? end - 200 : 0;
    for (size_t k = begin; k < end; ++k) {
      const AlignedPair& p = d.alignment.pairs[k];
      auto cell = [&](int32_t idx, const std::vector<Step>& steps, const std::string& src) {
        if (idx < 0) return std::string("<td>-</td><td></td>");
        const Step& s = steps[idx];
        return fmt::format("<td>{}: {}</td><td>{}</td>", s.first_line,
                           egca::XmlEscape(OneLine(LineText(src, s.first_line), 50)),
                           egca::XmlEscape(Changes(s, 80)));
      };
      h += fmt::format("<tr{}><td>{}</td>{}{}</tr>", p.diverges ? " class=div" : "", k,
                       cell(p.candidate, d.alignment.candidate_steps, cand),
                       cell(p.reference, d.alignment.reference_steps, ref));
    }
    h += "</table>";
  }
  h += "</body></html>\n";
  return h;
}

std::vector<bool> FromReference(const RouteViewInput& in) {
  std::vector<bool> out = in.from_reference;
  out.resize(in.tests->size(), false);
  return out;
}

}  // namespace

void PrintRouteText(const RouteViewInput& in, const TextViewOptions& options) {
  Style st;
  st.color = options.color;
  st.width = options.width;
  PrintTextOf(*in.route, *in.tests, FromReference(in), in.candidate, in.reference,
              options.max_steps, st);
}

json RouteJson(const RouteViewInput& in) {
  return RouteJsonOf(*in.route, *in.tests, FromReference(in));
}

std::string RouteHtml(const RouteViewInput& in) {
  return HtmlOf(*in.route, *in.tests, FromReference(in), in.candidate_path, in.candidate,
                in.reference_path, in.reference);
}

size_t TerminalWidth() {
  struct winsize w {};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) {
    return std::max<size_t>(60, w.ws_col);
  }
  if (const char* columns = std::getenv("COLUMNS")) {
    char* end = nullptr;
    long n = std::strtol(columns, &end, 10);
    if (end != columns && *end == '\0' && n > 0) return std::max<size_t>(60, n);
  }
  return 120;
}

// Runs the reference on every test first. A test with no expected value (--fn without
// --expect, --stdin without --expect-stdout) gets the reference's result as its expected
// value: the tool's question is where the candidate parts from the reference on the same
// input. A reference that fails a test (or cannot give an expected value) is bad input.
// (*from_reference)[i]: test i's expected value came from the reference.
Status CheckReference(tracer::Executor& executor, const std::string& reference,
                            const std::string& ref_path, tracer::RunOptions run,
                            std::vector<tracer::TestCase>* tests,
                            std::vector<bool>* from_reference) {
  using tracer::TestKind;
  run.trace_mode = tracer::TraceMode::kNone;
  run.max_report_bytes = 1u << 24;  // the returned value becomes an expected value: uncut
  from_reference->assign(tests->size(), false);
  for (size_t i = 0; i < tests->size(); ++i) {
    tracer::TestCase& t = (*tests)[i];
    auto result = executor.Run(reference, t, run);
    if (!result.ok()) return Internal(result.status().ToString());
    const sandbox::Verdict& v = result->verdict;
    if (!v.passed()) {
      return InvalidArgument(fmt::format(
          "the reference {} fails its own test {} ({}): {} {}", ref_path, i + 1,
          OneLine(t.name, 60), sandbox::VerdictName(v.kind), OneLine(VerdictDetail(v), 160)));
    }
    if (t.has_expected || t.kind == TestKind::kAssert) continue;
    if (t.kind == TestKind::kStdio) {
      t.expected_stdout = result->stdout_data;
    } else {
      auto expected = tracer::PythonReprToJson(v.actual);
      if (!expected.ok()) {
        return InvalidArgument(
            fmt::format("test {} ({}): the reference's value {}; give --expect", i + 1,
                        OneLine(t.name, 60), expected.status().message()));
      }
      t.expected_json = expected.value();
    }
    t.has_expected = true;
    (*from_reference)[i] = true;
  }
  return Status::Ok();
}

}  // namespace egca::tools
