// ComputeFacts: one pass over the CFG's scopes and statements (loops, nesting, statement
// count, import statements) and one token scan of the source (calls, displays, names
// resolved through the program's imports). See constraints.h for what counts as what.
#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>

#include "constraints_lexer.h"
#include "egca/gates/constraints.h"

namespace egca::gates {
namespace {

using internal::IsPythonKeyword;
using internal::Token;
using internal::TokenKind;
using internal::TokenStream;

// Names a `from m import *` brings in, for the modules whose names feed facts.
const std::map<std::string, std::vector<std::string>>& StarExports() {
  static const auto* table = new std::map<std::string, std::vector<std::string>>{
      {"heapq",
       {"heappush", "heappop", "heapify", "heapreplace", "heappushpop", "nlargest", "nsmallest",
        "merge"}},
      {"collections", {"deque", "Counter", "defaultdict", "OrderedDict"}},
      {"bisect",
       {"bisect", "bisect_left", "bisect_right", "insort", "insort_left", "insort_right"}},
      {"queue", {"PriorityQueue"}},
  };
  return *table;
}

bool IsOp(std::string_view src, const Token& t, std::string_view op) {
  return t.kind == TokenKind::kOp && internal::TokenText(src, t) == op;
}
bool IsName(const Token& t, std::string_view src) {
  return t.kind == TokenKind::kName && !IsPythonKeyword(internal::TokenText(src, t));
}
bool IsKeyword(std::string_view src, const Token& t, std::string_view kw) {
  return t.kind == TokenKind::kName && internal::TokenText(src, t) == kw;
}

std::string LastComponent(const std::string& name) {
  size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

// A call as written, before it becomes a CallFact.
struct RawCall {
  std::vector<std::string> chain;  // "a", "b", "c" for a.b.c(...)
  bool on_expression = false;      // the chain hangs off an expression: x[0].sort(...)
  std::string resolved;            // CallFact::name
  bool local = false;              // a bare name the program defines itself (def/class)
  SourceSpan span;
  int32_t scope = 0;
};

class FactsBuilder {
 public:
  explicit FactsBuilder(const cfg::ProgramCfg& program)
      : program_(program), src_(program.source()), lines_(src_) {}

  ProgramFacts Build() {
    ProgramFacts facts;
    if (!program_.parsed() || program_.scopes().empty()) return facts;
    streams_ = internal::ScanPython(src_);
    CollectDefinitions();
    CollectStatementsAndLoops(&facts);
    CollectImports(&facts);
    for (const TokenStream& s : streams_) CollectCalls(s);
    for (const TokenStream& s : streams_) CollectDisplays(s, &facts);
    for (const RawCall& c : calls_) {
      facts.calls.push_back({c.resolved, c.span, c.scope});
      ClassifyCall(c, &facts);
    }
    for (const ImportFact& f : dynamic_imports_) facts.imports.push_back(f);
    SortBySpan(&facts.imports);
    CollectRecursion(&facts);
    SortBySpan(&facts.calls);
    SortBySpan(&facts.structures);
    SortBySpan(&facts.sorts);
    SortBySpan(&facts.recursive_calls);
    return facts;
  }

 private:
  template <typename T>
  static void SortBySpan(std::vector<T>* v) {
    std::stable_sort(v->begin(), v->end(), [](const T& a, const T& b) {
      return a.span.begin_byte != b.span.begin_byte ? a.span.begin_byte < b.span.begin_byte
                                                    : a.span.end_byte < b.span.end_byte;
    });
  }

  std::string_view Text(const Token& t) const { return internal::TokenText(src_, t); }
  SourceSpan Span(uint32_t b, uint32_t e) const { return lines_.SpanFromBytes(b, e); }

  void CollectDefinitions() {
    for (const cfg::FunctionCfg& s : program_.scopes())
      if (s.kind == cfg::ScopeKind::kFunction || s.kind == cfg::ScopeKind::kClass)
        defined_names_.insert(s.name);
  }

  // Statements (counted), loops with their program-level nesting depth.
  void CollectStatementsAndLoops(ProgramFacts* facts) {
    const auto& scopes = program_.scopes();
    // The loop depth at the statement that creates each nested scope.
    std::vector<int32_t> creator_depth(scopes.size(), 0);
    for (const cfg::FunctionCfg& scope : scopes)
      for (auto [v, vend] = boost::vertices(scope.graph); v != vend; ++v)
        for (const cfg::Statement& st : scope.graph[*v].statements)
          for (int32_t child : st.child_scopes)
            if (child >= 0 && child < static_cast<int32_t>(scopes.size()))
              creator_depth[child] = st.loop_depth;
    // base[s]: loops enclosing scope s's code within its function. A comprehension runs
    // inside the loops around it; a def / lambda / class body starts over.
    std::vector<int32_t> base(scopes.size(), -1);
    std::function<int32_t(int32_t, int)> base_of = [&](int32_t s, int guard) -> int32_t {
      if (base[s] >= 0) return base[s];
      const cfg::FunctionCfg& scope = scopes[s];
      int32_t b = 0;
      if (scope.kind == cfg::ScopeKind::kComprehension && scope.parent >= 0 && guard < 256)
        b = base_of(scope.parent, guard + 1) + creator_depth[s];
      return base[s] = b;
    };
    for (int32_t s = 0; s < static_cast<int32_t>(scopes.size()); ++s) {
      const cfg::FunctionCfg& scope = scopes[s];
      int32_t b = base_of(s, 0);
      for (auto [v, vend] = boost::vertices(scope.graph); v != vend; ++v) {
        for (const cfg::Statement& st : scope.graph[*v].statements) {
          switch (st.kind) {
            case cfg::StmtKind::kFor:
            case cfg::StmtKind::kAsyncFor:
              facts->loops.push_back({LoopKind::kFor, st.span, b + st.loop_depth + 1, s});
              break;
            case cfg::StmtKind::kWhile:
              facts->loops.push_back({LoopKind::kWhile, st.span, b + st.loop_depth + 1, s});
              break;
            case cfg::StmtKind::kComprehensionFor:
              facts->loops.push_back({LoopKind::kComprehension, st.span, b + st.loop_depth + 1, s});
              break;
            default:
              break;
          }
          switch (st.kind) {
            case cfg::StmtKind::kDocstring:
            case cfg::StmtKind::kLambdaBody:
            case cfg::StmtKind::kComprehensionFor:
            case cfg::StmtKind::kComprehensionIf:
            case cfg::StmtKind::kComprehensionElement:
              break;
            default:
              facts->statements.push_back(st.span);
          }
          if (st.kind == cfg::StmtKind::kImport) import_statements_.push_back(st.span);
        }
      }
    }
    SortBySpan(&facts->loops);
    std::sort(facts->statements.begin(), facts->statements.end(),
              [](const SourceSpan& a, const SourceSpan& b) { return a.begin_byte < b.begin_byte; });
    std::sort(import_statements_.begin(), import_statements_.end(),
              [](const SourceSpan& a, const SourceSpan& b) { return a.begin_byte < b.begin_byte; });
    for (const LoopFact& l : facts->loops)
      facts->max_loop_depth = std::max(facts->max_loop_depth, l.depth);
  }

  // Main-stream tokens inside [begin, end).
  std::pair<size_t, size_t> TokensIn(uint32_t begin, uint32_t end) const {
    const auto& toks = streams_.front().tokens;
    auto lo = std::lower_bound(toks.begin(), toks.end(), begin,
                               [](const Token& t, uint32_t b) { return t.begin < b; });
    auto hi = std::lower_bound(lo, toks.end(), end,
                               [](const Token& t, uint32_t e) { return t.begin < e; });
    return {static_cast<size_t>(lo - toks.begin()), static_cast<size_t>(hi - toks.begin())};
  }

  // Reads a dotted name starting at toks[*i] ("a", ".", "b"); leading dots of a relative
  // import included. Advances *i past it.
  std::string DottedName(const std::vector<Token>& toks, size_t* i, size_t end) const {
    std::string out;
    while (*i < end) {
      const Token& t = toks[*i];
      if (t.kind == TokenKind::kOp && (Text(t) == "." || Text(t) == "...")) {
        out += Text(t);
      } else if (t.kind == TokenKind::kName && Text(t) != "import" && Text(t) != "as") {
        if (!out.empty() && out.back() != '.') break;
        out += Text(t);
      } else {
        break;
      }
      ++*i;
    }
    return out;
  }

  void CollectImports(ProgramFacts* facts) {
    const auto& toks = streams_.front().tokens;
    for (const SourceSpan& span : import_statements_) {
      auto [i, end] = TokensIn(span.begin_byte, span.end_byte);
      if (i >= end) continue;
      if (IsKeyword(src_, toks[i], "import")) {
        ++i;
        while (i < end) {
          std::string module = DottedName(toks, &i, end);
          if (module.empty()) break;
          std::string local = module.substr(0, module.find('.'));
          std::string target = local;
          if (i + 1 < end && IsKeyword(src_, toks[i], "as") && IsName(toks[i + 1], src_)) {
            local = std::string(Text(toks[i + 1]));
            target = module;
            i += 2;
          }
          aliases_[local] = target;
          facts->imports.push_back({module, span});
          if (i < end && IsOp(src_, toks[i], ",")) ++i;
        }
      } else if (IsKeyword(src_, toks[i], "from")) {
        ++i;
        std::string module = DottedName(toks, &i, end);
        facts->imports.push_back({module, span});
        if (i < end && IsKeyword(src_, toks[i], "import")) ++i;
        for (; i < end; ++i) {
          const Token& t = toks[i];
          if (IsOp(src_, t, "*")) {
            star_modules_.push_back(module);
          } else if (IsName(t, src_)) {
            std::string name(Text(t));
            std::string local = name;
            if (i + 2 < end && IsKeyword(src_, toks[i + 1], "as") && IsName(toks[i + 2], src_)) {
              local = std::string(Text(toks[i + 2]));
              i += 2;
            }
            aliases_[local] = module + "." + name;
          }
        }
      }
    }
  }

  // Every `name(`, `a.b.c(` and `<expr>.m(` call in one token stream.
  void CollectCalls(const TokenStream& stream) {
    const auto& toks = stream.tokens;
    for (size_t i = 0; i + 1 < toks.size(); ++i) {
      if (!IsName(toks[i], src_) || !IsOp(src_, toks[i + 1], "(")) continue;
      size_t j = i;
      while (j >= 2 && IsOp(src_, toks[j - 1], ".") && IsName(toks[j - 2], src_)) j -= 2;
      RawCall call;
      call.on_expression = j >= 1 && IsOp(src_, toks[j - 1], ".");
      // def f( / class C( are definitions, not calls.
      if (!call.on_expression && j >= 1 &&
          (IsKeyword(src_, toks[j - 1], "def") || IsKeyword(src_, toks[j - 1], "class")))
        continue;
      for (size_t k = j; k <= i; k += 2) call.chain.emplace_back(Text(toks[k]));
      const Token& open = toks[i + 1];
      uint32_t end = open.match >= 0 ? toks[open.match].end : open.end;
      call.span = Span(toks[j].begin, end);
      call.scope = program_.ScopeAt(toks[j].begin);
      Resolve(&call);
      // __import__("m") with a literal name is an import too.
      if (call.resolved == "__import__" && i + 2 < toks.size() &&
          toks[i + 2].kind == TokenKind::kString) {
        std::string_view lit = Text(toks[i + 2]);
        size_t q = lit.find_first_of("'\"");
        if (q != std::string_view::npos && lit.size() >= q + 2) {
          std::string_view name = lit.substr(q + 1, lit.size() - 2 * (q + 1));
          if (!name.empty() && name.find_first_of("'\" ") == std::string_view::npos)
            dynamic_imports_.push_back({std::string(name), call.span});
        }
      }
      calls_.push_back(std::move(call));
    }
  }

  void Resolve(RawCall* call) const {
    const std::string& head = call->chain.front();
    if (call->on_expression) {
      call->resolved = "." + call->chain.back();
      return;
    }
    auto alias = aliases_.find(head);
    if (alias != aliases_.end()) {
      std::string q = alias->second;
      for (size_t k = 1; k < call->chain.size(); ++k) q += "." + call->chain[k];
      if (q.rfind("builtins.", 0) == 0) q = q.substr(9);
      call->resolved = q;
      return;
    }
    if (call->chain.size() > 1) {
      call->resolved = "." + call->chain.back();  // a method of a variable / self / a class
      return;
    }
    if (defined_names_.count(head)) {
      call->resolved = head;
      call->local = true;
      return;
    }
    for (const std::string& m : star_modules_) {
      auto it = StarExports().find(m);
      if (it == StarExports().end()) continue;
      if (std::find(it->second.begin(), it->second.end(), head) != it->second.end()) {
        call->resolved = m + "." + head;
        return;
      }
    }
    call->resolved = head;
  }

  void ClassifyCall(const RawCall& c, ProgramFacts* facts) const {
    const std::string& n = c.resolved;
    auto add = [&](DataStructure s) { facts->structures.push_back({s, c.span}); };
    if (!c.local) {
      if (n == "list") add(DataStructure::kList);
      if (n == "dict") add(DataStructure::kDict);
      if (n == "set" || n == "frozenset") add(DataStructure::kSet);
      if (n == "sorted") facts->sorts.push_back({"sorted", c.span});
    }
    if (n == "collections.deque") add(DataStructure::kDeque);
    if (n == "collections.Counter") add(DataStructure::kCounter), add(DataStructure::kDict);
    if (n == "collections.defaultdict") add(DataStructure::kDefaultDict), add(DataStructure::kDict);
    if (n == "collections.OrderedDict") add(DataStructure::kOrderedDict), add(DataStructure::kDict);
    if (n.rfind("heapq.", 0) == 0 || n == "queue.PriorityQueue") add(DataStructure::kHeap);
    if (!c.local && LastComponent(n) == "sort") facts->sorts.push_back({n, c.span});
    if (n == "heapq.nsmallest" || n == "heapq.nlargest" || n == "bisect.insort" ||
        n == "bisect.insort_left" || n == "bisect.insort_right")
      facts->sorts.push_back({n, c.span});
  }

  // List / dict / set displays and comprehensions in one token stream.
  void CollectDisplays(const TokenStream& stream, ProgramFacts* facts) const {
    const auto& toks = stream.tokens;
    for (size_t i = 0; i < toks.size(); ++i) {
      const Token& t = toks[i];
      if (t.kind != TokenKind::kOp || t.match < 0 || (Text(t) != "[" && Text(t) != "{")) continue;
      size_t close = static_cast<size_t>(t.match);
      SourceSpan span = Span(t.begin, toks[close].end);
      if (Text(t) == "[") {
        if (i > 0) {
          const Token& p = toks[i - 1];
          std::string_view pt = Text(p);
          bool operand = (p.kind == TokenKind::kName && (!IsPythonKeyword(pt) || pt == "None" ||
                                                         pt == "True" || pt == "False")) ||
                         p.kind == TokenKind::kNumber || p.kind == TokenKind::kString ||
                         pt == ")" || pt == "]" || pt == "}";
          if (operand) continue;  // a subscript
        }
        facts->structures.push_back({DataStructure::kList, span});
        continue;
      }
      // "{": dict if empty, if it starts with "**", or if a ":" at its top level is not a
      // lambda's; a set otherwise.
      bool dict = close == i + 1 || IsOp(src_, toks[i + 1], "**");
      int lambdas = 0;
      for (size_t k = i + 1; k < close && !dict; ++k) {
        const Token& u = toks[k];
        if (u.kind == TokenKind::kOp && u.match > static_cast<int32_t>(k)) {
          k = static_cast<size_t>(u.match);
          continue;
        }
        if (IsKeyword(src_, u, "lambda")) ++lambdas;
        if (IsOp(src_, u, ":")) {
          if (lambdas > 0) {
            --lambdas;
          } else {
            dict = true;
          }
        }
      }
      facts->structures.push_back({dict ? DataStructure::kDict : DataStructure::kSet, span});
    }
  }

  // The nearest enclosing function of a scope (lambdas and comprehensions belong to the
  // function around them); -1 at module or class level.
  int32_t EnclosingFunction(int32_t s) const {
    const auto& scopes = program_.scopes();
    while (s >= 0) {
      cfg::ScopeKind k = scopes[s].kind;
      if (k == cfg::ScopeKind::kFunction) return s;
      if (k == cfg::ScopeKind::kModule || k == cfg::ScopeKind::kClass) return -1;
      s = scopes[s].parent;
    }
    return -1;
  }

  int32_t ChildFunction(int32_t parent, const std::string& name) const {
    const auto& scopes = program_.scopes();
    for (int32_t s = 0; s < static_cast<int32_t>(scopes.size()); ++s)
      if (scopes[s].parent == parent && scopes[s].kind == cfg::ScopeKind::kFunction &&
          scopes[s].name == name)
        return s;
    return -1;
  }

  // The function a call lands in, by Python's scoping rules (class bodies are not visible
  // from the functions inside them); -1 if not a function of this program.
  int32_t Callee(const RawCall& c) const {
    const auto& scopes = program_.scopes();
    if (c.on_expression) return -1;
    if (c.chain.size() == 1) {
      if (aliases_.count(c.chain[0])) return -1;
      for (int32_t s = c.scope; s >= 0; s = scopes[s].parent) {
        if (scopes[s].kind == cfg::ScopeKind::kClass && s != c.scope) continue;
        int32_t f = ChildFunction(s, c.chain[0]);
        if (f >= 0) return f;
      }
      return -1;
    }
    if (c.chain.size() != 2) return -1;
    if (c.chain[0] == "self" || c.chain[0] == "cls") {
      for (int32_t s = c.scope; s >= 0; s = scopes[s].parent)
        if (scopes[s].kind == cfg::ScopeKind::kClass) return ChildFunction(s, c.chain[1]);
      return -1;
    }
    for (int32_t s = 0; s < static_cast<int32_t>(scopes.size()); ++s)
      if (scopes[s].kind == cfg::ScopeKind::kClass && scopes[s].name == c.chain[0])
        return ChildFunction(s, c.chain[1]);
    return -1;
  }

  void CollectRecursion(ProgramFacts* facts) const {
    const auto& scopes = program_.scopes();
    struct CallEdge {
      int32_t from, to;
      const RawCall* call;
    };
    std::vector<CallEdge> edges;
    std::vector<std::vector<int32_t>> out(scopes.size());
    for (const RawCall& c : calls_) {
      int32_t from = EnclosingFunction(c.scope);
      if (from < 0) continue;
      int32_t to = Callee(c);
      if (to < 0) continue;
      edges.push_back({from, to, &c});
      out[from].push_back(to);
    }
    // A call from f to g is recursive iff g reaches f.
    std::vector<std::vector<char>> reach(scopes.size());
    auto reaches = [&](int32_t from, int32_t target) {
      std::vector<char>& seen = reach[from];
      if (seen.empty()) {
        seen.assign(scopes.size(), 0);
        std::vector<int32_t> stack = {from};
        seen[from] = 1;
        while (!stack.empty()) {
          int32_t u = stack.back();
          stack.pop_back();
          for (int32_t v : out[u])
            if (!seen[v]) seen[v] = 1, stack.push_back(v);
        }
      }
      return seen[target] != 0;
    };
    for (const CallEdge& e : edges) {
      if (!reaches(e.to, e.from)) continue;
      facts->recursive_calls.push_back({scopes[e.from].qualified_name, scopes[e.to].qualified_name,
                                        e.from == e.to, e.call->span});
    }
  }

  const cfg::ProgramCfg& program_;
  std::string_view src_;
  LineIndex lines_;
  std::vector<TokenStream> streams_;
  std::set<std::string> defined_names_;
  std::vector<SourceSpan> import_statements_;
  std::map<std::string, std::string> aliases_;  // local name -> qualified name
  std::vector<std::string> star_modules_;
  std::vector<RawCall> calls_;
  std::vector<ImportFact> dynamic_imports_;
};

std::string SpanText(const SourceSpan& s) { return s.ToString(); }

}  // namespace

const char* LoopKindName(LoopKind kind) {
  switch (kind) {
    case LoopKind::kFor:
      return "for";
    case LoopKind::kWhile:
      return "while";
    case LoopKind::kComprehension:
      return "comprehension";
  }
  return "?";
}

const char* DataStructureName(DataStructure s) {
  switch (s) {
    case DataStructure::kList:
      return "list";
    case DataStructure::kDict:
      return "dict";
    case DataStructure::kSet:
      return "set";
    case DataStructure::kHeap:
      return "heap";
    case DataStructure::kDeque:
      return "deque";
    case DataStructure::kCounter:
      return "Counter";
    case DataStructure::kDefaultDict:
      return "defaultdict";
    case DataStructure::kOrderedDict:
      return "OrderedDict";
  }
  return "?";
}

std::optional<DataStructure> ParseDataStructure(std::string_view name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "heapq") return DataStructure::kHeap;
  for (DataStructure s : {DataStructure::kList, DataStructure::kDict, DataStructure::kSet,
                          DataStructure::kHeap, DataStructure::kDeque, DataStructure::kCounter,
                          DataStructure::kDefaultDict, DataStructure::kOrderedDict}) {
    std::string n = DataStructureName(s);
    std::transform(n.begin(), n.end(), n.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (n == lower) return s;
  }
  return std::nullopt;
}

const LoopFact* ProgramFacts::DeepestLoop() const {
  for (const LoopFact& l : loops)
    if (l.depth == max_loop_depth) return &l;
  return nullptr;
}

std::string ProgramFacts::Dump() const {
  std::string out;
  out += fmt::format("statements {}\nmax_loop_depth {}\n", statements.size(), max_loop_depth);
  for (const LoopFact& l : loops)
    out += fmt::format("loop {} depth={} {}\n", LoopKindName(l.kind), l.depth, SpanText(l.span));
  for (const RecursiveCall& r : recursive_calls)
    out += fmt::format("recursion {} -> {}{} {}\n", r.function, r.callee,
                       r.direct ? " (direct)" : "", SpanText(r.span));
  for (const ImportFact& i : imports)
    out += fmt::format("import {} {}\n", i.module, SpanText(i.span));
  for (const StructureUse& s : structures)
    out += fmt::format("structure {} {}\n", DataStructureName(s.structure), SpanText(s.span));
  for (const SortUse& s : sorts) out += fmt::format("sort {} {}\n", s.how, SpanText(s.span));
  for (const CallFact& c : calls) out += fmt::format("call {} {}\n", c.name, SpanText(c.span));
  return out;
}

ProgramFacts ComputeFacts(const cfg::ProgramCfg& program) { return FactsBuilder(program).Build(); }

StatusOr<ProgramFacts> ComputeFacts(std::string_view source) {
  EGCA_ASSIGN_OR_RETURN(cfg::ProgramCfg program, cfg::ProgramCfg::Build(source));
  if (!program.parsed()) {
    const cfg::SyntaxError& e = *program.syntax_error();
    return InvalidArgument(
        fmt::format("program does not parse at {}: {}", e.span.ToString(), e.message));
  }
  return ComputeFacts(program);
}

}  // namespace egca::gates
