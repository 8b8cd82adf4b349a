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

}  // namespace egca::cpp
