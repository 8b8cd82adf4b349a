#include "egca/cpp/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "egca/core/mix.h"

namespace egca::cpp {
namespace {

std::vector<std::string> NormalizedLines(const std::string& source) {
  std::vector<std::string> out;
  std::istringstream in(source);
  std::string line;
  while (std::getline(in, line)) {
    std::string n;
    for (char c : line) {
      if (c != ' ' && c != '\t' && c != '\r') n += c;
    }
    out.push_back(n);
  }
  return out;
}

SourceSpan LineSpanOf(const std::string& source, int32_t line) {
  LineIndex index(source);
  return index.LineSpan(line);
}

// Two events are the same boundary: same kind, matched lines.
bool SameStatement(const SnapshotEvent& c, const SnapshotEvent& r,
                   const std::vector<int32_t>& map) {
  if (c.kind != r.kind) return false;
  if (c.line <= 0 || c.line > static_cast<int32_t>(map.size())) return false;
  return map[c.line - 1] == r.line && r.line != 0;
}

// The first variable both snapshots have whose values differ ("" if none).
std::string ValueDifference(const SnapshotEvent& c, const SnapshotEvent& r) {
  std::map<std::string, const std::string*> ref;
  for (const auto& [name, value] : r.vars) ref[name] = &value;
  for (const auto& [name, value] : c.vars) {
    auto it = ref.find(name);
    if (it == ref.end() || *it->second == value) continue;
    std::string a = value.size() > 80 ? value.substr(0, 80) + "..." : value;
    std::string b = it->second->size() > 80 ? it->second->substr(0, 80) + "..." : *it->second;
    return fmt::format("{}: {} vs {} (reference)", name, a, b);
  }
  return "";
}

bool Unmatched(const SnapshotEvent& c, const std::vector<int32_t>& map) {
  return c.line > 0 && c.line <= static_cast<int32_t>(map.size()) && map[c.line - 1] == 0;
}

// The candidate line blamed for a divergence at candidate event `i` (given its kind).
int32_t Blame(const std::vector<SnapshotEvent>& ev, size_t i, DivergenceKind kind) {
  const SnapshotEvent& e = ev[i];
  switch (kind) {
    case DivergenceKind::kUnmatchedStatement:
      return e.line;
    case DivergenceKind::kValue:
      if (e.kind == 'B' && i > 0) return ev[i - 1].line;
      return e.line;
    case DivergenceKind::kControl: {
      if (i > 0) {
        const SnapshotEvent& p = ev[i - 1];
        // Left the previous event's enclosing if/loop: that one decided.
        if (p.parent_lo > 0 && (e.line < p.parent_lo || e.line > p.parent_hi)) return p.parent_lo;
      }
      if (e.parent_lo > 0) return e.parent_lo;
      return i > 0 ? ev[i - 1].line : e.line;
    }
    case DivergenceKind::kNone:
      break;
  }
  return e.line;
}

CppDivergence Make(const std::string& candidate, const std::vector<SnapshotEvent>& ev, size_t i,
                   DivergenceKind kind, std::string why) {
  CppDivergence d;
  d.kind = kind;
  d.event = static_cast<int64_t>(i);
  d.line = Blame(ev, i, kind);
  d.why = std::move(why);
  if (d.line > 0) d.span = LineSpanOf(candidate, d.line);
  return d;
}

// Compares candidate event c and reference event r: kNone when they agree.
DivergenceKind Compare(const SnapshotEvent& c, const SnapshotEvent& r,
                       const std::vector<int32_t>& map, std::string* why) {
  if (Unmatched(c, map)) {
    *why = fmt::format("line {} has no counterpart in the reference", c.line);
    return DivergenceKind::kUnmatchedStatement;
  }
  if (!SameStatement(c, r, map)) {
    *why = fmt::format("executes line {} ({}), the reference line {} ({})", c.line, c.kind, r.line,
                       r.kind);
    return DivergenceKind::kControl;
  }
  std::string diff = ValueDifference(c, r);
  if (!diff.empty()) {
    *why = diff;
    return DivergenceKind::kValue;
  }
  return DivergenceKind::kNone;
}

}  // namespace

const char* DivergenceKindName(DivergenceKind kind) {
  switch (kind) {
    case DivergenceKind::kNone: return "none";
    case DivergenceKind::kUnmatchedStatement: return "unmatched_statement";
    case DivergenceKind::kValue: return "value";
    case DivergenceKind::kControl: return "control";
  }
  return "?";
}

CppTrace ParseTrace(const std::string& result) {
  CppTrace trace;
  size_t pos = 0;
  while (pos < result.size()) {
    size_t nl = result.find('\n', pos);
    if (nl == std::string::npos) nl = result.size();
    std::string_view line(result.data() + pos, nl - pos);
    pos = nl + 1;
    if (line.rfind("T ", 0) != 0) continue;
    if (line == "T stop") {
      trace.stopped = true;
      continue;
    }
    size_t tab = line.find('\t');
    std::istringstream head(std::string(line.substr(2, tab == std::string_view::npos
                                                           ? std::string_view::npos
                                                           : tab - 2)));
    SnapshotEvent e;
    std::string kind;
    if (!(head >> kind >> e.line >> e.parent_lo >> e.parent_hi) || kind.size() != 1) continue;
    e.kind = kind[0];
    while (tab != std::string_view::npos) {
      size_t next = line.find('\t', tab + 1);
      std::string_view field = line.substr(tab + 1, next == std::string_view::npos
                                                        ? std::string_view::npos
                                                        : next - tab - 1);
      size_t eq = field.find('=');
      if (eq != std::string_view::npos) {
        e.vars.emplace_back(std::string(field.substr(0, eq)), std::string(field.substr(eq + 1)));
      }
      tab = next;
    }
    trace.events.push_back(std::move(e));
  }
  return trace;
}

std::string DumpTrace(const CppTrace& trace) {
  std::string out;
  for (const SnapshotEvent& e : trace.events) {
    out += fmt::format("{} {}", e.kind, e.line);
    if (e.parent_lo > 0) out += fmt::format(" [{}-{}]", e.parent_lo, e.parent_hi);
    for (const auto& [name, value] : e.vars) out += fmt::format(" {}={}", name, value);
    out += "\n";
  }
  if (trace.stopped) out += "stopped\n";
  return out;
}

std::vector<int32_t> MatchLines(const std::string& candidate, const std::string& reference) {
  std::vector<std::string> a = NormalizedLines(candidate), b = NormalizedLines(reference);
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int32_t>> lcs(n + 1, std::vector<int32_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::vector<int32_t> map(n, 0);
  size_t i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] == b[j]) {
      map[i] = static_cast<int32_t>(j + 1);
      ++i;
      ++j;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      ++i;
    } else {
      ++j;
    }
  }
  return map;
}

CppLocalization Localize(const std::string& candidate, const std::string& reference,
                         const CppTrace& candidate_trace, const CppTrace& reference_trace,
                         uint64_t seed) {
  CppLocalization out;
  const std::vector<SnapshotEvent>& c = candidate_trace.events;
  const std::vector<SnapshotEvent>& r = reference_trace.events;
  if (c.empty()) {
    out.note = "the candidate executed no instrumented statement";
    return out;
  }
  const std::vector<int32_t> map = MatchLines(candidate, reference);
  // Earliest: lockstep from the start.
  const size_t common = std::min(c.size(), r.size());
  size_t i = 0;
  for (; i < common; ++i) {
    std::string why;
    DivergenceKind k = Compare(c[i], r[i], map, &why);
    if (k != DivergenceKind::kNone) {
      out.earliest = Make(candidate, c, i, k, why);
      break;
    }
  }
  if (out.earliest.kind == DivergenceKind::kNone) {
    if (c.size() != r.size() && !(candidate_trace.stopped && c.size() < r.size())) {
      // One ended earlier: the candidate's last statement, or its next one.
      size_t at = std::min(common, c.size() - 1);
      out.earliest = Make(candidate, c, at, DivergenceKind::kControl,
                          c.size() < r.size() ? "the candidate stops; the reference goes on"
                                              : "the reference stops; the candidate goes on");
      out.earliest.ended = true;
    } else {
      out.note = "the traces agree on every statement both executed";
    }
  }
  // Last: lockstep from the ends.
  size_t back = 0;
  for (; back < common; ++back) {
    size_t ci = c.size() - 1 - back, ri = r.size() - 1 - back;
    std::string why;
    DivergenceKind k = Compare(c[ci], r[ri], map, &why);
    if (k != DivergenceKind::kNone) {
      out.last = Make(candidate, c, ci, k, why);
      break;
    }
  }
  if (out.last.kind == DivergenceKind::kNone && out.earliest.kind != DivergenceKind::kNone) {
    out.last = out.earliest;
  }
  // Random: a seeded executed statement.
  size_t pick = static_cast<size_t>(SplitMix64(seed) % c.size());
  out.random_line = c[pick].line;
  if (out.random_line > 0) out.random_boundary = LineSpanOf(candidate, out.random_line);
  return out;
}

namespace {

// Steps of one trace: which events become steps, and each event's step (-1: none).
struct StepTable {
  std::vector<diff::Step> steps;
  std::vector<int32_t> step_of;  // per event
};

StepTable MakeSteps(const std::string& source, const CppTrace& trace,
                    const std::vector<int64_t>& keep_before) {
  StepTable t;
  const LineIndex lines(source);
  t.step_of.assign(trace.events.size(), -1);
  std::map<std::string, std::string> previous;
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const SnapshotEvent& e = trace.events[i];
    const bool kept = e.kind != 'B' || std::find(keep_before.begin(), keep_before.end(),
                                                  static_cast<int64_t>(i)) != keep_before.end();
    if (kept) {
      diff::Step s;
      s.first_line = s.last_line = e.line;
      s.first_event = s.last_event = static_cast<int64_t>(i);
      if (e.line > 0 && e.line <= lines.line_count()) {
        s.block_span = s.last_statement = lines.LineSpan(e.line);
      }
      for (const auto& [name, value] : e.vars) {
        if (e.kind == 'R' && name == "return") {
          s.returned = true;
          s.return_value = value;
          continue;
        }
        s.state.emplace_back(name, value);
        auto it = previous.find(name);
        if (it == previous.end() || it->second != value) s.changed.push_back(name);
      }
      t.step_of[i] = static_cast<int32_t>(t.steps.size());
      t.steps.push_back(std::move(s));
    }
    previous.clear();
    for (const auto& [name, value] : e.vars) previous[name] = value;
  }
  return t;
}

std::optional<diff::Divergence> ToDivergence(const CppDivergence& d, const CppTrace& c,
                                             const CppTrace& r, const StepTable& cs,
                                             const StepTable& rs, int32_t pair) {
  if (d.kind == DivergenceKind::kNone || d.event < 0 ||
      d.event >= static_cast<int64_t>(c.events.size())) {
    return std::nullopt;
  }
  const size_t i = static_cast<size_t>(d.event);
  const SnapshotEvent& ce = c.events[i];
  diff::Divergence out;
  switch (d.kind) {
    case DivergenceKind::kValue:
      out.kind = ce.kind == 'R' ? diff::DivergenceKind::kReturnValue : diff::DivergenceKind::kValue;
      break;
    default:
      out.kind = d.ended ? diff::DivergenceKind::kEnded : diff::DivergenceKind::kControl;
      break;
  }
  out.pair = pair;
  out.candidate_step = cs.step_of[i];
  // A 'B' event that is not a step: its statement's 'A' step follows.
  for (size_t k = i; out.candidate_step < 0 && k < cs.step_of.size(); ++k) {
    out.candidate_step = cs.step_of[k];
  }
  if (i < r.events.size()) {
    out.reference_step = rs.step_of[i];
    for (size_t k = i; out.reference_step < 0 && k < rs.step_of.size(); ++k) {
      out.reference_step = rs.step_of[k];
    }
  }
  out.line = d.line;
  if (d.span) out.span = out.block_span = *d.span;
  out.detail = d.why;
  out.context = ce.vars;
  if (i < r.events.size() && d.kind == DivergenceKind::kValue) {
    std::map<std::string, std::string> ref(r.events[i].vars.begin(), r.events[i].vars.end());
    for (const auto& [name, value] : ce.vars) {
      auto it = ref.find(name);
      if (it == ref.end() || it->second == value) continue;
      out.variables.push_back({name, name, value, it->second});
    }
  }
  return out;
}

}  // namespace

diff::DivergenceReport ToDivergenceReport(const std::string& candidate,
                                          const std::string& reference,
                                          const CppTrace& candidate_trace,
                                          const CppTrace& reference_trace,
                                          const CppLocalization& localization) {
  diff::DivergenceReport out;
  const CppTrace& c = candidate_trace;
  const CppTrace& r = reference_trace;
  std::vector<int64_t> blamed;
  for (const CppDivergence* d : {&localization.earliest, &localization.last}) {
    if (d->kind != DivergenceKind::kNone) blamed.push_back(d->event);
  }
  StepTable cs = MakeSteps(candidate, c, blamed);
  StepTable rs = MakeSteps(reference, r, blamed);
  diff::Alignment& a = out.alignment;
  a.candidate_truncated = c.stopped;
  a.reference_truncated = r.stopped;
  const size_t n = std::max(c.events.size(), r.events.size());
  int32_t earliest_pair = -1, last_pair = -1;
  for (size_t i = 0; i < n; ++i) {
    diff::AlignedPair p;
    p.candidate = i < c.events.size() ? cs.step_of[i] : -1;
    p.reference = i < r.events.size() ? rs.step_of[i] : -1;
    if (p.candidate < 0 && p.reference < 0) continue;
    const int32_t index = static_cast<int32_t>(a.pairs.size());
    if (localization.earliest.kind != DivergenceKind::kNone &&
        localization.earliest.event == static_cast<int64_t>(i)) {
      p.diverges = true;
      earliest_pair = index;
    }
    if (localization.last.kind != DivergenceKind::kNone &&
        localization.last.event == static_cast<int64_t>(i)) {
      last_pair = index;
    }
    a.pairs.push_back(p);
  }
  out.earliest = ToDivergence(localization.earliest, c, r, cs, rs, earliest_pair);
  out.last = ToDivergence(localization.last, c, r, cs, rs, last_pair);
  out.divergence_count = out.earliest ? 1 : 0;
  if (out.earliest && out.last && localization.last.event != localization.earliest.event) {
    out.divergence_count = 2;
  }
  out.random_boundary = localization.random_boundary;
  std::vector<int32_t> executed;
  for (const SnapshotEvent& e : c.events) executed.push_back(e.line);
  std::sort(executed.begin(), executed.end());
  executed.erase(std::unique(executed.begin(), executed.end()), executed.end());
  const LineIndex lines(candidate);
  for (int32_t line : executed) {
    if (line > 0 && line <= lines.line_count()) out.executed_boundaries.push_back(lines.LineSpan(line));
  }
  out.note = localization.note;
  a.candidate_steps = std::move(cs.steps);
  a.reference_steps = std::move(rs.steps);
  return out;
}

}  // namespace egca::cpp
