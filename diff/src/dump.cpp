// Deterministic text dumps of alignments and divergence reports.
#include <fmt/format.h>

#include "egca/diff/divergence.h"

namespace egca::diff {
namespace {

std::string Clip(const std::string& s, size_t n) {
  std::string out;
  for (char c : s) out += (c == '\n' || c == '\t') ? ' ' : c;
  if (out.size() <= n) return out;
  size_t cut = n;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
  return out.substr(0, cut) + "...";
}

std::string StepLabel(const Step& s) {
  return fmt::format("{}:{} B{}", s.function, s.first_line,
                     s.block >= 0 ? std::to_string(s.block) : std::string("?"));
}

std::string Changes(const Step& s) {
  std::string out;
  for (const std::string& name : s.changed) {
    for (const auto& [n, v] : s.state) {
      if (n == name) out += fmt::format(" {}={}", n, Clip(v, 24));
    }
  }
  if (s.returned) out += " -> " + Clip(s.return_value, 24);
  if (!s.exception.empty()) out += " !" + Clip(s.exception, 40);
  return out;
}

}  // namespace

std::string DumpDivergence(const Divergence& d) {
  std::string out =
      fmt::format("{} at pair {} step c{} r{}: {}:{} [{}] block [{}]\n", DivergenceKindName(d.kind),
                  d.pair, d.candidate_step, d.reference_step, d.function, d.line, d.span.ToString(),
                  d.block_span.ToString());
  out += "  " + d.detail + "\n";
  out += fmt::format("  confidence {:.2f}: {}\n", d.confidence, d.evidence);
  for (const VariableDiff& v : d.variables) {
    std::string name = v.candidate_name == v.reference_name
                           ? v.candidate_name
                           : v.candidate_name + "~" + v.reference_name;
    out += fmt::format("  {}: candidate {} reference {}\n", name, Clip(v.candidate_value, 60),
                       Clip(v.reference_value, 60));
  }
  if (!d.context.empty()) {
    out += "  context:";
    for (const auto& [n, v] : d.context) out += fmt::format(" {}={}", n, Clip(v, 24));
    out += "\n";
  }
  return out;
}

std::string DumpAlignment(const DivergenceReport& report, size_t max_pairs) {
  const Alignment& a = report.alignment;
  std::string out = fmt::format(
      "alignment candidate_steps={}{} reference_steps={}{} pairs={}\n", a.candidate_steps.size(),
      a.candidate_truncated ? " (truncated)" : "", a.reference_steps.size(),
      a.reference_truncated ? " (truncated)" : "", a.pairs.size());
  for (const VariableMapping& v : a.variables) {
    if (v.renamed)
      out += fmt::format("renamed {}: {} ~ {} ({} {:.2f})\n", v.function, v.candidate,
                         v.reference, v.basis, v.agreement);
  }
  size_t n = max_pairs == 0 ? a.pairs.size() : std::min(max_pairs, a.pairs.size());
  for (size_t k = 0; k < n; ++k) {
    const AlignedPair& p = a.pairs[k];
    std::string c = p.candidate >= 0 ? StepLabel(a.candidate_steps[p.candidate]) : "-";
    std::string r = p.reference >= 0 ? StepLabel(a.reference_steps[p.reference]) : "-";
    std::string ch = p.candidate >= 0 ? Changes(a.candidate_steps[p.candidate]) : "";
    std::string rh = p.reference >= 0 ? Changes(a.reference_steps[p.reference]) : "";
    out += fmt::format("{:4} {:<28} | {:<28} |{}{}{}\n", k, c, r, ch, rh.empty() ? "" : " ||" + rh,
                       p.diverges ? "  <<" : "");
  }
  if (n < a.pairs.size()) out += fmt::format("... {} more pairs\n", a.pairs.size() - n);
  return out;
}

std::string DumpReport(const DivergenceReport& report) {
  std::string out;
  out += fmt::format("divergences={}\n", report.divergence_count);
  if (report.earliest) {
    out += "earliest " + DumpDivergence(*report.earliest);
  } else {
    out += "earliest none: " + report.note + "\n";
  }
  if (report.last) out += "last " + DumpDivergence(*report.last);
  if (report.random_boundary) out += "random [" + report.random_boundary->ToString() + "]\n";
  out += fmt::format("executed_boundaries={}\n", report.executed_boundaries.size());
  return out;
}

}  // namespace egca::diff
