#include "egca/diff/divergence.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "egca/cfg/structure.h"
#include "egca/core/mix.h"
#include "egca/tracer/trace_validate.h"

namespace egca::diff {
namespace {

namespace tp = ::egca::tracer::proto;

SourceSpan ToSourceSpan(const tp::Span& s) {
  SourceSpan out;
  out.begin_byte = s.begin_byte();
  out.end_byte = s.end_byte();
  out.begin = {static_cast<int32_t>(s.start_line()), static_cast<int32_t>(s.start_col())};
  out.end = {static_cast<int32_t>(s.end_line()), static_cast<int32_t>(s.end_col())};
  return out;
}

struct Value {
  uint64_t hash = 0;
  const std::string* text = nullptr;  // Borrowed from the trace.
};

// One frame's variables in binding order (frames hold few names: a vector beats a map).
struct FrameState {
  int32_t scope = -1;
  std::vector<std::pair<std::string, Value>> vars;
  int32_t open_step = -1;
  SourceSpan last_span;      // span of the frame's previous event: what made the next changes
  SourceSpan call_site;      // the caller's statement when the frame started (may be empty)
  int32_t caller_step = -1;  // the caller's step open at that time
  int32_t last_line = 0;
  bool seen_line = false;
  int32_t root_ordinal = -1;  // see StepRec::root_ordinal
  int32_t root = -1;          // see StepRec::root

  Value* Find(const std::string& name) {
    for (auto& [n, v] : vars) {
      if (n == name) return &v;
    }
    return nullptr;
  }
};

// One assignment of a variable within a step: the statement that made it, the value it
// gave, and the event that reported it (when the new value became observable).
struct Change {
  std::string name;
  SourceSpan span;
  uint64_t hash = 0;
  int64_t event = 0;
  const std::string* text = nullptr;  // the value's rendering, borrowed from the trace
};

// Internal step: the public Step plus hashes for comparison and per-variable blame.
struct StepRec {
  Step step;
  std::vector<std::pair<std::string, Value>> state;
  std::vector<std::pair<std::string, SourceSpan>> changed;  // name, statement that changed it
  std::vector<Change> changes;  // every assignment in order (a name may appear again)
  uint64_t return_hash = 0;
  bool first_of_frame = false;
  // Closed by the end of the trace rather than by a later event of its frame: its state
  // may miss the changes of its last statement (cut by a cap or a timeout).
  bool incomplete = false;
  // Event that closed the step: when its state (and a difference in it) became final.
  int64_t close_event = 0;
  SourceSpan call_site;      // first step of a frame: the caller's statement
  int32_t caller_step = -1;  // first step of a frame: the caller's step
  // A frame with no traced caller (the module body, or a function called by the tests'
  // own code, e.g. HumanEval's check): its rank among such frames of the same scope. The
  // n-th call the tests make is paired with the reference's n-th call, never another.
  int32_t root_ordinal = -1;
  // The call the tests made that this step runs under (an index into StepStream::roots):
  // the root frame itself or any of its callees; -1 when unknown.
  int32_t root = -1;
};

// A frame with no traced caller (a call the tests made, or the module body) and what it
// gave back: the observable outcome a test judges.
struct RootCall {
  int32_t scope = -1;
  int32_t ordinal = -1;  // StepRec::root_ordinal
  bool returned = false;  // returned normally (not by an exception, not cut by a cap)
  uint64_t hash = 0;
  std::string text;
};

// What a frame wrote to standard output between two of its events (Event.output): the
// bytes [offset, offset + length) of StepStream::output.
struct OutputChunk {
  int64_t event = 0;  // the event that reported it
  int32_t step = -1;  // the writer's step open at that time
  SourceSpan span;    // the statement that wrote it
  size_t offset = 0;
  size_t length = 0;
};

struct StepStream {
  std::vector<StepRec> steps;
  // Value history per (scope, variable): distinct consecutive hashes, capped.
  std::map<std::pair<int32_t, std::string>, std::vector<uint64_t>> histories;
  // Order in which (scope, variable) was first bound in the trace.
  std::map<std::pair<int32_t, std::string>, int32_t> first_bound;
  bool truncated = false;
  std::string output;  // everything written to standard output, in order
  std::vector<OutputChunk> chunks;
  bool output_truncated = false;  // the recorder stopped recording output
  std::vector<RootCall> roots;    // in the order the calls started
};

constexpr size_t kMaxHistory = 64;

// Steps of the trace's first `max_events` events (0: all); a prefix counts as truncated.
StepStream BuildSteps(const PreparedProgram& program, const tp::Trace& trace,
                      uint64_t max_events = 0) {
  StepStream out;
  int64_t event_count = trace.events_size();
  if (max_events > 0 && static_cast<uint64_t>(event_count) > max_events) {
    event_count = static_cast<int64_t>(max_events);
  }
  out.truncated = trace.truncated() || event_count < trace.events_size();
  out.output_truncated = trace.output_truncated();
  std::map<int32_t, int32_t> roots_of_scope;
  const cfg::ProgramCfg& pcfg = program.cfg();
  std::vector<int32_t> code_scope(trace.code_size(), -1);
  for (int c = 0; c < trace.code_size(); ++c) {
    code_scope[c] = pcfg.FindScope(trace.code(c).name(), trace.code(c).first_line());
  }
  std::unordered_map<uint32_t, FrameState> frames;

  auto close = [&](FrameState& f, int64_t at) {
    if (f.open_step < 0) return;
    StepRec& s = out.steps[f.open_step];
    s.close_event = at;
    s.state = f.vars;
    for (const auto& [n, v] : f.vars) s.step.state.emplace_back(n, *v.text);
    f.open_step = -1;
  };
  auto record_change = [&](FrameState& f, const std::string& name, Value v, int64_t event) {
    if (Value* cur = f.Find(name)) {
      *cur = v;
    } else {
      f.vars.emplace_back(name, v);
    }
    out.first_bound.emplace(std::make_pair(f.scope, name),
                            static_cast<int32_t>(out.first_bound.size()));
    auto& hist = out.histories[{f.scope, name}];
    if (hist.size() < kMaxHistory && (hist.empty() || hist.back() != v.hash)) {
      hist.push_back(v.hash);
    }
    if (f.open_step >= 0) {
      StepRec& s = out.steps[f.open_step];
      s.changes.push_back({name, f.last_span, v.hash, event, v.text});
      bool known = false;
      for (const auto& [n, sp] : s.changed) known = known || n == name;
      if (!known) {
        s.changed.emplace_back(name, f.last_span);
        s.step.changed.push_back(name);
      }
    }
  };

  // Span of the latest event at each depth: a new frame's arguments are blamed on the
  // caller's statement (the call site), not on the callee.
  std::vector<SourceSpan> span_at_depth;
  std::vector<uint32_t> frame_at_depth;
  for (int64_t e = 0; e < event_count; ++e) {
    const tp::Event& ev = trace.events(static_cast<int>(e));
    const bool fresh = frames.find(ev.frame()) == frames.end();
    FrameState& f = frames[ev.frame()];
    if (fresh && ev.depth() >= 2 && ev.depth() - 2 < span_at_depth.size()) {
      f.last_span = span_at_depth[ev.depth() - 2];
      f.call_site = f.last_span;
      auto caller = frames.find(frame_at_depth[ev.depth() - 2]);
      if (caller != frames.end()) {
        f.caller_step = caller->second.open_step;
        f.root = caller->second.root;
      }
    }
    if (fresh && ev.depth() == 1) {
      int32_t scope = ev.code() < code_scope.size() ? code_scope[ev.code()] : -1;
      f.root_ordinal = roots_of_scope[scope]++;
      f.root = static_cast<int32_t>(out.roots.size());
      RootCall rc;
      rc.scope = scope;
      rc.ordinal = f.root_ordinal;
      out.roots.push_back(rc);
    }
    if (!ev.output().empty() && ev.depth() >= 1 && ev.depth() <= tracer::kMaxTraceDepth) {
      // The writer: this frame (the statement since its previous event), or for a CALL the
      // caller (what it wrote earlier in the calling statement).
      OutputChunk chunk;
      chunk.event = e;
      chunk.offset = out.output.size();
      chunk.length = ev.output().size();
      if (ev.kind() == tp::CALL && ev.depth() >= 2 && ev.depth() - 2 < span_at_depth.size()) {
        chunk.span = span_at_depth[ev.depth() - 2];
        auto caller = frames.find(frame_at_depth[ev.depth() - 2]);
        if (caller != frames.end()) chunk.step = caller->second.open_step;
      } else {
        chunk.span = f.last_span;
        chunk.step = f.open_step;
      }
      out.output += ev.output();
      out.chunks.push_back(chunk);
    }
    // Indices from the trace are the child's word: out-of-range ones are ignored here
    // (the executor rejects such traces; tracer::ValidateTrace).
    const bool known_code = ev.code() < code_scope.size();
    if (ev.depth() > tracer::kMaxTraceDepth) continue;
    if (span_at_depth.size() < ev.depth()) {
      span_at_depth.resize(ev.depth());
      frame_at_depth.resize(ev.depth());
    }
    if (ev.depth() >= 1) {
      span_at_depth[ev.depth() - 1] = ToSourceSpan(ev.span());
      frame_at_depth[ev.depth() - 1] = ev.frame();
    }
    f.scope = known_code ? code_scope[ev.code()] : -1;
    for (const tp::Variable& v : ev.changed()) {
      record_change(f, v.name(), Value{v.value().hash(), &v.value().text()}, e);
    }
    for (const std::string& d : ev.deleted()) {
      f.vars.erase(
          std::remove_if(f.vars.begin(), f.vars.end(), [&](const auto& p) { return p.first == d; }),
          f.vars.end());
    }
    switch (ev.kind()) {
      case tp::LINE: {
        int32_t block = -1;
        SourceSpan block_span;
        if (f.scope >= 0) {
          const tp::CodeObject& code = trace.code(static_cast<int>(ev.code()));
          int32_t column = ev.has_span() && ev.span().start_line() == ev.line()
                               ? static_cast<int32_t>(ev.span().start_col())
                               : -1;
          auto ref = program.boundaries().Resolve(code.name(), code.first_line(),
                                                  static_cast<int32_t>(ev.line()), column);
          if (ref) {
            const cfg::Boundary& b =
                program.boundaries().scope(ref->scope).boundaries().at(ref->boundary);
            block = static_cast<int32_t>(b.block);
            block_span = pcfg.scopes()[ref->scope].block(b.block).span;
          }
        }
        bool new_visit = f.open_step < 0;
        if (!new_visit) {
          const Step& open = out.steps[f.open_step].step;
          new_visit = (block >= 0 && block != open.block) ||
                      (block >= 0 && static_cast<int32_t>(ev.line()) < open.last_line);
        }
        if (new_visit) {
          close(f, e);
          StepRec s;
          s.step.frame = static_cast<int32_t>(ev.frame());
          s.step.depth = static_cast<int32_t>(ev.depth());
          s.step.scope = f.scope;
          s.step.block = block;
          if (known_code) s.step.function = trace.code(static_cast<int>(ev.code())).qualname();
          s.step.first_line = static_cast<int32_t>(ev.line());
          s.step.first_event = e;
          s.step.block_span = block_span;
          s.first_of_frame = !f.seen_line;
          s.root_ordinal = f.root_ordinal;
          s.root = f.root;
          if (s.first_of_frame) {
            s.call_site = f.call_site;
            s.caller_step = f.caller_step;
          }
          if (s.first_of_frame) {
            // The arguments were set by the call: blame the call site for them.
            for (const auto& [n, v] : f.vars) {
              s.changed.emplace_back(n, f.call_site);
              s.changes.push_back({n, f.call_site, v.hash, e, v.text});
              s.step.changed.push_back(n);
            }
          }
          f.open_step = static_cast<int32_t>(out.steps.size());
          out.steps.push_back(std::move(s));
        }
        f.seen_line = true;
        Step& open = out.steps[f.open_step].step;
        open.last_line = static_cast<int32_t>(ev.line());
        open.last_event = e;
        open.last_statement = ToSourceSpan(ev.span());
        break;
      }
      case tp::RETURN:
        if (f.open_step >= 0) {
          StepRec& s = out.steps[f.open_step];
          s.step.last_event = e;
          // A yielded value is the generator's output at that point: compared like a return.
          if (!ev.unwinding() && ev.has_return_value()) {
            s.step.returned = true;
            s.step.return_value = ev.return_value().text();
            s.return_hash = ev.return_value().hash();
          }
          close(f, e);
        }
        if (ev.depth() == 1 && f.root >= 0 && !ev.unwinding() && !ev.is_yield() &&
            ev.has_return_value()) {
          RootCall& rc = out.roots[f.root];
          rc.returned = true;
          rc.hash = ev.return_value().hash();
          rc.text = ev.return_value().text();
        }
        if (!ev.is_yield()) frames.erase(ev.frame());
        continue;  // f may be gone
      case tp::EXCEPTION:
        if (f.open_step >= 0) {
          StepRec& s = out.steps[f.open_step];
          s.step.last_event = e;
          if (s.step.exception.empty()) {
            s.step.exception = ev.exception().type() + ": " + ev.exception().message();
          }
        }
        break;
      default:
        break;
    }
    f.last_span = ToSourceSpan(ev.span());
    f.last_line = static_cast<int32_t>(ev.line());
  }
  for (auto& [id, f] : frames) {
    if (f.open_step >= 0) out.steps[f.open_step].incomplete = true;
    close(f, event_count);
  }
  return out;
}

// Scope and block correspondence candidate -> reference.
struct StructureMap {
  std::vector<int32_t> scope_to_ref;  // candidate scope -> reference scope (-1)
  std::vector<int32_t> ref_to_scope;
  std::vector<cfg::BlockMatching> blocks;  // per candidate scope (empty if unmatched)

  std::optional<int32_t> RefBlock(int32_t scope, int32_t block) const {
    if (scope < 0 || block < 0 || scope_to_ref[scope] < 0) return std::nullopt;
    auto r = blocks[scope].ReferenceFor(static_cast<cfg::BlockId>(block));
    if (!r) return std::nullopt;
    return static_cast<int32_t>(*r);
  }
  bool RefHasCounterpart(int32_t ref_scope, int32_t ref_block) const {
    if (ref_scope < 0 || ref_block < 0) return false;
    int32_t cs = ref_to_scope[ref_scope];
    if (cs < 0) return false;
    return blocks[cs].CandidateFor(static_cast<cfg::BlockId>(ref_block)).has_value();
  }
};

StructureMap MapStructure(const PreparedProgram& cand, const PreparedProgram& ref,
                          const cfg::MatchOptions& options) {
  StructureMap m;
  m.scope_to_ref.assign(cand.cfg().scopes().size(), -1);
  m.ref_to_scope.assign(ref.cfg().scopes().size(), -1);
  m.blocks.resize(cand.cfg().scopes().size());
  for (const cfg::ScopeMatch& s : cfg::MatchScopes(cand.cfg(), ref.cfg(), options)) {
    if (s.candidate < 0 || s.reference < 0) continue;
    m.scope_to_ref[s.candidate] = s.reference;
    m.ref_to_scope[s.reference] = s.candidate;
    m.blocks[s.candidate] =
        cfg::MatchBlocks(cand.cfg(), s.candidate, ref.cfg(), s.reference, options);
  }
  return m;
}

// Agreement of two value histories: the larger of the positional agreement over the
// shorter prefix and the Jaccard overlap of the value sets.
double HistoryAgreement(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  if (a.empty() || b.empty()) return 0;
  size_t n = std::min(a.size(), b.size());
  size_t same = 0;
  for (size_t i = 0; i < n; ++i) same += a[i] == b[i];
  double positional = double(same) / double(std::max(a.size(), b.size()));
  std::set<uint64_t> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  size_t inter = 0;
  for (uint64_t h : sa) inter += sb.count(h);
  double jaccard = double(inter) / double(sa.size() + sb.size() - inter);
  return std::max(positional, jaccard);
}

// ---- what a statement assigns, read from its text (names only: no evaluation) ----------

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Splits `text` at the top-level occurrences of `sep` (outside brackets and strings).
std::vector<std::string> SplitTopLevel(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  char quote = 0;
  for (size_t k = 0; k < text.size(); ++k) {
    char ch = text[k];
    if (quote) {
      if (ch == '\\' && k + 1 < text.size()) {
        cur += ch;
        ch = text[++k];
      } else if (ch == quote) {
        quote = 0;
      }
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
    } else if (ch == '(' || ch == '[' || ch == '{') {
      ++depth;
    } else if (ch == ')' || ch == ']' || ch == '}') {
      --depth;
    } else if (ch == sep && depth == 0) {
      parts.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    cur += ch;
  }
  parts.push_back(std::move(cur));
  return parts;
}

// The names an assignment target list binds or mutates: `a`, `a, b`, `(a, b)`, `*rest`,
// `a[i]` and `a.f` (the base name `a`).
std::vector<std::string> TargetNames(const std::string& targets) {
  std::vector<std::string> names;
  for (const std::string& part : SplitTopLevel(targets, ',')) {
    size_t k = 0;
    while (k < part.size() && (std::isspace(static_cast<unsigned char>(part[k])) ||
                               part[k] == '(' || part[k] == '[' || part[k] == '*')) {
      ++k;
    }
    size_t b = k;
    if (b >= part.size() || !IsIdentStart(part[b])) continue;
    while (k < part.size() && IsIdentChar(part[k])) ++k;
    names.push_back(part.substr(b, k - b));
  }
  return names;
}

// The target list of a `for` statement's header (`for a, b in pairs:` -> "a, b"), or "".
std::string ForTargets(const std::string& header) {
  size_t k = header.find("for");
  if (k == std::string::npos) return "";
  k += 3;
  int depth = 0;
  for (size_t m = k; m + 3 < header.size(); ++m) {
    char ch = header[m];
    if (ch == '(' || ch == '[' || ch == '{') ++depth;
    if (ch == ')' || ch == ']' || ch == '}') --depth;
    if (depth == 0 && std::isspace(static_cast<unsigned char>(ch)) &&
        header.compare(m + 1, 2, "in") == 0 && m + 3 < header.size() &&
        !IsIdentChar(header[m + 3])) {
      return header.substr(k, m - k);
    }
  }
  return "";
}

std::string StatementText(const PreparedProgram& p, const cfg::Statement& st) {
  const std::string& src = p.source();
  size_t b = std::min<size_t>(st.span.begin_byte, src.size());
  size_t e = std::min<size_t>(std::max(st.span.end_byte, st.span.begin_byte), src.size());
  return src.substr(b, e - b);
}

// Names a statement assigns or mutates: assignment and augmented-assignment targets, a
// `for` header's targets, and the receiver of a method-call statement (`out.append(x)`).
std::vector<std::string> AssignedNames(const PreparedProgram& p, const cfg::Statement& st) {
  const std::string text = StatementText(p, st);
  switch (st.kind) {
    case cfg::StmtKind::kFor:
    case cfg::StmtKind::kAsyncFor:
      return TargetNames(ForTargets(text));
    case cfg::StmtKind::kAugAssign:
    case cfg::StmtKind::kAnnAssign:
      return TargetNames(SplitTopLevel(SplitTopLevel(text, ':').front(), '=').front());
    case cfg::StmtKind::kAssign: {
      // Top-level `=` that is not part of `==`, `<=`, `>=`, `!=`, `:=`: what precedes each
      // is a target list.
      std::vector<std::string> names;
      int depth = 0;
      char quote = 0;
      size_t from = 0;
      for (size_t k = 0; k < text.size(); ++k) {
        char ch = text[k];
        if (quote) {
          if (ch == '\\') {
            ++k;
          } else if (ch == quote) {
            quote = 0;
          }
          continue;
        }
        if (ch == '\'' || ch == '"') quote = ch;
        if (ch == '(' || ch == '[' || ch == '{') ++depth;
        if (ch == ')' || ch == ']' || ch == '}') --depth;
        if (ch != '=' || depth != 0) continue;
        bool in_operator = (k > 0 && std::strchr("=!<>:", text[k - 1]) != nullptr) ||
                           (k + 1 < text.size() && text[k + 1] == '=');
        if (in_operator) continue;
        for (std::string& n : TargetNames(text.substr(from, k - from)))
          names.push_back(std::move(n));
        from = k + 1;
      }
      return names;
    }
    case cfg::StmtKind::kExpression: {
      size_t k = 0;
      while (k < text.size() && std::isspace(static_cast<unsigned char>(text[k]))) ++k;
      size_t b = k;
      if (b >= text.size() || !IsIdentStart(text[b])) return {};
      while (k < text.size() && IsIdentChar(text[k])) ++k;
      if (k < text.size() && text[k] == '.') return {text.substr(b, k - b)};
      return {};
    }
    default:
      return {};
  }
}

// The targets of each `for` header block of a scope: block -> names in target order.
// The iterable of a `for` header (`for i in range(len(xs)):` -> "range(len(xs))"), or "".
std::string ForIterable(const std::string& header) {
  const std::string targets = ForTargets(header);
  if (targets.empty()) return "";
  size_t k = header.find(targets);
  if (k == std::string::npos) return "";
  k = header.find("in", k + targets.size());
  if (k == std::string::npos) return "";
  std::string it = header.substr(k + 2);
  while (!it.empty() && (std::isspace(static_cast<unsigned char>(it.back())) || it.back() == ':')) {
    it.pop_back();
  }
  size_t b = 0;
  while (b < it.size() && std::isspace(static_cast<unsigned char>(it[b]))) ++b;
  return it.substr(b);
}
// What a `for` header's variable stands for: 1 an element's place in a sequence
// (`range(len(xs))`, `range(1, len(xs) - 1)`), 2 an element (`xs`, `xs[1:]`, `sorted(xs)`),
// 0 anything else (a count `range(n)`, `enumerate(xs)`, `zip(...)`: no claim).
int LoopRole(const std::string& iterable) {
  std::string t;
  for (char c : iterable) {
    if (!std::isspace(static_cast<unsigned char>(c))) t += c;
  }
  if (t.empty()) return 0;
  if (t.rfind("range(", 0) == 0) return t.find("len(") != std::string::npos ? 1 : 0;
  for (const char* other : {"enumerate(", "zip(", "reversed(range(", "itertools."}) {
    if (t.rfind(other, 0) == 0) return 0;
  }
  return 2;
}

std::map<int32_t, std::vector<std::string>> LoopTargets(const PreparedProgram& p, int32_t scope) {
  std::map<int32_t, std::vector<std::string>> out;
  const cfg::FunctionCfg& f = p.cfg().scopes()[scope];
  for (cfg::BlockId b = 0; b < f.block_count(); ++b) {
    for (const cfg::Statement& st : f.block(b).statements) {
      if (st.kind == cfg::StmtKind::kFor || st.kind == cfg::StmtKind::kAsyncFor) {
        out[static_cast<int32_t>(b)] = AssignedNames(p, st);
      }
    }
  }
  return out;
}
// A loop of a scope: its header block and the bytes from its header to the end of its
// body (the first later statement of the scope indented no deeper than the header).
struct LoopExtent {
  int32_t block = -1;
  uint32_t begin = 0, end = 0;
  bool Contains(const SourceSpan& sp) const {
    return sp.valid() && sp.begin_byte >= begin && sp.begin_byte < end;
  }
};
// Every statement of a scope, in source order.
std::vector<const cfg::Statement*> ScopeStatements(const PreparedProgram& p, int32_t scope) {
  const cfg::FunctionCfg& f = p.cfg().scopes()[scope];
  std::vector<const cfg::Statement*> all;
  for (cfg::BlockId b = 0; b < f.block_count(); ++b) {
    for (const cfg::Statement& st : f.block(b).statements) all.push_back(&st);
  }
  std::sort(all.begin(), all.end(), [](const cfg::Statement* a, const cfg::Statement* b) {
    return a->span.begin_byte < b->span.begin_byte;
  });
  return all;
}
std::vector<LoopExtent> LoopExtents(const PreparedProgram& p, int32_t scope) {
  std::vector<LoopExtent> out;
  const cfg::FunctionCfg& f = p.cfg().scopes()[scope];
  const std::vector<const cfg::Statement*> all = ScopeStatements(p, scope);
  for (cfg::BlockId b = 0; b < f.block_count(); ++b) {
    for (const cfg::Statement& h : f.block(b).statements) {
      if (h.kind != cfg::StmtKind::kFor && h.kind != cfg::StmtKind::kAsyncFor &&
          h.kind != cfg::StmtKind::kWhile) {
        continue;
      }
      LoopExtent e{static_cast<int32_t>(b), h.span.begin_byte, f.span.end_byte};
      for (const cfg::Statement* st : all) {
        if (st->span.begin_byte > h.span.end_byte && st->span.begin.column <= h.span.begin.column &&
            st->span.begin_byte < e.end) {
          e.end = st->span.begin_byte;
        }
      }
      out.push_back(e);
    }
  }
  return out;
}
// The iterables of each `for` header block of a scope: block -> ForIterable.
std::map<int32_t, std::string> LoopIterables(const PreparedProgram& p, int32_t scope) {
  std::map<int32_t, std::string> out;
  const cfg::FunctionCfg& f = p.cfg().scopes()[scope];
  for (cfg::BlockId b = 0; b < f.block_count(); ++b) {
    for (const cfg::Statement& st : f.block(b).statements) {
      if (st.kind == cfg::StmtKind::kFor || st.kind == cfg::StmtKind::kAsyncFor) {
        out[static_cast<int32_t>(b)] = ForIterable(StatementText(p, st));
      }
    }
  }
  return out;
}

// Per variable of a scope, the blocks whose statements assign or mutate it, as ids of the
// reference's blocks: a candidate block is translated through the block matching (`to_ref`),
// one without a counterpart gets an id no reference block has.
std::map<std::string, std::set<int64_t>> AssignmentSites(
    const PreparedProgram& p, int32_t scope,
    const std::function<std::optional<int32_t>(int32_t)>& to_ref) {
  std::map<std::string, std::set<int64_t>> out;
  const cfg::FunctionCfg& f = p.cfg().scopes()[scope];
  for (cfg::BlockId b = 0; b < f.block_count(); ++b) {
    std::optional<int32_t> r = to_ref(static_cast<int32_t>(b));
    int64_t id = r ? *r : (int64_t{1} << 32) + static_cast<int64_t>(b);
    for (const cfg::Statement& st : f.block(b).statements) {
      for (const std::string& n : AssignedNames(p, st)) out[n].insert(id);
    }
  }
  return out;
}

// Jaccard overlap of two variables' assignment sites; two variables no statement assigns
// (parameters) agree.
double SiteAgreement(const std::set<int64_t>* a, const std::set<int64_t>* b) {
  size_t na = a ? a->size() : 0, nb = b ? b->size() : 0;
  if (na == 0 && nb == 0) return 1;
  if (na == 0 || nb == 0) return 0;
  size_t inter = 0;
  for (int64_t x : *a) inter += b->count(x);
  return double(inter) / double(na + nb - inter);
}

// Candidate variable -> reference variable, per candidate scope.
using VarMap = std::vector<std::map<std::string, std::string>>;
// Per candidate scope and variable: how much a difference on the pair can be trusted.
using VarConfidence = std::vector<std::map<std::string, double>>;

// Confidence of a pair by how it was made: by name 0.9; by value history 0.5-0.9 rising with
// the agreement; by first binding 0.45 (a renamed variable the bug itself changed, when it is
// the best-agreeing candidate). All stay above earliest_min_confidence: distrusting pairs
// whose histories agree on half their values (a loop counter and an accumulator of small
// numbers can) was measured to lose more wrong initializations than it saved distractors
// (learns v1 set, bench/localize_real: 0.855 -> 0.838).
constexpr double kNameConfidence = 0.9;
// The targets of two `for` headers the block matching pairs: the same role whatever values
// the bug gives them (`for v in xs[1:]` against `for x in xs`).
constexpr double kLoopConfidence = 0.85;
// ... unless one loop walks indices and the other elements (`for i in range(len(xs))`
// against `for x in xs`): a difference on that pair is one of representation, not a fault
// (below earliest_min_confidence).
constexpr double kLoopRepresentationConfidence = 0.3;
constexpr double kBindingConfidence = 0.45;
// Paired by assignment sites alone (the same blocks assign them; their values differ).
constexpr double kSiteConfidence = 0.5;
// Histories this close pair whatever their assignment sites.
constexpr double kCloseHistory = 0.8;
double HistoryConfidence(double agreement) {
  return std::clamp(0.5 + 0.8 * (agreement - 0.5), 0.5, 0.9);
}

VarMap MapVariables(const PreparedProgram& cand, const PreparedProgram& ref, const StepStream& cs,
                    const StepStream& rs, const StructureMap& sm, double min_agreement,
                    std::vector<VariableMapping>* out, VarConfidence* confidence) {
  VarMap map(cand.cfg().scopes().size());
  confidence->assign(cand.cfg().scopes().size(), {});
  std::map<int32_t, std::vector<std::string>> cand_names, ref_names;
  for (const auto& [key, hist] : cs.histories) {
    if (key.first >= 0) cand_names[key.first].push_back(key.second);
  }
  for (const auto& [key, hist] : rs.histories) {
    if (key.first >= 0) ref_names[key.first].push_back(key.second);
  }
  for (auto& [scope, names] : cand_names) {
    int32_t rscope = sm.scope_to_ref[scope];
    if (rscope < 0) continue;
    const std::string& fn = cand.cfg().scopes()[scope].qualified_name;
    std::vector<std::string>& rnames = ref_names[rscope];
    std::set<std::string> rset(rnames.begin(), rnames.end());
    std::vector<std::string> cand_left, ref_left;
    std::set<std::string> used;
    // Loop variables of matched `for` headers pair by their place, before names and values:
    // a range bug changes every value the loop variable takes, and an inner loop's `i` is
    // not the reference's outer `i`.
    std::set<std::string> cand_loop_paired;
    const std::map<int32_t, std::vector<std::string>> ref_loops = LoopTargets(ref, rscope);
    std::set<std::string> cset(names.begin(), names.end());
    std::map<int32_t, std::string> cand_iterables = LoopIterables(cand, scope);
    std::map<int32_t, std::string> ref_iterables = LoopIterables(ref, rscope);
    for (const auto& [block, targets] : LoopTargets(cand, scope)) {
      auto rb = sm.RefBlock(scope, block);
      if (!rb) continue;
      auto rit = ref_loops.find(*rb);
      if (rit == ref_loops.end() || rit->second.size() != targets.size()) continue;
      for (size_t k = 0; k < targets.size(); ++k) {
        const std::string& c = targets[k];
        const std::string& r = rit->second[k];
        if (!cset.count(c) || !rset.count(r) || map[scope].count(c) || used.count(r)) continue;
        const double h =
            HistoryAgreement(cs.histories.at({scope, c}), rs.histories.at({rscope, r}));
        const int crole = LoopRole(cand_iterables[block]), rrole = LoopRole(ref_iterables[*rb]);
        const bool representation = crole != 0 && rrole != 0 && crole != rrole;
        const bool same_name = c == r;
        map[scope][c] = r;
        (*confidence)[scope][c] = representation ? kLoopRepresentationConfidence
                                  : same_name    ? kNameConfidence
                                                 : kLoopConfidence;
        used.insert(r);
        cand_loop_paired.insert(c);
        out->push_back({fn, c, r, !same_name, same_name ? "name" : "loop", same_name ? 1.0 : h});
      }
    }
    // The role of each name a `for` header binds (LoopRole; 0 when its headers disagree).
    auto roles_of = [](const std::map<int32_t, std::vector<std::string>>& loops,
                       std::map<int32_t, std::string>& iterables) {
      std::map<std::string, int> roles;
      for (const auto& [block, targets] : loops) {
        const int role = LoopRole(iterables[block]);
        for (const std::string& t : targets) {
          auto [it, fresh] = roles.emplace(t, role);
          if (!fresh && it->second != role) it->second = 0;
        }
      }
      return roles;
    };
    const std::map<std::string, int> cand_roles = roles_of(LoopTargets(cand, scope), cand_iterables);
    const std::map<std::string, int> ref_roles = roles_of(ref_loops, ref_iterables);
    for (const std::string& n : names) {
      if (cand_loop_paired.count(n)) continue;
      if (rset.count(n) && !used.count(n)) {
        map[scope][n] = n;
        // The same name on loops over indices and over elements: two representations.
        auto cr = cand_roles.find(n);
        auto rr = ref_roles.find(n);
        const bool representation = cr != cand_roles.end() && rr != ref_roles.end() &&
                                    cr->second != 0 && rr->second != 0 && cr->second != rr->second;
        (*confidence)[scope][n] = representation ? kLoopRepresentationConfidence : kNameConfidence;
        used.insert(n);
        out->push_back({fn, n, n, false, "name", 1.0});
      } else {
        cand_left.push_back(n);
      }
    }
    cand_left.erase(
        std::remove_if(cand_left.begin(), cand_left.end(),
                       [&](const std::string& n) { return cand_loop_paired.count(n) > 0; }),
        cand_left.end());
    for (const std::string& n : rnames) {
      if (!used.count(n)) ref_left.push_back(n);
    }
    // Where each variable is assigned, in the reference's blocks: a distractor counter
    // (`seen += 1` in the loop body) and the accumulator it resembles (`n += 1` under the
    // `if`) take similar values but are assigned in different places.
    const auto cand_sites =
        AssignmentSites(cand, scope, [&](int32_t b) { return sm.RefBlock(scope, b); });
    const auto ref_sites =
        AssignmentSites(ref, rscope, [](int32_t b) { return std::optional<int32_t>(b); });
    auto site_agreement = [&](const std::string& c, const std::string& r) {
      auto a = cand_sites.find(c);
      auto b = ref_sites.find(r);
      return SiteAgreement(a == cand_sites.end() ? nullptr : &a->second,
                           b == ref_sites.end() ? nullptr : &b->second);
    };
    // Greedy by agreement of values and of assignment sites (half each), among pairs whose
    // combined agreement reaches min_agreement or whose histories alone agree closely (a
    // variable assigned elsewhere in a differently written program); ties broken by name
    // order (deterministic).
    struct Cand {
      double score;
      double history;
      std::string c, r;
    };
    std::vector<Cand> pairs;
    for (const std::string& c : cand_left) {
      for (const std::string& r : ref_left) {
        double h = HistoryAgreement(cs.histories.at({scope, c}), rs.histories.at({rscope, r}));
        double combined = 0.5 * h + 0.5 * site_agreement(c, r);
        if (h >= min_agreement && (combined >= min_agreement || h >= kCloseHistory)) {
          pairs.push_back({combined, h, c, r});
        }
      }
    }
    std::sort(pairs.begin(), pairs.end(), [](const Cand& a, const Cand& b) {
      if (a.score != b.score) return a.score > b.score;
      return a.c != b.c ? a.c < b.c : a.r < b.r;
    });
    std::set<std::string> cu, ru;
    for (const Cand& p : pairs) {
      if (cu.count(p.c) || ru.count(p.r)) continue;
      cu.insert(p.c);
      ru.insert(p.r);
      map[scope][p.c] = p.r;
      (*confidence)[scope][p.c] = HistoryConfidence(p.history);
      out->push_back({fn, p.c, p.r, true, "history", p.history});
    }
    // A renamed variable the bug itself changed keeps little of its history: pair the
    // rest in order of first binding when they start from the same value.
    auto by_binding = [](const StepStream& st, int32_t sc, std::vector<std::string> names,
                         const std::set<std::string>& used) {
      std::vector<std::string> left;
      for (std::string& n : names) {
        if (!used.count(n)) left.push_back(std::move(n));
      }
      std::sort(left.begin(), left.end(), [&](const std::string& a, const std::string& b) {
        return st.first_bound.at({sc, a}) < st.first_bound.at({sc, b});
      });
      return left;
    };
    std::vector<std::string> cl = by_binding(cs, scope, cand_left, cu);
    std::vector<std::string> rl = by_binding(rs, rscope, ref_left, ru);
    size_t next = 0;
    for (size_t p = 0; p < cl.size(); ++p) {
      const std::string& c = cl[p];
      for (size_t k = next; k < rl.size(); ++k) {
        const std::vector<uint64_t>& rh = rs.histories.at({rscope, rl[k]});
        if (cs.histories.at({scope, c}).front() == rh.front()) {
          // A later-bound variable with the same first value whose history agrees better
          // takes this one (a distractor counter `scanned = 0` bound before the renamed
          // accumulator does not steal the accumulator's pair).
          // Assigned where the reference's variable is assigned first, then by values.
          auto fit = [&](const std::string& name) {
            return std::make_pair(site_agreement(name, rl[k]),
                                  HistoryAgreement(cs.histories.at({scope, name}), rh));
          };
          const auto mine = fit(c);
          bool better_later = false;
          for (size_t q = p + 1; q < cl.size() && !better_later; ++q) {
            const std::vector<uint64_t>& qh = cs.histories.at({scope, cl[q]});
            better_later = qh.front() == rh.front() && fit(cl[q]) > mine;
          }
          if (better_later) break;
          map[scope][c] = rl[k];
          (*confidence)[scope][c] = kBindingConfidence;
          out->push_back({fn, c, rl[k], true, "binding",
                          HistoryAgreement(cs.histories.at({scope, c}),
                                           rs.histories.at({rscope, rl[k]}))});
          next = k + 1;
          break;
        }
      }
    }
    // Last, by place alone: a variable still unpaired that is assigned in exactly the blocks
    // where one unpaired reference variable is, and no other unpaired variable of either
    // side is (an accumulator whose wrong start, `cnt = 1`, shifted every value it took).
    std::set<std::string> ref_taken;
    for (const auto& [c, r] : map[scope]) ref_taken.insert(r);
    std::vector<std::string> cfree, rfree;
    for (const std::string& c : cand_left) {
      if (!map[scope].count(c) && cand_sites.count(c)) cfree.push_back(c);
    }
    for (const std::string& r : ref_left) {
      if (!ref_taken.count(r) && ref_sites.count(r)) rfree.push_back(r);
    }
    auto same_sites = [&](const std::string& c, const std::string& r) {
      return cand_sites.at(c) == ref_sites.at(r);
    };
    for (const std::string& c : cfree) {
      std::vector<std::string> hits;
      for (const std::string& r : rfree) {
        if (same_sites(c, r)) hits.push_back(r);
      }
      if (hits.size() != 1) continue;
      size_t rivals = 0;
      for (const std::string& other : cfree) rivals += same_sites(other, hits[0]);
      if (rivals != 1) continue;
      map[scope][c] = hits[0];
      (*confidence)[scope][c] = kSiteConfidence;
      out->push_back(
          {fn, c, hits[0], true, "sites",
           HistoryAgreement(cs.histories.at({scope, c}), rs.histories.at({rscope, hits[0]}))});
    }
  }
  std::sort(out->begin(), out->end(), [](const VariableMapping& a, const VariableMapping& b) {
    return a.function != b.function ? a.function < b.function : a.candidate < b.candidate;
  });
  return map;
}

// The kind of value a canonical rendering (trace.proto Value.text) shows; 0 when unknown
// (user objects, numbers, None, ...).
enum ValueKindId { kOtherKind = 0, kStrKind, kListKind, kTupleKind, kSetKind, kDictKind };
int ValueKind(const std::string& t) {
  if (t.empty()) return kOtherKind;
  const char c = t[0];
  if (c == '\'' || c == '"') return kStrKind;
  if (c == '[') return kListKind;
  if (c == '(') return kTupleKind;
  if (c == '{') {
    // A dict shows `key: value` at its top level; `{}` is an empty dict.
    if (t == "{}") return kDictKind;
    for (const std::string& part : SplitTopLevel(t.substr(1, t.size() > 1 ? t.size() - 2 : 0), ',')) {
      return SplitTopLevel(part, ':').size() > 1 ? kDictKind : kSetKind;
    }
    return kSetKind;
  }
  return kOtherKind;
}
// The distinct elements of a string's, list's, tuple's or set's rendering, strings
// unquoted (`'aei'`, `['a', 'e', 'i']` and `{'a', 'e', 'i'}` all give {a, e, i}). A long
// collection's rendering shows its first elements and its length
// (`{'A', 'E', …}(len=10)#…`): *length is that length, else 0 (all shown). False when the
// rendering holds escapes (not decoded here) or cannot be read.
bool CollectionElements(const std::string& t, int kind, std::set<std::string>* out,
                        size_t* length) {
  out->clear();
  *length = 0;
  const std::string ellipsis = "\xe2\x80\xa6";
  if (t.size() < 2 || t.find('\\') != std::string::npos) return false;
  std::string inner;
  bool cut = false;
  const char close = kind == kListKind ? ']' : kind == kTupleKind ? ')' : '}';
  const size_t len_at = t.rfind(std::string(1, close) + "(len=");
  if (kind != kStrKind && t.back() != close && len_at != std::string::npos) {
    inner = t.substr(1, len_at - 1);
    *length = std::strtoul(t.c_str() + len_at + 6, nullptr, 10);
    cut = true;
  } else {
    if (t.back() != (kind == kStrKind ? t.front() : close)) return false;
    inner = t.substr(1, t.size() - 2);
  }
  if (kind == kStrKind) {
    if (inner.find(ellipsis) != std::string::npos) return false;
    for (char c : inner) out->insert(std::string(1, c));
    return true;
  }
  if (inner.find_first_not_of(" ,") == std::string::npos) return !cut;
  bool saw_ellipsis = false;
  for (const std::string& part : SplitTopLevel(inner, ',')) {
    const size_t b = part.find_first_not_of(' '), e = part.find_last_not_of(' ');
    if (b == std::string::npos) continue;
    std::string el = part.substr(b, e - b + 1);
    if (el == ellipsis) {
      saw_ellipsis = true;
      continue;
    }
    if (el.find(ellipsis) != std::string::npos) return false;  // an element cut short
    if (el.size() >= 2 && (el[0] == '\'' || el[0] == '"') && el.back() == el[0]) {
      el = el.substr(1, el.size() - 2);
    }
    out->insert(el);
  }
  return saw_ellipsis == cut;
}
// Two renderings of one collection in different types (the vowels as a string and as a
// set of the same letters): a representation, not a difference of value. Holding other
// elements (a list of five vowels against a string of ten letters) is a difference.
bool SameCollectionOtherType(const std::string& a, const std::string& b) {
  const int x = ValueKind(a), y = ValueKind(b);
  if (x == y || x == kOtherKind || y == kOtherKind || x == kDictKind || y == kDictKind) return false;
  std::set<std::string> ea, eb;
  size_t la = 0, lb = 0;
  if (!CollectionElements(a, x, &ea, &la) || !CollectionElements(b, y, &eb, &lb)) return false;
  if (la > 0 && lb > 0) return false;  // both cut short: not known
  if (la == 0 && lb == 0) return ea == eb;
  // One shows only its first elements: they must all be the other's, and its length the
  // number of the other's elements.
  const std::set<std::string>& shown = la > 0 ? ea : eb;
  const std::set<std::string>& whole = la > 0 ? eb : ea;
  const size_t length = la > 0 ? la : lb;
  if (length != whole.size()) return false;
  for (const std::string& e : shown) {
    if (!whole.count(e)) return false;
  }
  return true;
}

// Two kinds of collection (string, list, tuple, set; dicts aside) sharing fewer than half
// the elements of the smaller: `['2020', '03', '11']` against `'2020-03-11'`; or a number
// against a collection other than a string. Not a list of vowels against a string of them
// (the same elements, or most of them: that is a value).
bool IsNumberText(const std::string& t) {
  if (t.empty()) return false;
  size_t k = (t[0] == '-') ? 1 : 0;
  if (k >= t.size()) return false;
  bool digit = false;
  for (; k < t.size(); ++k) {
    const char c = t[k];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digit = true;
    } else if (c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-') {
      return false;
    }
  }
  return digit;
}
bool OtherKindOtherElements(const std::string& a, const std::string& b) {
  const int x = ValueKind(a), y = ValueKind(b);
  // A number against a list, tuple, set or dict (a running sum against the list of terms
  // the reference sums at the end). Not against a string: '5' for 5 is a fault.
  if ((x == kOtherKind && y != kOtherKind && y != kStrKind && IsNumberText(a)) ||
      (y == kOtherKind && x != kOtherKind && x != kStrKind && IsNumberText(b))) {
    return true;
  }
  if (x == y || x == kOtherKind || y == kOtherKind || x == kDictKind || y == kDictKind) return false;
  std::set<std::string> ea, eb;
  size_t la = 0, lb = 0;
  if (!CollectionElements(a, x, &ea, &la) || !CollectionElements(b, y, &eb, &lb)) return false;
  if (ea.empty() || eb.empty()) return false;
  size_t shared = 0;
  for (const std::string& e : ea) shared += eb.count(e);
  return 2 * shared < std::min(ea.size(), eb.size());
}

const Value* FindValue(const std::vector<std::pair<std::string, Value>>& state,
                       const std::string& name) {
  for (const auto& [n, v] : state) {
    if (n == name) return &v;
  }
  return nullptr;
}


class Aligner {
 public:
  Aligner(const PreparedProgram& cand, const PreparedProgram& ref, StepStream cs, StepStream rs,
          const DivergenceOptions& options, DivergenceReport* report)
      : cand_(cand),
        ref_(ref),
        cs_(std::move(cs)),
        rs_(std::move(rs)),
        options_(options),
        report_(report) {
    sm_ = MapStructure(cand, ref, options.match);
    vars_ = MapVariables(cand, ref, cs_, rs_, sm_, options.rename_min_agreement,
                         &report_->alignment.variables, &var_confidence_);
    root_agrees_ = RootsThatAgree();
    IdenticalScopes();
  }

  void Run() {
    const size_t nc = cs_.steps.size(), nr = rs_.steps.size();
    size_t i = 0, j = 0;
    while (i < nc && j < nr) {
      if (SkipIdenticalCallee(cs_, &i, /*candidate=*/true) ||
          SkipIdenticalCallee(rs_, &j, /*candidate=*/false)) {
        continue;
      }
      if (!CandidateMatched(i)) {
        CarryGap(cs_.steps[i], &carried_candidate_);
        Push(static_cast<int32_t>(i++), -1);
        continue;
      }
      if (!ReferenceMatched(j)) {
        CarryGap(rs_.steps[j], &carried_reference_);
        Push(-1, static_cast<int32_t>(j++));
        continue;
      }
      if (Corresponds(i, j)) {
        AlignPair(i, j);
        ++i;
        ++j;
        continue;
      }
      // A call one program makes where the other makes none (a helper used in another
      // place, a check the other does not need) is a difference in how, not yet in what:
      // the callee's steps become gaps, and what the call changed shows in the caller.
      if (SkipExtraCall(cs_, &i, /*candidate=*/true, j) || SkipExtraCall(rs_, &j, false, i)) {
        continue;
      }
      if (SkipFrameEndedAlike(&i, &j)) continue;
      if (SkipAgreeingLoop(&i, &j)) continue;
      Diverge(MakeControl(i, j), cs_.steps[i].step.first_event);
      if (SkipAgreeingCall(&i, &j)) continue;
      if (!Resync(&i, &j)) break;
    }
    // Steps only one program has (unmatched blocks, e.g. the comprehension frames of a
    // one-line reference) left at the end of either side: nothing comparable goes on.
    if (i >= nc) {
      while (j < nr && !ReferenceMatched(j)) Push(-1, static_cast<int32_t>(j++));
    }
    if (j >= nr) {
      while (i < nc && !CandidateMatched(i)) Push(static_cast<int32_t>(i++), -1);
    }
    bool diverged = report_->divergence_count > 0;
    if (i < nc && j >= nr && !rs_.truncated) {
      if (!diverged || options_.resync_window > 0) {
        Diverge(MakeEnded(i, /*candidate_longer=*/true), cs_.steps[i].step.first_event);
      }
    } else if (j < nr && i >= nc && !cs_.truncated) {
      if (!diverged || options_.resync_window > 0) {
        Diverge(MakeEnded(i, false), std::numeric_limits<int64_t>::max());
      }
    }
    for (; i < nc; ++i) Push(static_cast<int32_t>(i), -1);
    for (; j < nr; ++j) Push(-1, static_cast<int32_t>(j));
    UnalignedRootReturns();
    if (options_.compare_output) FindOutputDivergence();
  }

  // A call the tests made whose returned value differs from the reference's call's, where
  // the candidate returned from a step no reference step was aligned with (a return inside
  // a block the reference does not have, e.g. `return string + string[:i-1][::-1]` inside
  // a search loop the reference writes otherwise): the wrong value was never compared, and
  // the frame merely "ended". It is a return divergence at that statement (where the wrong
  // value became visible; confidence 0.5), observable when the step closed.
  void UnalignedRootReturns() {
    std::vector<bool> aligned(cs_.steps.size(), false);
    for (const AlignedPair& p : report_->alignment.pairs) {
      if (p.candidate >= 0 && p.reference >= 0) aligned[p.candidate] = true;
    }
    for (size_t k = 0; k < cs_.steps.size(); ++k) {
      const StepRec& s = cs_.steps[k];
      if (!s.step.returned || s.step.depth != 1 || s.root < 0 || aligned[k]) continue;
      if (s.root >= static_cast<int32_t>(root_agrees_.size()) || root_agrees_[s.root]) continue;
      const int32_t rr = ReferenceRoot(s.root);
      if (rr < 0 || !rs_.roots[rr].returned || rs_.roots[rr].hash == s.return_hash) continue;
      if (!cs_.roots[s.root].returned || cs_.roots[s.root].hash != s.return_hash) continue;
      Divergence d;
      d.kind = DivergenceKind::kReturnValue;
      d.candidate_step = static_cast<int32_t>(k);
      d.span = s.step.last_statement;
      d.variables.push_back({"<return>", "<return>", s.step.return_value, rs_.roots[rr].text});
      d.detail = "returns " + s.step.return_value + ", reference returns " + rs_.roots[rr].text;
      d.confidence = 0.5;
      d.evidence = "the value returned to the tests differs, returned from a block the reference "
                   "does not have";
      // A constant (`return False`, `return -1`) is wrong only by being reached: the decision
      // that sent control there is blamed, as for a control divergence.
      if (ReturnsConstant(s.step.last_statement)) {
        if (const SourceSpan* decision = DecisionBefore(k, s.step.frame)) {
          d.span = *decision;
          d.evidence = "the value returned to the tests differs: a constant returned from a "
                       "block the reference does not have, reached by this decision";
        }
      }
      found_after_walk_ = true;
      Diverge(std::move(d), s.close_event);
      found_after_walk_ = false;
    }
  }

  // Standard output compared as one byte stream, independent of the alignment: the
  // candidate's chunk that holds the first byte where it departs from the reference's
  // output (or its first byte past the end of a complete reference output) is blamed on
  // the statement that wrote it, observable at the event that reported it. A candidate
  // that writes less than the reference has no statement to blame for it here (its missing
  // output shows as a value, control or ended divergence, or not at all).
  void FindOutputDivergence() {
    const std::string& c = cs_.output;
    const std::string& r = rs_.output;
    size_t n = std::min(c.size(), r.size());
    size_t p = static_cast<size_t>(std::mismatch(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(n),
                                                 r.begin()).first -
                                   c.begin());
    if (p == n) {
      bool reference_complete = !rs_.truncated && !rs_.output_truncated;
      if (c.size() <= r.size() || !reference_complete) return;
    }
    auto it = std::upper_bound(cs_.chunks.begin(), cs_.chunks.end(), p,
                               [](size_t at, const OutputChunk& k) { return at < k.offset; });
    if (it == cs_.chunks.begin()) return;
    const OutputChunk& chunk = *(it - 1);
    if (chunk.step < 0 || p >= chunk.offset + chunk.length) return;
    Divergence d;
    d.kind = DivergenceKind::kOutput;
    d.candidate_step = chunk.step;
    d.span = chunk.span;
    // The chunk as written, and the reference's bytes from the same place to the end of
    // that line (at most 60 each).
    std::string ref_text = "<end>";
    if (chunk.offset < r.size()) {
      size_t eol = r.find('\n', chunk.offset);
      size_t len = eol == std::string::npos ? r.size() - chunk.offset : eol + 1 - chunk.offset;
      ref_text = r.substr(chunk.offset, std::min<size_t>(len, 60));
    }
    d.variables.push_back({"<stdout>", "<stdout>",
                           c.substr(chunk.offset, std::min<size_t>(chunk.length, 60)), ref_text});
    d.detail = "writes output that differs from the reference's at byte " + std::to_string(p);
    // Where the wrong output became visible: the printed value may have been made earlier.
    d.confidence = 0.6;
    d.evidence = "the first output byte that differs from the reference's was written here";
    Diverge(std::move(d), chunk.event);
  }

  void Finish() {
    std::stable_sort(found_.begin(), found_.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    if (!found_.empty()) {
      report_->earliest = found_.front().second;
      // The first well-founded divergence in a call whose outcome differs; failing that,
      // the first well-founded one anywhere (a test may judge more than a returned value).
      // Then the first one of any confidence in such a call: a call that returned the
      // reference's value holds nothing the tests saw wrong.
      const Divergence* in_wrong_call = nullptr;
      const Divergence* weak_in_wrong_call = nullptr;
      const Divergence* anywhere = nullptr;
      for (const auto& [time, d] : found_) {
        const bool agreeing = InAgreeingCall(d);
        if (!agreeing && weak_in_wrong_call == nullptr) weak_in_wrong_call = &d;
        if (d.confidence < options_.earliest_min_confidence) continue;
        if (anywhere == nullptr) anywhere = &d;
        if (!agreeing) {
          in_wrong_call = &d;
          break;
        }
      }
      if (in_wrong_call == nullptr) in_wrong_call = weak_in_wrong_call;
      if (in_wrong_call != nullptr) {
        report_->earliest = *in_wrong_call;
        if (anywhere != in_wrong_call) {
          report_->earliest->evidence +=
              "; earlier differences lie in calls that returned the reference's value";
        }
      } else if (anywhere != nullptr) {
        report_->earliest = *anywhere;
      }
      report_->last = found_.back().second;
    }
    Alignment& a = report_->alignment;
    a.candidate_truncated = cs_.truncated;
    a.reference_truncated = rs_.truncated;
    for (StepRec& s : cs_.steps) a.candidate_steps.push_back(std::move(s.step));
    for (StepRec& s : rs_.steps) a.reference_steps.push_back(std::move(s.step));
    // Executed boundaries: distinct candidate block spans in source order.
    std::map<uint32_t, SourceSpan> spans;
    for (const Step& s : a.candidate_steps) {
      if (s.block >= 0 && !s.block_span.empty())
        spans.emplace(s.block_span.begin_byte, s.block_span);
    }
    for (const auto& [b, s] : spans) report_->executed_boundaries.push_back(s);
    if (!report_->executed_boundaries.empty()) {
      uint64_t h = options_.random_seed;
      for (char c : cand_.source()) h = SplitMix64(h ^ static_cast<unsigned char>(c));
      report_->random_boundary =
          report_->executed_boundaries[SplitMix64(h) % report_->executed_boundaries.size()];
    }
    if (!report_->earliest) {
      if (a.candidate_steps.empty()) {
        report_->note = "the candidate trace holds no executed step";
      } else if (cs_.truncated || rs_.truncated) {
        report_->note = "no divergence within the traced prefix (trace truncated)";
      } else {
        report_->note = "the executions agree on every aligned step";
      }
    }
  }

 private:
  // Per candidate root call: it returned a value (not None) equal to the one the
  // reference's call of the same function and rank returned. What happened inside such a
  // call is a difference in how, not in what: a test saw the right answer there.
  std::vector<bool> RootsThatAgree() const {
    std::vector<bool> out(cs_.roots.size(), false);
    for (size_t k = 0; k < cs_.roots.size(); ++k) {
      const RootCall& c = cs_.roots[k];
      if (!c.returned || c.text == "None") continue;
      const int32_t rr = ReferenceRoot(static_cast<int32_t>(k));
      if (rr < 0) continue;
      const RootCall& r = rs_.roots[rr];
      out[k] = r.returned && r.hash == c.hash && r.text == c.text;
    }
    return out;
  }
  // A control divergence inside a loop both programs have (paired headers), where the two
  // loops leave their frame's variables alike: the loops ran another number of times (a
  // search bounded by sqrt(i) against one bounded by i, an early `break` against none) to
  // the same effect. The rest of both loops becomes gaps and the walk goes on after them;
  // the variables the loops' own `for` headers bind are not compared (they count the
  // iterations). The innermost such loop around the last aligned pair is tried, then the
  // loops around it. Not when either frame ends inside the loop (a `return` from it).
  bool SkipAgreeingLoop(size_t* i, size_t* j) {
    const int32_t a = last_aligned_candidate_, b = last_aligned_reference_;
    if (a < 0 || b < 0) return false;
    const StepRec& ca = cs_.steps[a];
    const StepRec& rb = rs_.steps[b];
    const int32_t scope = ca.step.scope, rscope = rb.step.scope;
    if (scope < 0 || rscope < 0 || sm_.scope_to_ref[scope] != rscope) return false;
    const std::vector<LoopExtent>& cloops = Extents(cand_, scope, &cand_loops_);
    const std::vector<LoopExtent>& rloops = Extents(ref_, rscope, &ref_loops_);
    // Candidate loops around the last aligned step, innermost (latest header) first.
    std::vector<const LoopExtent*> around;
    for (const LoopExtent& e : cloops) {
      if (e.Contains(ca.step.block_span)) around.push_back(&e);
    }
    std::sort(around.begin(), around.end(),
              [](const LoopExtent* x, const LoopExtent* y) { return x->begin > y->begin; });
    for (const LoopExtent* cl : around) {
      auto rblock = sm_.RefBlock(scope, cl->block);
      if (!rblock) continue;
      const LoopExtent* rl = nullptr;
      for (const LoopExtent& e : rloops) {
        if (e.block == *rblock) rl = &e;
      }
      if (rl == nullptr || !rl->Contains(rb.step.block_span)) continue;
      // Each side's first step of the frame after the loop, and its last step in it.
      auto exit_of = [](const StepStream& st, size_t from, int32_t last, const LoopExtent& e,
                        size_t* exit, int32_t* inside) {
        const int32_t frame = st.steps[last].step.frame;
        const int32_t depth = st.steps[last].step.depth;
        *inside = last;
        for (size_t k = from; k < st.steps.size(); ++k) {
          const Step& s = st.steps[k].step;
          if (s.depth < depth) return false;  // the frame ended inside the loop
          // A new frame as deep as ours starts only after ours ended (the next call the
          // tests make): stop there rather than scan the rest of the trace.
          if (s.frame != frame && s.depth == depth && st.steps[k].first_of_frame) return false;
          if (s.frame != frame) continue;
          if (!e.Contains(s.block_span)) {
            *exit = k;
            return true;
          }
          *inside = static_cast<int32_t>(k);
        }
        return false;
      };
      size_t ce = 0, re = 0;
      int32_t cin = a, rin = b;
      if (!exit_of(cs_, *i, a, *cl, &ce, &cin) || !exit_of(rs_, *j, b, *rl, &re, &rin)) {
        continue;
      }
      if (cs_.steps[cin].step.returned || rs_.steps[rin].step.returned) continue;
      if (cs_.steps[ce].step.depth != ca.step.depth || rs_.steps[re].step.depth != rb.step.depth) {
        continue;
      }
      // The names the loops' headers (this loop's and those inside it) bind.
      std::set<std::string> counters;
      for (const auto& [block, targets] : Targets(cand_, scope, &cand_targets_)) {
        const cfg::FunctionCfg& f = cand_.cfg().scopes()[scope];
        if (!cl->Contains(f.block(static_cast<cfg::BlockId>(block)).span)) continue;
        counters.insert(targets.begin(), targets.end());
      }
      std::set<std::string> ref_counters;
      for (const auto& [block, targets] : Targets(ref_, rscope, &ref_targets_)) {
        const cfg::FunctionCfg& f = ref_.cfg().scopes()[rscope];
        if (!rl->Contains(f.block(static_cast<cfg::BlockId>(block)).span)) continue;
        ref_counters.insert(targets.begin(), targets.end());
      }
      const std::map<std::string, std::string>& vm = vars_[scope];
      const StepRec& cs = cs_.steps[cin];
      const StepRec& rs = rs_.steps[rin];
      if (cs.incomplete || rs.incomplete) continue;
      bool alike = true;
      for (const auto& [n, rn] : vm) {
        if (counters.count(n) || ref_counters.count(rn)) continue;
        if (reused_.count({cs.step.frame, n})) continue;
        const Value* cv = FindValue(cs.state, n);
        const Value* rv = FindValue(rs.state, rn);
        if (!cv || !rv || cv->hash == rv->hash) continue;
        if (SameCollectionOtherType(*cv->text, *rv->text)) continue;
        alike = false;
        break;
      }
      // Every variable the skipped steps of the frame change must have been compared (a
      // candidate accumulator with no reference counterpart could hold the fault).
      std::set<std::string> mapped_ref;
      for (const auto& [n, rn] : vm) mapped_ref.insert(rn);
      for (size_t k = *i; alike && k < ce; ++k) {
        if (cs_.steps[k].step.frame != cs.step.frame) continue;
        for (const Change& ch : cs_.steps[k].changes) {
          if (!vm.count(ch.name) && !counters.count(ch.name)) alike = false;
        }
      }
      for (size_t k = *j; alike && k < re; ++k) {
        if (rs_.steps[k].step.frame != rs.step.frame) continue;
        for (const Change& ch : rs_.steps[k].changes) {
          if (!mapped_ref.count(ch.name) && !ref_counters.count(ch.name)) alike = false;
        }
      }
      if (!alike) continue;
      if (ce == *i && re == *j) return false;
      PushGaps(true, i, ce);
      PushGaps(false, j, re);
      // What decided to leave the loop: the last step each side ran in it.
      last_aligned_candidate_ = cin;
      last_aligned_reference_ = rin;
      return true;
    }
    return false;
  }
  // A variable candidate step `c` assigned from `n` (its statement reads `n`) that has no
  // reference counterpart; "" when none.
  std::string OwnNameFor(const StepRec& c, const std::string& n,
                         const std::map<std::string, std::string>& vm) const {
    for (const Change& ch : c.changes) {
      if (ch.name == n || vm.count(ch.name)) continue;
      const std::string t = CompactText(ch.span);
      const size_t eq = t.find('=');
      if (eq == std::string::npos) continue;
      const std::string rhs = t.substr(eq + 1);
      for (size_t at = rhs.find(n); at != std::string::npos; at = rhs.find(n, at + 1)) {
        const bool before = at == 0 || !IsIdentChar(rhs[at - 1]);
        const bool after = at + n.size() >= rhs.size() || !IsIdentChar(rhs[at + n.size()]);
        if (before && after) return ch.name;
      }
    }
    return "";
  }
  static bool HasChange(const StepRec& s, const std::string& n) {
    for (const Change& ch : s.changes) {
      if (ch.name == n) return true;
    }
    return false;
  }
  // Whether candidate block `block` of `scope` is a `for` header binding `n`.
  bool IsLoopTarget(int32_t scope, int32_t block, const std::string& n) {
    if (scope < 0) return false;
    const auto& targets = Targets(cand_, scope, &cand_targets_);
    auto b = targets.find(block);
    return b != targets.end() && std::find(b->second.begin(), b->second.end(), n) != b->second.end();
  }
  // LoopTargets of a scope, computed once per side.
  using TargetMap = std::map<int32_t, std::vector<std::string>>;
  const TargetMap& Targets(const PreparedProgram& p, int32_t scope,
                           std::map<int32_t, TargetMap>* cache) {
    auto it = cache->find(scope);
    if (it == cache->end()) it = cache->emplace(scope, LoopTargets(p, scope)).first;
    return it->second;
  }
  const std::vector<LoopExtent>& Extents(const PreparedProgram& p, int32_t scope,
                                         std::map<int32_t, std::vector<LoopExtent>>* cache) {
    auto it = cache->find(scope);
    if (it == cache->end()) it = cache->emplace(scope, LoopExtents(p, scope)).first;
    return it->second;
  }

  // After a control divergence inside a call the tests made whose outcome equals the
  // reference's (RootsThatAgree): the rest of that call on both sides becomes gaps, and the
  // walk goes on at the next call, never aligning one call's steps with another's.
  bool SkipAgreeingCall(size_t* i, size_t* j) {
    const int32_t at = last_aligned_candidate_ >= 0 ? last_aligned_candidate_
                                                    : static_cast<int32_t>(*i);
    if (at < 0 || at >= static_cast<int32_t>(cs_.steps.size())) return false;
    const int32_t cr = cs_.steps[at].root;
    if (cr < 0 || cr >= static_cast<int32_t>(root_agrees_.size()) || !root_agrees_[cr]) {
      return false;
    }
    const int32_t rr = ReferenceRoot(cr);
    if (rr < 0) return false;
    const bool ref_in_call =
        (*j < rs_.steps.size() && rs_.steps[*j].root == rr) ||
        (last_aligned_reference_ >= 0 && rs_.steps[last_aligned_reference_].root == rr);
    if (!ref_in_call) return false;
    bool moved = false;
    auto mark = [&] {
      if (!moved && pending_marker_) report_->alignment.pairs.back().diverges = true;
      moved = true;
    };
    while (*i < cs_.steps.size() && cs_.steps[*i].root == cr) {
      Push(static_cast<int32_t>((*i)++), -1);
      mark();
    }
    while (*j < rs_.steps.size() && rs_.steps[*j].root == rr) {
      Push(-1, static_cast<int32_t>((*j)++));
      mark();
    }
    if (moved) pending_marker_ = false;
    return moved;
  }
  // Functions defined at the module's top level whose source text is the same in both
  // programs as the function the matching pairs them with: a helper the prompt gives,
  // copied unchanged. Its code cannot hold the fault. Not nested functions, lambdas or
  // comprehensions: the same text there reads the enclosing frame's variables, which may
  // differ (`[v * t for v in xs]` with another `t`).
  void IdenticalScopes() {
    identical_cand_.assign(cand_.cfg().scopes().size(), false);
    identical_ref_.assign(ref_.cfg().scopes().size(), false);
    auto text = [](const PreparedProgram& p, const SourceSpan& sp) {
      const std::string& src = p.source();
      if (!sp.valid() || sp.end_byte > src.size() || sp.begin_byte >= sp.end_byte) return std::string();
      return src.substr(sp.begin_byte, sp.end_byte - sp.begin_byte);
    };
    for (size_t c = 0; c < identical_cand_.size(); ++c) {
      const int32_t r = sm_.scope_to_ref[c];
      if (r < 0) continue;
      const cfg::FunctionCfg& cf = cand_.cfg().scopes()[c];
      const cfg::FunctionCfg& rf = ref_.cfg().scopes()[r];
      if (cf.name == "<module>" || cf.name.empty() || cf.name[0] == '<' ||
          cf.qualified_name != cf.name) {
        continue;
      }
      const std::string ct = text(cand_, cf.span);
      if (!ct.empty() && ct == text(ref_, rf.span)) {
        identical_cand_[c] = true;
        identical_ref_[r] = true;
      }
    }
  }
  // A frame of an identical scope (IdenticalScopes) called from traced code: its steps and
  // its callees' become gaps. What it was asked (its arguments) is the caller's doing and
  // shows in what the caller does with the answer; the answer itself is right for the
  // question.
  bool SkipIdenticalCallee(const StepStream& st, size_t* k, bool candidate) {
    const StepRec& s = st.steps[*k];
    if (!s.first_of_frame || s.caller_step < 0 || s.root_ordinal >= 0 || s.step.scope < 0) {
      return false;
    }
    const std::vector<bool>& same = candidate ? identical_cand_ : identical_ref_;
    if (s.step.scope >= static_cast<int32_t>(same.size()) || !same[s.step.scope]) return false;
    const int32_t depth = s.step.depth;
    size_t end = *k;
    while (end < st.steps.size() && (end == *k || st.steps[end].step.depth > depth ||
                                     (st.steps[end].step.depth == depth &&
                                      st.steps[end].step.frame == s.step.frame))) {
      ++end;
    }
    PushGaps(candidate, k, end);
    return true;
  }

  // The reference's root call of the same function and rank as candidate root `cr`.
  int32_t ReferenceRoot(int32_t cr) const {
    const RootCall& c = cs_.roots[cr];
    if (c.scope < 0 || c.scope >= static_cast<int32_t>(sm_.scope_to_ref.size())) return -1;
    const int32_t rscope = sm_.scope_to_ref[c.scope];
    if (rscope < 0) return -1;
    for (size_t k = 0; k < rs_.roots.size(); ++k) {
      if (rs_.roots[k].scope == rscope && rs_.roots[k].ordinal == c.ordinal) {
        return static_cast<int32_t>(k);
      }
    }
    return -1;
  }
  bool InAgreeingCall(const Divergence& d) const {
    if (d.candidate_step < 0 || d.candidate_step >= static_cast<int32_t>(cs_.steps.size())) {
      return false;
    }
    const int32_t root = cs_.steps[d.candidate_step].root;
    return root >= 0 && root < static_cast<int32_t>(root_agrees_.size()) && root_agrees_[root];
  }

  bool CandidateMatched(size_t i) const {
    const Step& s = cs_.steps[i].step;
    return sm_.RefBlock(s.scope, s.block).has_value();
  }
  bool ReferenceMatched(size_t j) const {
    const Step& s = rs_.steps[j].step;
    return sm_.RefHasCounterpart(s.scope, s.block);
  }
  bool Corresponds(size_t i, size_t j) const {
    const Step& c = cs_.steps[i].step;
    const Step& r = rs_.steps[j].step;
    if (c.scope < 0 || sm_.scope_to_ref[c.scope] != r.scope) return false;
    auto rb = sm_.RefBlock(c.scope, c.block);
    if (!rb || *rb != r.block) return false;
    const int32_t co = cs_.steps[i].root_ordinal, ro = rs_.steps[j].root_ordinal;
    if ((co >= 0 || ro >= 0) && co != ro) return false;
    auto it = frame_map_.find(c.frame);
    if (it != frame_map_.end() && it->second != r.frame) return false;
    auto rit = ref_frame_map_.find(r.frame);
    if (rit != ref_frame_map_.end() && rit->second != c.frame) return false;
    return true;
  }

  // If step *k of `st` opens a new frame called from the frame aligned last on that side,
  // while the other side's next step (other_next) opens none, pushes the callee's steps (and its own
  // callees') as gaps and advances *k past them. The callee's changes are not carried:
  // they are its own frame's.
  bool SkipExtraCall(const StepStream& st, size_t* k, bool candidate, size_t other_next) {
    const StepStream& other = candidate ? rs_ : cs_;
    const StepRec& s = st.steps[*k];
    if (!s.first_of_frame || s.root_ordinal >= 0 || s.caller_step < 0) return false;
    const int32_t last = candidate ? last_aligned_candidate_ : last_aligned_reference_;
    if (last < 0 || st.steps[s.caller_step].step.frame != st.steps[last].step.frame) return false;
    if (other_next < other.steps.size() && other.steps[other_next].first_of_frame) return false;
    const int32_t depth = s.step.depth;
    size_t end = *k;
    while (end < st.steps.size() && st.steps[end].step.depth >= depth) ++end;
    PushGaps(candidate, k, end);
    return true;
  }

  // One side's frame (the one aligned last) returned through blocks with no counterpart (an
  // extra check before its return, a return written elsewhere) while the other side's frame
  // goes on to its own return: when both return the same value, the rest of the longer frame
  // (with its callees) becomes gaps instead of a control divergence. A different value is
  // left to the control divergence.
  bool SkipFrameEndedAlike(size_t* i, size_t* j) {
    if (last_aligned_candidate_ < 0 || last_aligned_reference_ < 0) return false;
    const int32_t cf = cs_.steps[last_aligned_candidate_].step.frame;
    const int32_t rf = rs_.steps[last_aligned_reference_].step.frame;
    const bool cand_ended = !FrameHasStepFrom(cs_, *i, cf);
    const bool ref_ended = !FrameHasStepFrom(rs_, *j, rf);
    if (cand_ended == ref_ended) return false;
    const StepStream& ended = cand_ended ? cs_ : rs_;
    const StepStream& going = cand_ended ? rs_ : cs_;
    const size_t ended_next = cand_ended ? *i : *j;
    size_t* going_next = cand_ended ? j : i;
    const int32_t ef = cand_ended ? cf : rf, gf = cand_ended ? rf : cf;
    // The ended frame's returned value: its last step before the other side moved on.
    const StepRec* last = nullptr;
    for (size_t k = ended_next; k-- > 0;) {
      if (ended.steps[k].step.frame == ef) {
        last = &ended.steps[k];
        break;
      }
    }
    if (last == nullptr || !last->step.returned) return false;
    // Blocks the ended frame executed, as the going side's blocks: the going frame's rest
    // must hold none of them (a loop the ended side cut short goes on there).
    std::set<int32_t> ended_blocks;
    for (size_t k = 0; k < ended_next; ++k) {
      const Step& st = ended.steps[k].step;
      if (st.frame != ef) continue;
      if (cand_ended) {
        if (auto rb = sm_.RefBlock(st.scope, st.block)) ended_blocks.insert(*rb);
      } else {
        ended_blocks.insert(st.block);
      }
    }
    // The going frame's steps up to its return (its callees' steps included).
    const int32_t depth = going
                              .steps[static_cast<size_t>(cand_ended ? last_aligned_reference_
                                                                    : last_aligned_candidate_)]
                              .step.depth;
    size_t end = *going_next;
    bool returned = false;
    for (; end < going.steps.size() && !returned; ++end) {
      const StepRec& s = going.steps[end];
      if (s.step.frame == gf) {
        std::optional<int32_t> as_going = s.step.block;
        if (!cand_ended) as_going = sm_.RefBlock(s.step.scope, s.step.block);
        if (as_going && ended_blocks.count(*as_going)) return false;
        if (s.step.returned) {
          if (s.return_hash != last->return_hash) return false;
          returned = true;
        }
      } else if (s.step.depth <= depth) {
        return false;
      }
    }
    if (!returned) return false;
    PushGaps(/*candidate=*/!cand_ended, going_next, end);
    return true;
  }

  // Whether `st` has a step of frame `frame` at index `from` or later.
  static bool FrameHasStepFrom(const StepStream& st, size_t from, int32_t frame) {
    for (size_t k = from; k < st.steps.size(); ++k) {
      if (st.steps[k].step.frame == frame) return true;
    }
    return false;
  }

  // A step with no counterpart (a block only one program has) may change variables: the
  // next aligned pair of the same frame compares them too.
  static void CarryGap(const StepRec& s, std::map<int32_t, std::set<std::string>>* carried) {
    for (const auto& [n, sp] : s.changed) (*carried)[s.step.frame].insert(n);
  }

  void Push(int32_t c, int32_t r) { report_->alignment.pairs.push_back({c, r, false}); }
  // Steps [*k, end) of one side become gaps; *k moves to end.
  void PushGaps(bool candidate, size_t* k, size_t end) {
    for (; *k < end; ++*k) {
      if (candidate) {
        Push(static_cast<int32_t>(*k), -1);
      } else {
        Push(-1, static_cast<int32_t>(*k));
      }
    }
  }

  void AlignPair(size_t i, size_t j) {
    const StepRec& c = cs_.steps[i];
    const StepRec& r = rs_.steps[j];
    frame_map_[c.step.frame] = r.step.frame;
    ref_frame_map_[r.step.frame] = c.step.frame;
    Push(static_cast<int32_t>(i), static_cast<int32_t>(j));
    last_aligned_candidate_ = static_cast<int32_t>(i);
    last_aligned_reference_ = static_cast<int32_t>(j);

    const std::map<std::string, std::string>& vm = vars_[c.step.scope];
    std::map<std::string, std::string> inverse;
    for (const auto& [cn, rn] : vm) inverse[rn] = cn;
    // Which candidate names to compare: changed on either side; all at a frame's start.
    std::vector<std::string> names;
    auto add = [&](const std::string& n) {
      if (vm.count(n) && std::find(names.begin(), names.end(), n) == names.end())
        names.push_back(n);
    };
    if (c.first_of_frame || r.first_of_frame) {
      for (const auto& [n, v] : c.state) add(n);
    }
    for (const auto& [n, sp] : c.changed) add(n);
    for (const auto& [n, sp] : r.changed) {
      auto it = inverse.find(n);
      if (it != inverse.end()) add(it->second);
    }
    for (const std::string& n : carried_candidate_[c.step.frame]) add(n);
    for (const std::string& n : carried_reference_[r.step.frame]) {
      auto it = inverse.find(n);
      if (it != inverse.end()) add(it->second);
    }
    carried_candidate_.erase(c.step.frame);
    carried_reference_.erase(r.step.frame);
    // A step cut by the end of a bounded trace has no final state to compare.
    if (c.incomplete || r.incomplete) names.clear();
    Divergence d;
    bool value_diverged = false;
    // The blamed variable: the one whose difference became observable first.
    int64_t value_time = std::numeric_limits<int64_t>::max();
    double value_confidence = 0;
    for (const std::string& name : names) {
      std::string n = name;  // may become the candidate's own name for a reused one (below)
      const std::string& rn = vm.at(n);
      const Value* cv = FindValue(c.state, n);
      const Value* rv = FindValue(r.state, rn);
      auto key = std::make_pair(c.step.frame, n);
      if (!cv || !rv) continue;  // bound on one side only: not comparable here
      if (reused_.count(key)) continue;
      // A `for` header's target where one side took the next item and the other found the
      // iterable exhausted: that is a difference of control (SkipAgreeingLoop judges it),
      // not of the value.
      if (IsLoopTarget(c.step.scope, c.step.block, n) &&
          HasChange(c, n) != HasChange(r, rn)) {
        continue;
      }
      if (cv->hash == rv->hash) {
        differing_.erase(key);
        continue;
      }
      bool reference_assigned = false, reference_rebound = false;
      for (const Change& ch : r.changes) {
        if (ch.name != rn) continue;
        reference_assigned = true;
        reference_rebound = reference_rebound || Rebinds(CompactText(ch.span, true), rn);
      }
      // A name the reference binds to another value and the candidate never assigned (a
      // parameter, `s = ''.join(...)` in the reference only): the candidate's name still holds
      // what it was given, the reference's now means something else; they are not compared
      // again in this frame. A fault shows where the candidate uses its own values. (Not a
      // mutation, `l[::3] = ...`: that changes the value both programs were given.)
      if (reference_rebound && !AssignedInBody(i + 1, c.step.frame, n)) {
        reused_.insert(key);
        // The candidate's own name for the reference's new value, when this step made one
        // from the same input (`sorted_lst = sorted(lst)` against `lst = sorted(set(lst))`):
        // compared in its place, once.
        const std::string own = OwnNameFor(c, n, vm);
        if (own.empty()) continue;
        n = own;
        key = std::make_pair(c.step.frame, n);
        cv = FindValue(c.state, n);
        if (!cv || cv->hash == rv->hash) continue;
      }
      // Two representations of one collection (vowels as a string and as a set of the same
      // letters): not a difference; a fault shows where the value is used.
      if (SameCollectionOtherType(*cv->text, *rv->text)) continue;
      if (!differing_.insert(key).second) continue;  // already known to differ
      VariableDiff diff{n, rn, *cv->text, *rv->text};
      const Change* blamed = FirstDifferingChange(c, n, r, rn, rv->hash);
      int64_t time = blamed ? blamed->event : c.close_event;
      // Assigned in neither step (compared because it was carried from a step with no
      // counterpart, or at a frame's start): the statement that made the value the
      // candidate holds, its frame's latest assignment of it; the difference is still
      // observed here. When the reference assigned its counterpart here and the candidate
      // did not, the step is to blame (an assignment it skipped), as before.
      if (blamed == nullptr && !reference_assigned) {
        blamed = LastChangeBefore(i, c.step.frame, n);
      }
      auto conf = var_confidence_[c.step.scope].find(n);
      double confidence = conf != var_confidence_[c.step.scope].end() ? conf->second : 0.5;
      // Two kinds of collection sharing few elements (a date split into a list of fields
      // against the date string): more likely two representations than a fault; a fault in
      // either shows where it is used. Not a list of vowels against a string of them with
      // the capitals: the missing capitals may be the fault (or the candidate lowers the
      // word instead: the values alone cannot tell).
      const bool kinds_differ = OtherKindOtherElements(*cv->text, *rv->text);
      if (kinds_differ) confidence = std::min(confidence, kLoopRepresentationConfidence);
      // The step's blamed variable: the first to differ, a trusted difference before one
      // below earliest_min_confidence.
      const double floor = options_.earliest_min_confidence;
      const bool better =
          !value_diverged ||
          ((confidence >= floor) == (value_confidence >= floor) ? time < value_time
                                                                : confidence >= floor);
      if (better) {
        value_diverged = true;
        value_time = time;
        d.span = blamed && blamed->span.valid() ? blamed->span : c.step.block_span;
        value_confidence = confidence;
        d.evidence = "value of " + n + (n == rn ? "" : " (paired with the reference's " + rn + ")") +
                     " differs after the assignment";
        if (kinds_differ) {
          d.evidence += " (another kind of collection with other elements: perhaps another representation)";
        }
        d.variables.insert(d.variables.begin(), std::move(diff));
      } else {
        d.variables.push_back(std::move(diff));
      }
    }
    bool return_diverged = c.step.returned && r.step.returned && c.return_hash != r.return_hash;
    bool exception_diverged = c.step.exception.empty() != r.step.exception.empty();
    if (!value_diverged && !return_diverged && !exception_diverged) return;
    d.kind = value_diverged    ? DivergenceKind::kValue
             : return_diverged ? DivergenceKind::kReturnValue
                               : DivergenceKind::kException;
    if (return_diverged) {
      d.variables.push_back({"<return>", "<return>", c.step.return_value, r.step.return_value});
    }
    if (!value_diverged) d.span = c.step.last_statement;
    if (return_diverged && !value_diverged) {
      // The returned value is the value of a candidate variable with no reference
      // counterpart (never compared): the statement that made that value is blamed (a
      // wrong initialization `hits = 1` returned unchanged), not the `return`.
      // Only where the statement returns that variable itself: `return pos + 1` may equal
      // a counter's value by chance.
      const std::string returned = ReturnedName(c.step.last_statement);
      for (const auto& [n, v] : c.state) {
        if (v.hash != c.return_hash || vm.count(n) || n != returned) continue;
        if (BlameBuiltList(i, c.step.frame, n, c.step.return_value, r.step.return_value, &d)) {
          break;
        }
        if (BlameGuardedCount(i, c.step.frame, n, &d)) break;
        if (BlameNeverAccumulated(i, c.step.frame, c.step.scope, n, &d)) break;
        if (const Change* made = LastChangeBefore(i + 1, c.step.frame, n);
            made && made->span.valid()) {
          d.span = made->span;
          d.evidence = "returns the value of " + n +
                       " (no reference counterpart), made by this statement";
        }
        break;
      }
      // A constant returned where the reference computes its value (an early `return '',
      // False` the reference does not have): wrong only by being reached, so the decision
      // that reached it is blamed, as for a control divergence.
      // Not where the reference's return is reached by a decision too (`if n < 2: return
      // 1` against `if n < 2: return n`): there the constant itself is suspect.
      if (d.span == c.step.last_statement && ReturnsConstant(c.step.last_statement) &&
          !ReturnsConstant(r.step.last_statement, true) &&
          DecisionBefore(j, r.step.frame, /*reference=*/true) == nullptr) {
        if (const SourceSpan* decision = DecisionBefore(i, c.step.frame)) {
          d.span = *decision;
          d.evidence = "returns a constant where the reference computes its value, reached by "
                       "this decision";
        }
      }
    }
    d.candidate_step = static_cast<int32_t>(i);
    d.reference_step = static_cast<int32_t>(j);
    if (d.kind == DivergenceKind::kValue) {
      d.detail = "value of " + d.variables.front().candidate_name + " differs after the step";
      d.confidence = value_confidence;
    } else if (d.kind == DivergenceKind::kReturnValue) {
      d.detail = "returns " + c.step.return_value + ", reference returns " + r.step.return_value;
      // Where the wrong value became visible; it may have been made earlier.
      d.confidence = 0.5;
      if (d.evidence.empty()) {
        d.evidence = c.root_ordinal >= 0 ? "the value returned to the tests differs"
                                          : "the value returned to the caller differs";
      }
    } else {
      d.confidence = 0.7;
      d.evidence = "one side raises, the other does not";
      d.detail = c.step.exception.empty() ? "reference raises " + r.step.exception
                                          : "candidate raises " + c.step.exception;
    }
    // A value difference is observable once the statement that made it has run: a later
    // callee of the same step (a comprehension using the value) must not come first.
    Diverge(std::move(d), value_diverged ? std::min(value_time, c.close_event) : c.close_event);
  }

  // The candidate's text at `span` without its whitespace ("" for an empty or bad span).
  std::string CompactText(const SourceSpan& span, bool reference = false) const {
    const std::string& src = reference ? ref_.source() : cand_.source();
    std::string t;
    if (!span.valid() || span.end_byte > src.size() || span.begin_byte >= span.end_byte) return t;
    for (size_t b = span.begin_byte; b < span.end_byte; ++b) {
      if (!std::isspace(static_cast<unsigned char>(src[b]))) t += src[b];
    }
    return t;
  }

  // Whether a statement's compact text (CompactText) binds `name` itself, as the target of
  // `name = ...`, `name, other = ...` or `other, name = ...` (not `name[k] = ...`,
  // `name += ...` or `name == ...`).
  static bool Rebinds(const std::string& t, const std::string& name) {
    const size_t eq = t.find('=');
    if (eq == std::string::npos || eq + 1 >= t.size() || t[eq + 1] == '=' || eq == 0) return false;
    if (std::string("+-*/%&|^<>!:@").find(t[eq - 1]) != std::string::npos) return false;
    for (const std::string& target : SplitTopLevel(t.substr(0, eq), ',')) {
      if (target == name) return true;
    }
    return false;
  }

  // Whether a statement returns a literal: `return`, `return True`, `return -1`,
  // `return ''`, `return []`, `return None`, or a tuple of them (`return '', False`).
  // A candidate statement, or the reference's with `reference`.
  bool ReturnsConstant(const SourceSpan& span, bool reference = false) const {
    const std::string t = CompactText(span, reference);
    if (t.empty()) return false;
    if (t.compare(0, 6, "return") != 0) return false;
    std::string v = t.substr(6);
    if (v.empty()) return true;
    if (v.size() >= 2 && v[0] == '(' && v.back() == ')') v = v.substr(1, v.size() - 2);
    const std::vector<std::string> parts = SplitTopLevel(v, ',');
    if (parts.empty()) return false;
    for (const std::string& part : parts) {
      if (!part.empty() && !IsLiteral(part)) return false;
    }
    return true;
  }
  static bool IsLiteral(const std::string& v) {
    if (v.empty()) return false;
    if (v == "True" || v == "False" || v == "None" || v == "[]" || v == "()" || v == "{}" ||
        v == "''" || v == "\"\"") {
      return true;
    }
    size_t b = (v[0] == '-' || v[0] == '+') ? 1 : 0;
    if (b < v.size() && std::all_of(v.begin() + static_cast<std::ptrdiff_t>(b), v.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '.';
        })) {
      return true;
    }
    // A string literal without concatenation: one quoted token.
    return v.size() >= 2 && (v[0] == '\'' || v[0] == '"') && v.back() == v[0] &&
           v.find(v[0], 1) == v.size() - 1;
  }

  // The variable a `return NAME` (or `yield NAME`) statement of the candidate returns, or ""
  // when it returns an expression.
  std::string ReturnedName(const SourceSpan& span) const {
    const std::string& src = cand_.source();
    if (!span.valid() || span.end_byte > src.size() || span.begin_byte >= span.end_byte) return "";
    std::string text = src.substr(span.begin_byte, span.end_byte - span.begin_byte);
    for (const char* kw : {"return", "yield"}) {
      size_t n = std::strlen(kw);
      if (text.compare(0, n, kw) != 0 || text.size() <= n || IsIdentChar(text[n])) continue;
      size_t b = n;
      while (b < text.size() && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
      size_t e = b;
      while (e < text.size() && IsIdentChar(text[e])) ++e;
      size_t rest = e;
      while (rest < text.size() && std::isspace(static_cast<unsigned char>(text[rest]))) ++rest;
      if (e > b && IsIdentStart(text[b]) && rest == text.size()) return text.substr(b, e - b);
    }
    return "";
  }

  // A returned list the candidate built element by element (`out.append(x)` in a loop)
  // where the reference returns its value from one expression: the first assignment of
  // `n` after which its elements stop being a prefix of the reference's returned list made
  // the first wrong element. An element there that the reference has elsewhere (one too
  // many, one missing) was added or skipped by a decision: the candidate's decision just
  // before that assignment is blamed. A wrong element added as a variable's value
  // (`out.append(stones)`) is blamed on that variable's assignment; any other wrong
  // element on the statement that added it. False (nothing changed) when the values are
  // not both lists or no such assignment is found.
  bool BlameBuiltList(size_t i, int32_t frame, const std::string& n, const std::string& cand_value,
                      const std::string& ref_value, Divergence* d) const {
    ListView want, fin;
    if (!ParseList(ref_value, &want) || !ParseList(cand_value, &fin)) return false;
    const std::vector<std::string>& ws = want.shown;
    const std::vector<std::string>& fs = fin.shown;
    // The first wrong place of the returned list, and what it is: elements too many (the
    // rest follows the reference one place later), one missing, or a wrong value.
    size_t first = 0;
    while (first < fs.size() && first < ws.size() && fs[first] == ws[first]) ++first;
    if (first == fs.size() && fin.complete()) return false;  // a prefix: it stopped early
    if (first == fs.size() || (first == ws.size() && !want.complete())) return false;  // unseen
    // Only where the lengths say so: a wrong step of an arithmetic series also puts the
    // reference's next value one place later.
    const bool extra = fin.length > want.length &&
                       (first >= want.length ||
                        (first + 1 < fs.size() && first < ws.size() && fs[first + 1] == ws[first]));
    const bool missing = fin.length < want.length && first + 1 < ws.size() && fs[first] == ws[first + 1];
    for (size_t k = 0; k <= std::min(i, cs_.steps.size() - 1); ++k) {
      const StepRec& s = cs_.steps[k];
      if (s.step.frame != frame) continue;
      for (const Change& ch : s.changes) {
        if (ch.name != n || ch.text == nullptr) continue;
        ListView got;
        if (!ParseList(*ch.text, &got)) return false;
        size_t at = 0;
        while (at < got.shown.size() && at < ws.size() && got.shown[at] == ws[at]) ++at;
        if (at == got.shown.size()) {
          // Every element shown agrees: wrong only once it holds the first wrong place.
          if (got.length <= first) continue;
          at = first;
        }
        if (!ch.span.valid()) return false;
        if (at != first) return false;  // built otherwise (sorted or cut afterwards)
        if (extra || missing) {
          if (const SourceSpan* decision = DecisionBefore(k, frame)) {
            d->span = *decision;
            d->evidence = "returns " + n + " (no reference counterpart), whose element " +
                          std::to_string(at) + (extra ? " the reference does not have" :
                                                        " skips one the reference has") +
                          " was added after this decision";
            return true;
          }
          d->span = ch.span;
          d->evidence = "returns " + n + " (no reference counterpart), whose first wrong element "
                        "was added here";
          return true;
        }
        const std::string source = AddedName(ch.span);
        if (!source.empty() && source != n) {
          // The element is a variable's value: the statement that gave it that value.
          const Change* made = nullptr;
          for (size_t m = k + 1; m-- > 0 && made == nullptr;) {
            const StepRec& st = cs_.steps[m];
            if (st.step.frame != frame) continue;
            for (size_t q = st.changes.size(); q-- > 0;) {
              if (st.changes[q].name == source && st.changes[q].event <= ch.event) {
                made = &st.changes[q];
                break;
              }
            }
          }
          if (made != nullptr && made->span.valid()) {
            d->span = made->span;
            d->evidence = "returns " + n + " (no reference counterpart), whose first wrong "
                          "element is the value of " + source + " made here";
            return true;
          }
        }
        d->span = ch.span;
        d->evidence = "returns " + n + " (no reference counterpart), whose first wrong element "
                      "was added here";
        return true;
      }
    }
    return false;
  }

  // A returned count or sum the candidate accumulates under a condition (`if ok(x): total
  // += x`, `count += 1`) where the reference has no such variable: what it added is the
  // plain element or a constant, so which elements were counted went wrong, and the
  // condition deciding that is blamed rather than the accumulation.
  bool BlameGuardedCount(size_t i, int32_t frame, const std::string& n, Divergence* d) const {
    for (size_t k = std::min(i, cs_.steps.size() - 1) + 1; k-- > 0;) {
      const StepRec& s = cs_.steps[k];
      if (s.step.frame != frame) continue;
      const Change* made = nullptr;
      for (size_t q = s.changes.size(); q-- > 0;) {
        if (s.changes[q].name == n) {
          made = &s.changes[q];
          break;
        }
      }
      if (made == nullptr) continue;
      if (!PlainAccumulation(made->span, n)) return false;
      // Only an `if` / `elif` (a loop header before it is no condition on the elements).
      const SourceSpan* decision = DecisionBefore(k, frame);
      const std::string t = decision != nullptr ? CompactText(*decision) : "";
      if (t.rfind("if", 0) != 0 && t.rfind("elif", 0) != 0) return false;
      d->span = *decision;
      d->evidence = "returns " + n + " (no reference counterpart), accumulated under this "
                    "condition from plain elements: which ones it took differs";
      return true;
    }
    return false;
  }

  // The same count or sum when it never accumulated: its last assignment is not the
  // accumulation but a neutral start (`total = 0` returned as it was; not `hits = 1`,
  // which may be the fault itself) while the scope accumulates it under an
  // `if` (`if 10 <= x <= 99: total += x`) that ran in this frame and never let an element
  // through: that condition is blamed.
  bool BlameNeverAccumulated(size_t i, int32_t frame, int32_t scope, const std::string& n,
                             Divergence* d) const {
    if (scope < 0) return false;
    const Change* made = LastChangeBefore(i + 1, frame, n);
    if (made == nullptr || PlainAccumulation(made->span, n)) return false;
    // Only from a neutral start (`total = 0`): a count started at 1 is itself suspect.
    if (made->text == nullptr || (*made->text != "0" && *made->text != "0.0")) return false;
    const std::vector<const cfg::Statement*> all = ScopeStatements(cand_, scope);
    for (size_t a = 0; a < all.size(); ++a) {
      if (!PlainAccumulation(all[a]->span, n)) continue;
      // Its enclosing statement: the nearest earlier one indented less.
      const cfg::Statement* parent = nullptr;
      for (size_t b = a; b-- > 0;) {
        if (all[b]->span.begin.column < all[a]->span.begin.column) {
          parent = all[b];
          break;
        }
      }
      if (parent == nullptr || (parent->kind != cfg::StmtKind::kIf &&
                                parent->kind != cfg::StmtKind::kElif)) {
        continue;
      }
      // The condition ran in this frame after the value was made.
      for (size_t k = 0; k <= i && k < cs_.steps.size(); ++k) {
        const StepRec& s = cs_.steps[k];
        if (s.step.frame != frame || s.close_event < made->event) continue;
        if (s.step.last_statement == parent->span) {
          d->span = parent->span;
          d->evidence = "returns " + n + " (no reference counterpart) as it was made: the "
                        "condition under which it accumulates never let an element through";
          return true;
        }
      }
    }
    return false;
  }

  // `n += x`, `n += xs[i]`, `n += 1`, `n -= 1` (an element or a constant added as it is).
  bool PlainAccumulation(const SourceSpan& span, const std::string& n) const {
    const std::string t = CompactText(span);
    if (t.empty()) return false;
    if (t.compare(0, n.size(), n) != 0) return false;
    std::string rest = t.substr(n.size());
    if (rest.compare(0, 2, "+=") != 0 && rest.compare(0, 2, "-=") != 0) return false;
    rest = rest.substr(2);
    if (rest.empty()) return false;
    // An identifier, optionally subscripted once by an identifier or a literal; or a number.
    if (std::all_of(rest.begin(), rest.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
      return true;
    }
    size_t e = 0;
    if (!IsIdentStart(rest[0])) return false;
    while (e < rest.size() && IsIdentChar(rest[e])) ++e;
    if (e == rest.size()) return true;
    if (rest[e] != '[' || rest.back() != ']') return false;
    const std::string index = rest.substr(e + 1, rest.size() - e - 2);
    return !index.empty() && std::all_of(index.begin(), index.end(), IsIdentChar);
  }

  // A list's rendering: the elements shown and its length. The encoder shows a long list's
  // first elements only: `[1, 2, …](len=100)#1a2b3c4d`.
  struct ListView {
    std::vector<std::string> shown;
    size_t length = 0;
    bool complete() const { return shown.size() == length; }
  };
  static bool ParseList(const std::string& text, ListView* out) {
    out->shown.clear();
    if (text.size() < 2 || text.front() != '[') return false;
    std::string inner;
    size_t length = 0;
    bool cut = false;
    if (text.back() == ']') {
      inner = text.substr(1, text.size() - 2);
    } else {
      const size_t close = text.rfind("](len=");
      if (close == std::string::npos) return false;
      inner = text.substr(1, close - 1);
      length = std::strtoul(text.c_str() + close + 6, nullptr, 10);
      cut = true;
    }
    if (inner.find_first_not_of(' ') != std::string::npos) {
      for (const std::string& part : SplitTopLevel(inner, ',')) {
        size_t b = part.find_first_not_of(' ');
        size_t e = part.find_last_not_of(' ');
        out->shown.push_back(b == std::string::npos ? "" : part.substr(b, e - b + 1));
      }
    }
    const std::string ellipsis = "\xe2\x80\xa6";  // "…"
    if (cut) {
      if (out->shown.empty() || out->shown.back() != ellipsis) return false;
      out->shown.pop_back();
      if (length < out->shown.size()) return false;
    } else {
      for (const std::string& e : out->shown) {
        if (e.find(ellipsis) != std::string::npos) return false;  // an element cut short
      }
      length = out->shown.size();
    }
    out->length = length;
    return true;
  }

  // The decision that sent control to step `k` (the candidate's, or the reference's with
  // `reference`): the last statement of its frame's
  // previous step, when that statement is a decision (IsDecision); else null.
  const SourceSpan* DecisionBefore(size_t k, int32_t frame, bool reference = false) const {
    const StepStream& st = reference ? rs_ : cs_;
    for (size_t m = k; m-- > 0;) {
      const StepRec& prev = st.steps[m];
      if (prev.step.frame != frame) continue;
      return IsDecision(prev.step.last_statement, reference) ? &prev.step.last_statement : nullptr;
    }
    return nullptr;
  }

  // Whether the candidate statement at `span` decides where control goes (`if`, `elif`,
  // `while`, `for`).
  bool IsDecision(const SourceSpan& span, bool reference = false) const {
    const std::string& src = reference ? ref_.source() : cand_.source();
    if (!span.valid() || span.begin_byte >= src.size()) return false;
    for (const char* kw : {"if", "elif", "while", "for"}) {
      const size_t len = std::strlen(kw);
      if (src.compare(span.begin_byte, len, kw) == 0 && span.begin_byte + len < src.size() &&
          !IsIdentChar(src[span.begin_byte + len])) {
        return true;
      }
    }
    return false;
  }

  // The variable whose value a statement adds to a list: `out.append(NAME)`,
  // `out += [NAME]`; "" for anything else.
  std::string AddedName(const SourceSpan& span) const {
    const std::string t = CompactText(span);
    auto name_in = [&](size_t b, const std::string& close) -> std::string {
      if (t.size() < b + close.size() || t.compare(t.size() - close.size(), close.size(), close) != 0) {
        return "";
      }
      std::string nm = t.substr(b, t.size() - close.size() - b);
      if (nm.empty() || !IsIdentStart(nm[0])) return "";
      for (char c : nm) {
        if (!IsIdentChar(c)) return "";
      }
      return nm;
    };
    size_t k = t.find(".append(");
    if (k != std::string::npos) return name_in(k + 8, ")");
    k = t.find("+=[");
    if (k != std::string::npos) return name_in(k + 3, "]");
    return "";
  }

  // The latest assignment of `n` in candidate frame `frame` among the steps before `end`, or
  // null.
  // Whether the candidate's frame assigned `n` in one of its steps before `end` (the
  // arguments the call bound are not the body's assignments).
  bool AssignedInBody(size_t end, int32_t frame, const std::string& n) const {
    for (size_t k = std::min(end, cs_.steps.size()); k-- > 0;) {
      const StepRec& s = cs_.steps[k];
      if (s.step.frame != frame) continue;
      for (const Change& ch : s.changes) {
        if (ch.name != n) continue;
        if (s.first_of_frame && ch.event == s.step.first_event) continue;  // an argument
        return true;
      }
    }
    return false;
  }

  const Change* LastChangeBefore(size_t end, int32_t frame, const std::string& n) const {
    for (size_t k = std::min(end, cs_.steps.size()); k-- > 0;) {
      const StepRec& s = cs_.steps[k];
      if (s.step.frame != frame) continue;
      for (size_t m = s.changes.size(); m-- > 0;) {
        if (s.changes[m].name == n) return &s.changes[m];
      }
    }
    return nullptr;
  }

  // The statement of candidate step `c` after which `n` differs from reference step `r`'s
  // `rn`: the candidate's assignments of `n` in the step, in order, are matched against
  // the values the reference's `rn` takes in its step (in order; none: its final value
  // `ref_final`); the first assignment whose value the reference never takes at that point
  // is blamed, or the last one when they all agree and the reference changes it further.
  // Null when the step does not assign `n`.
  static const Change* FirstDifferingChange(const StepRec& c, const std::string& n,
                                            const StepRec& r, const std::string& rn,
                                            uint64_t ref_final) {
    std::vector<uint64_t> ref_values;
    for (const Change& ch : r.changes) {
      if (ch.name == rn) ref_values.push_back(ch.hash);
    }
    if (ref_values.empty()) ref_values.push_back(ref_final);
    const Change* last = nullptr;
    size_t next = 0;
    for (const Change& ch : c.changes) {
      if (ch.name != n) continue;
      last = &ch;
      auto it = std::find(ref_values.begin() + static_cast<std::ptrdiff_t>(next), ref_values.end(),
                          ch.hash);
      if (it == ref_values.end()) return &ch;
      next = static_cast<size_t>(it - ref_values.begin()) + 1;
    }
    return last;
  }

  // Control divergence between cand step i and ref step j: blamed on the last step both
  // executed alike (its last statement decided where control went).
  Divergence MakeControl(size_t i, size_t j) const {
    Divergence d;
    d.kind = DivergenceKind::kControl;
    int32_t blamed =
        last_aligned_candidate_ >= 0 ? last_aligned_candidate_ : static_cast<int32_t>(i);
    d.candidate_step = blamed;
    d.reference_step =
        last_aligned_candidate_ >= 0 ? last_aligned_reference_ : static_cast<int32_t>(j);
    const Step& c = cs_.steps[i].step;
    const Step& r = rs_.steps[j].step;
    d.span = cs_.steps[blamed].step.last_statement;
    // The candidate makes a call the reference does not make: the calling statement
    // decided it, not the callee's last step.
    const StepRec& next = cs_.steps[i];
    d.confidence = 0.8;
    d.evidence = "the next block differs: the decision made by the last statement both "
                 "executed alike";
    if (next.first_of_frame && next.caller_step >= 0 && next.call_site.valid() &&
        next.step.frame != cs_.steps[blamed].step.frame) {
      d.candidate_step = next.caller_step;
      d.span = next.call_site;
      d.evidence = "the candidate makes a call the reference does not make";
    } else if (const StepRec* helper = DecidingHelper(blamed, i)) {
      // The decision used the result of a candidate function the reference does not have
      // (a comparison moved into a helper): the value it returned decided, so the
      // statement that returned it is blamed.
      d.candidate_step = static_cast<int32_t>(helper - cs_.steps.data());
      d.span = helper->step.last_statement;
      d.confidence = 0.6;
      d.evidence = "the decision used the value " + helper->step.return_value + " returned by " +
                   helper->step.function + ", which the reference has no counterpart of";
    }
    d.detail = "candidate goes to " + c.function + ":" + std::to_string(c.first_line) +
               ", reference to " + r.function + ":" + std::to_string(r.first_line);
    return d;
  }

  // The step of an unmatched candidate function (no reference scope) that returned a value
  // to the blamed step's last statement, between the blamed step and the mismatching step
  // `next`: the decision's provenance when the condition calls a helper. The last such
  // step of a direct callee; null if none.
  const StepRec* DecidingHelper(int32_t blamed, size_t next) const {
    if (blamed < 0) return nullptr;
    const StepRec& b = cs_.steps[blamed];
    const StepRec* found = nullptr;
    for (size_t k = static_cast<size_t>(blamed) + 1; k < next && k < cs_.steps.size(); ++k) {
      const StepRec& s = cs_.steps[k];
      if (s.step.depth != b.step.depth + 1 || !s.step.returned) continue;
      if (s.step.scope >= 0 && sm_.scope_to_ref[s.step.scope] >= 0) continue;
      if (s.step.first_event < b.step.last_event) continue;  // called before the last statement
      found = &s;
    }
    return found;
  }

  Divergence MakeEnded(size_t i, bool candidate_longer) const {
    Divergence d;
    d.kind = DivergenceKind::kEnded;
    d.confidence = 0.3;
    d.evidence = "one execution ended while the other went on";
    int32_t blamed = last_aligned_candidate_ >= 0
                         ? last_aligned_candidate_
                         : static_cast<int32_t>(std::min(i, cs_.steps.size() - 1));
    if (cs_.steps.empty()) blamed = -1;
    d.candidate_step = blamed;
    d.reference_step = last_aligned_reference_;
    if (blamed >= 0) d.span = cs_.steps[blamed].step.last_statement;
    d.detail = candidate_longer ? "the reference execution ends here; the candidate continues"
                                : "the candidate execution ends here; the reference continues";
    return d;
  }

  // Records a divergence observable at candidate event `time`: value and return
  // differences are known when the step closes (after its callees), control ones when the
  // mismatching step starts; earliest/last are ordered by that time, not by pair index.
  void Diverge(Divergence d, int64_t time) {
    if (d.candidate_step < 0) return;
    const StepRec& s = cs_.steps[d.candidate_step];
    d.function = s.step.function;
    d.block_span = s.step.block_span;
    if (!d.span.valid()) d.span = s.step.block_span;
    d.line = d.span.begin.line;
    for (const auto& [n, v] : s.state) d.context.emplace_back(n, *v.text);
    if (d.kind == DivergenceKind::kOutput || found_after_walk_) {
      // Found after the walk: marked on the pair that holds the writer's (returner's) step.
      for (size_t k = 0; k < report_->alignment.pairs.size(); ++k) {
        if (report_->alignment.pairs[k].candidate == d.candidate_step) {
          d.pair = static_cast<int32_t>(k);
          report_->alignment.pairs[k].diverges = true;
          break;
        }
      }
      ++report_->divergence_count;
      found_.emplace_back(time, std::move(d));
      return;
    }
    d.pair = static_cast<int32_t>(report_->alignment.pairs.size()) - 1;
    if (d.kind == DivergenceKind::kControl || d.kind == DivergenceKind::kEnded) {
      d.pair = static_cast<int32_t>(report_->alignment.pairs.size());
    }
    if (d.pair >= 0 && d.pair < static_cast<int32_t>(report_->alignment.pairs.size())) {
      report_->alignment.pairs[d.pair].diverges = true;
    } else {
      pending_marker_ = true;
    }
    ++report_->divergence_count;
    found_.emplace_back(time, std::move(d));
  }

  // After a control divergence: the nearest (i+a, j+b), a+b minimal, where the two
  // executions correspond again; the skipped steps become gaps.
  bool Resync(size_t* i, size_t* j) {
    int32_t w = options_.resync_window;
    if (w <= 0) return false;
    const size_t nc = cs_.steps.size(), nr = rs_.steps.size();
    for (int32_t total = 1; total <= 2 * w; ++total) {
      for (int32_t a = 0; a <= total; ++a) {
        int32_t b = total - a;
        if (a > w || b > w) continue;
        size_t ci = *i + a, rj = *j + b;
        if (ci >= nc || rj >= nr) continue;
        if (!CandidateMatched(ci) || !ReferenceMatched(rj) || !Corresponds(ci, rj)) continue;
        bool first = true;
        for (size_t k = *i; k < ci; ++k) {
          Push(static_cast<int32_t>(k), -1);
          if (first && pending_marker_) report_->alignment.pairs.back().diverges = true;
          first = false;
        }
        for (size_t k = *j; k < rj; ++k) {
          Push(-1, static_cast<int32_t>(k));
          if (first && pending_marker_) report_->alignment.pairs.back().diverges = true;
          first = false;
        }
        pending_marker_ = false;
        *i = ci;
        *j = rj;
        return true;
      }
    }
    return false;
  }

  const PreparedProgram& cand_;
  const PreparedProgram& ref_;
  StepStream cs_, rs_;
  const DivergenceOptions& options_;
  DivergenceReport* report_;
  StructureMap sm_;
  VarMap vars_;
  VarConfidence var_confidence_;
  std::vector<bool> root_agrees_;  // per candidate root call (RootsThatAgree)
  std::vector<bool> identical_cand_, identical_ref_;  // per scope (IdenticalScopes)
  std::map<int32_t, int32_t> frame_map_, ref_frame_map_;
  std::set<std::pair<int32_t, std::string>> differing_;
  std::map<int32_t, std::vector<LoopExtent>> cand_loops_, ref_loops_;  // SkipAgreeingLoop
  std::map<int32_t, std::map<int32_t, std::vector<std::string>>> cand_targets_, ref_targets_;  // Targets
  // Candidate (frame, name)s the reference reused for another value (AlignPair).
  std::set<std::pair<int32_t, std::string>> reused_;
  int32_t last_aligned_candidate_ = -1;
  int32_t last_aligned_reference_ = -1;
  bool pending_marker_ = false;
  bool found_after_walk_ = false;  // Diverge: find the pair of the blamed step
  std::vector<std::pair<int64_t, Divergence>> found_;  // (candidate event, divergence)
  std::map<int32_t, std::set<std::string>> carried_candidate_, carried_reference_;  // by frame
};

}  // namespace

StatusOr<std::shared_ptr<const PreparedProgram>> PreparedProgram::Build(std::string source) {
  std::shared_ptr<PreparedProgram> p(new PreparedProgram());
  p->source_ = std::move(source);
  EGCA_ASSIGN_OR_RETURN(p->cfg_, cfg::ProgramCfg::Build(p->source_));
  if (!p->cfg_.parsed()) {
    const cfg::SyntaxError& e = *p->cfg_.syntax_error();
    return InvalidArgument("program does not parse at " + e.span.ToString() + ": " + e.message);
  }
  p->boundaries_ = cfg::ProgramBoundaries::Compute(p->cfg_);
  p->lines_ = std::make_unique<LineIndex>(p->source_);
  return std::shared_ptr<const PreparedProgram>(std::move(p));
}

const char* DivergenceKindName(DivergenceKind kind) {
  switch (kind) {
    case DivergenceKind::kValue:
      return "value";
    case DivergenceKind::kReturnValue:
      return "return";
    case DivergenceKind::kControl:
      return "control";
    case DivergenceKind::kException:
      return "exception";
    case DivergenceKind::kEnded:
      return "ended";
    case DivergenceKind::kOutput:
      return "output";
  }
  return "?";
}

DivergenceReport FindDivergence(const PreparedProgram& candidate,
                                const tracer::proto::Trace& candidate_trace,
                                const PreparedProgram& reference,
                                const tracer::proto::Trace& reference_trace,
                                const DivergenceOptions& options) {
  DivergenceReport report;
  Aligner aligner(candidate, reference, BuildSteps(candidate, candidate_trace),
                  BuildSteps(reference, reference_trace, options.max_reference_events), options,
                  &report);
  aligner.Run();
  aligner.Finish();
  return report;
}

}  // namespace egca::diff
