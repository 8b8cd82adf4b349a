// Constraint specs, their checkers, and extraction from a reference solution.
#include "egca/gates/constraints.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>

#include <fmt/format.h>

namespace egca::gates {
namespace {

enum class ValueType : uint8_t {
  kNone,       // a flag
  kCount,      // integer >= 0
  kPositive,   // integer >= 1
  kLoop,       // "for" | "while" | "comprehension" | "any"
  kStructure,  // ParseDataStructure
  kModule,     // dotted module name
  kCall,       // call name: "eval", "math.sqrt", ".sort"
};

struct KindInfo {
  const char* kind;
  ValueType type;
};

const std::vector<KindInfo>& Kinds() {
  static const auto* kinds = new std::vector<KindInfo>{
      {"requires_recursion", ValueType::kNone},     {"forbids_recursion", ValueType::kNone},
      {"max_loop_depth", ValueType::kCount},        {"requires_loop", ValueType::kLoop},
      {"forbids_loop", ValueType::kLoop},           {"requires_structure", ValueType::kStructure},
      {"forbids_structure", ValueType::kStructure}, {"requires_sorting", ValueType::kNone},
      {"forbids_sorting", ValueType::kNone},        {"requires_import", ValueType::kModule},
      {"forbids_import", ValueType::kModule},       {"requires_call", ValueType::kCall},
      {"forbids_call", ValueType::kCall},           {"max_statements", ValueType::kPositive},
  };
  return *kinds;
}

const KindInfo* FindKind(std::string_view kind) {
  for (const KindInfo& k : Kinds())
    if (kind == k.kind) return &k;
  return nullptr;
}

const std::string& Text(const ConstraintSpec& s) { return std::get<std::string>(s.value); }
int64_t Number(const ConstraintSpec& s) { return std::get<int64_t>(s.value); }

bool IsDottedName(std::string_view v, bool leading_dot_ok) {
  if (v.empty() || v.back() == '.') return false;
  if (v.front() == '.' && !leading_dot_ok) return false;
  bool prev_dot = false;
  for (size_t i = 0; i < v.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(v[i]);
    if (c == '.') {
      if (prev_dot) return false;
      prev_dot = true;
      continue;
    }
    if (!(std::isalnum(c) || c == '_' || c >= 0x80)) return false;
    prev_dot = false;
  }
  return true;
}

bool ImportMatches(const std::string& module, const std::string& wanted) {
  return module == wanted || module.rfind(wanted + ".", 0) == 0;
}

// Exact on the resolved name: "eval" is a bare call of eval (re.compile is not "compile"),
// "math.sqrt" that function however imported, ".sort" a method call named sort.
bool CallMatches(const std::string& resolved, const std::string& wanted) {
  return resolved == wanted;
}

bool LoopMatches(LoopKind kind, const std::string& wanted) {
  return wanted == "any" || wanted == LoopKindName(kind);
}

std::string LoopNoun(const std::string& kind) {
  return kind == "any" ? "loop" : kind == "comprehension" ? "comprehension" : kind + " loop";
}

ConstraintViolation Violated(const ConstraintSpec& spec, std::string message,
                             std::optional<SourceSpan> span) {
  return {spec.ToString(), std::move(message), std::move(span)};
}

std::optional<ConstraintViolation> CheckOne(const ConstraintSpec& spec, const ProgramFacts& f) {
  const std::string& k = spec.kind;
  if (k == "requires_recursion") {
    if (!f.recursive_calls.empty()) return std::nullopt;
    return Violated(spec, "no function calls itself, directly or through other functions",
                    std::nullopt);
  }
  if (k == "forbids_recursion") {
    if (f.recursive_calls.empty()) return std::nullopt;
    const RecursiveCall& r = f.recursive_calls.front();
    return Violated(spec,
                    r.direct ? fmt::format("{} calls itself", r.function)
                             : fmt::format("{} calls {}, which leads back to {}", r.function,
                                           r.callee, r.function),
                    r.span);
  }
  if (k == "max_loop_depth") {
    int64_t limit = Number(spec);
    if (f.max_loop_depth <= limit) return std::nullopt;
    for (const LoopFact& l : f.loops) {
      if (l.depth <= limit) continue;
      return Violated(spec,
                      fmt::format("{} nested {} deep (limit {}; deepest in the program {})",
                                  LoopNoun(LoopKindName(l.kind)), l.depth, limit, f.max_loop_depth),
                      l.span);
    }
    return std::nullopt;
  }
  if (k == "requires_loop" || k == "forbids_loop") {
    const LoopFact* found = nullptr;
    for (const LoopFact& l : f.loops)
      if (LoopMatches(l.kind, Text(spec))) {
        found = &l;
        break;
      }
    if (k == "requires_loop")
      return found ? std::nullopt
                   : std::optional(Violated(spec, "no " + LoopNoun(Text(spec)), std::nullopt));
    if (!found) return std::nullopt;
    return Violated(spec, fmt::format("uses a {} (forbidden)", LoopNoun(LoopKindName(found->kind))),
                    found->span);
  }
  if (k == "requires_structure" || k == "forbids_structure") {
    DataStructure want = *ParseDataStructure(Text(spec));
    const StructureUse* found = nullptr;
    for (const StructureUse& s : f.structures)
      if (s.structure == want) {
        found = &s;
        break;
      }
    if (k == "requires_structure")
      return found ? std::nullopt
                   : std::optional(Violated(
                         spec, fmt::format("uses no {}", DataStructureName(want)), std::nullopt));
    if (!found) return std::nullopt;
    return Violated(spec, fmt::format("uses a {} (forbidden)", DataStructureName(want)),
                    found->span);
  }
  if (k == "requires_sorting") {
    if (!f.sorts.empty()) return std::nullopt;
    return Violated(spec, "sorts nothing (no sorted(), .sort(), heapq.nsmallest/nlargest, insort)",
                    std::nullopt);
  }
  if (k == "forbids_sorting") {
    if (f.sorts.empty()) return std::nullopt;
    return Violated(spec, fmt::format("sorts with {} (forbidden)", f.sorts.front().how),
                    f.sorts.front().span);
  }
  if (k == "requires_import" || k == "forbids_import") {
    const ImportFact* found = nullptr;
    for (const ImportFact& i : f.imports)
      if (ImportMatches(i.module, Text(spec))) {
        found = &i;
        break;
      }
    if (k == "requires_import")
      return found ? std::nullopt
                   : std::optional(Violated(spec, "does not import " + Text(spec), std::nullopt));
    if (!found) return std::nullopt;
    return Violated(spec, fmt::format("imports {} (forbidden)", found->module), found->span);
  }
  if (k == "requires_call" || k == "forbids_call") {
    const CallFact* found = nullptr;
    for (const CallFact& c : f.calls)
      if (CallMatches(c.name, Text(spec))) {
        found = &c;
        break;
      }
    if (k == "requires_call")
      return found ? std::nullopt
                   : std::optional(Violated(spec, "never calls " + Text(spec), std::nullopt));
    if (!found) return std::nullopt;
    return Violated(spec, fmt::format("calls {} (forbidden)", found->name), found->span);
  }
  if (k == "max_statements") {
    int64_t limit = Number(spec);
    if (static_cast<int64_t>(f.statements.size()) <= limit) return std::nullopt;
    return Violated(spec,
                    fmt::format("{} statements (limit {}); this is statement {}",
                                f.statements.size(), limit, limit + 1),
                    f.statements[static_cast<size_t>(limit)]);
  }
  return std::nullopt;
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// The last program's facts, per thread: the router runs every checker of a problem on the
// same candidate in a row, so they share one ComputeFacts. Keyed by the program's address
// and its source's hash and size (an address alone could be reused by another program).
std::shared_ptr<const ProgramFacts> FactsFor(const cfg::ProgramCfg& program) {
  struct Memo {
    const cfg::ProgramCfg* program = nullptr;
    uint64_t hash = 0;
    size_t size = 0;
    std::shared_ptr<const ProgramFacts> facts;
  };
  thread_local Memo memo;
  uint64_t hash = Fnv1a(program.source());
  if (memo.facts && memo.program == &program && memo.hash == hash &&
      memo.size == program.source().size())
    return memo.facts;
  memo.facts = std::make_shared<const ProgramFacts>(ComputeFacts(program));
  memo.program = &program;
  memo.hash = hash;
  memo.size = program.source().size();
  return memo.facts;
}

class SpecChecker final : public ConstraintChecker {
 public:
  explicit SpecChecker(ConstraintSpec spec) : spec_(std::move(spec)), name_(spec_.ToString()) {}
  std::string name() const override { return name_; }
  // The spans index program.source() (the router builds `program` from `source`).
  std::optional<ConstraintViolation> Violation(std::string_view /*source*/,
                                               const cfg::ProgramCfg& program) const override {
    if (!program.parsed()) return std::nullopt;  // SYNTAX comes first; nothing to check
    return CheckOne(spec_, *FactsFor(program));
  }

 private:
  const ConstraintSpec spec_;
  const std::string name_;
};

enum class RecursionRequest : uint8_t { kNone, kAsked, kForbidden };

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether the problem text asks for recursion or rules it out. A mention counts as a ban
// when a negation ("not", "n't", "no", "without", "avoid", "non-") stands in the few words
// before it: "Do not use recursion.", "without recursion", "a non-recursive solution".
RecursionRequest FindRecursionRequest(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  RecursionRequest found = RecursionRequest::kNone;
  for (size_t at = lower.find("recursi"); at != std::string::npos;
       at = lower.find("recursi", at + 1)) {
    bool non = at >= 4 && lower.compare(at - 4, 4, "non-") == 0;
    if (!non && at > 0 && IsWordChar(lower[at - 1])) continue;  // "_recursive", "nonrecursive"
    bool word = false;
    for (std::string_view w : {"recursion", "recursive", "recursively"}) {
      size_t after = at + w.size();
      if (lower.compare(at, w.size(), w) == 0 &&
          (after >= lower.size() || !IsWordChar(lower[after])))
        word = true;
    }
    if (!word) continue;
    // The words before the mention, back to the start of its sentence (at most 40 bytes).
    size_t from = at >= 40 ? at - 40 : 0;
    std::string before = lower.substr(from, at - from);
    size_t stop = before.find_last_of(".;!?");
    if (stop != std::string::npos) before = before.substr(stop + 1);
    before = " " + before;
    std::replace(before.begin(), before.end(), '\n', ' ');
    bool negated = non;
    for (std::string_view neg : {" not ", "n't ", " no ", " without ", " avoid ", " avoiding "})
      negated |= before.find(neg) != std::string::npos;
    if (negated) return RecursionRequest::kForbidden;  // a ban wins over any mention
    found = RecursionRequest::kAsked;
  }
  return found;
}

}  // namespace

std::string ConstraintSpec::ToString() const {
  if (std::holds_alternative<int64_t>(value))
    return fmt::format("{}({})", kind, std::get<int64_t>(value));
  if (std::holds_alternative<std::string>(value))
    return fmt::format("{}({})", kind, std::get<std::string>(value));
  return kind;
}

const std::vector<std::string>& ConstraintKinds() {
  static const auto* names = [] {
    auto* v = new std::vector<std::string>;
    for (const KindInfo& k : Kinds()) v->push_back(k.kind);
    return v;
  }();
  return *names;
}

Status ValidateConstraintSpec(const ConstraintSpec& spec) {
  const KindInfo* info = FindKind(spec.kind);
  if (!info) return InvalidArgument(fmt::format("unknown kind '{}'", spec.kind));
  bool is_int = std::holds_alternative<int64_t>(spec.value);
  bool is_text = std::holds_alternative<std::string>(spec.value);
  switch (info->type) {
    case ValueType::kNone:
      if (!std::holds_alternative<std::monostate>(spec.value))
        return InvalidArgument(fmt::format("{} takes no value", spec.kind));
      return Status::Ok();
    case ValueType::kCount:
    case ValueType::kPositive: {
      int64_t min = info->type == ValueType::kCount ? 0 : 1;
      if (!is_int || std::get<int64_t>(spec.value) < min)
        return InvalidArgument(fmt::format("{} needs an integer value >= {}", spec.kind, min));
      return Status::Ok();
    }
    case ValueType::kLoop: {
      const std::string* v = is_text ? &std::get<std::string>(spec.value) : nullptr;
      if (!v || (*v != "for" && *v != "while" && *v != "comprehension" && *v != "any"))
        return InvalidArgument(fmt::format(
            "{} needs a value \"for\", \"while\", \"comprehension\" or \"any\"", spec.kind));
      return Status::Ok();
    }
    case ValueType::kStructure:
      if (!is_text || !ParseDataStructure(std::get<std::string>(spec.value)))
        return InvalidArgument(fmt::format(
            "{} needs a value list, dict, set, heap, deque, Counter, defaultdict or OrderedDict",
            spec.kind));
      return Status::Ok();
    case ValueType::kModule:
      if (!is_text || !IsDottedName(std::get<std::string>(spec.value), false))
        return InvalidArgument(
            fmt::format("{} needs a module name (\"numpy\", \"os.path\")", spec.kind));
      return Status::Ok();
    case ValueType::kCall:
      if (!is_text || !IsDottedName(std::get<std::string>(spec.value), true))
        return InvalidArgument(fmt::format(
            "{} needs a call name (\"eval\", \"math.factorial\", \".sort\")", spec.kind));
      return Status::Ok();
  }
  return Status::Ok();
}

std::string DescribeConstraint(const ConstraintSpec& spec) {
  const std::string& k = spec.kind;
  if (k == "requires_recursion") return "Solve it recursively: a function must call itself.";
  if (k == "forbids_recursion") return "Do not use recursion.";
  if (k == "max_loop_depth") {
    int64_t n = Number(spec);
    if (n == 0) return "Do not use loops or comprehensions.";
    return fmt::format("Nest loops (comprehensions included) at most {} deep.", n);
  }
  if (k == "requires_loop")
    return Text(spec) == "any" ? "Use a loop." : fmt::format("Use a {}.", LoopNoun(Text(spec)));
  if (k == "forbids_loop")
    return Text(spec) == "any" ? "Do not use loops or comprehensions."
                               : fmt::format("Do not use {}s.", LoopNoun(Text(spec)));
  if (k == "requires_structure") return fmt::format("Use a {}.", Text(spec));
  if (k == "forbids_structure") return fmt::format("Do not use a {}.", Text(spec));
  if (k == "requires_sorting") return "Sort the data (sorted() or .sort()).";
  if (k == "forbids_sorting")
    return "Do not sort (no sorted(), .sort(), heapq.nsmallest/nlargest or bisect.insort).";
  if (k == "requires_import") return fmt::format("Use the {} module.", Text(spec));
  if (k == "forbids_import") return fmt::format("Do not import {}.", Text(spec));
  if (k == "requires_call") return fmt::format("Call {}().", Text(spec));
  if (k == "forbids_call") return fmt::format("Do not call {}().", Text(spec));
  if (k == "max_statements") return fmt::format("Use at most {} statements.", Number(spec));
  return spec.ToString();
}

std::string PromptSuffix(const std::vector<ConstraintSpec>& specs) {
  if (specs.empty()) return "";
  std::string out = "\nConstraints:\n";
  for (const ConstraintSpec& s : specs) out += "- " + DescribeConstraint(s) + "\n";
  return out;
}

StatusOr<std::shared_ptr<const ConstraintChecker>> MakeConstraint(const ConstraintSpec& spec) {
  EGCA_RETURN_IF_ERROR(ValidateConstraintSpec(spec));
  return std::shared_ptr<const ConstraintChecker>(std::make_shared<SpecChecker>(spec));
}

StatusOr<ConstraintSet> MakeConstraintSet(const std::vector<ConstraintSpec>& specs) {
  ConstraintSet set;
  for (size_t i = 0; i < specs.size(); ++i) {
    auto checker = MakeConstraint(specs[i]);
    if (!checker.ok()) return checker.status().WithContext(fmt::format("entry {}", i));
    set.push_back(std::move(checker).value());
  }
  return set;
}

std::vector<ConstraintViolation> CheckFacts(const ProgramFacts& facts,
                                            const std::vector<ConstraintSpec>& specs) {
  std::vector<ConstraintViolation> out;
  for (const ConstraintSpec& s : specs)
    if (ValidateConstraintSpec(s).ok())
      if (auto v = CheckOne(s, facts)) out.push_back(std::move(*v));
  return out;
}

StatusOr<std::vector<ConstraintSpec>> ExtractConstraints(std::string_view reference,
                                                         const ExtractionPolicy& policy,
                                                         std::string_view problem_text) {
  auto facts_or = ComputeFacts(reference);
  if (!facts_or.ok()) return facts_or.status().WithContext("reference");
  const ProgramFacts& f = *facts_or;
  std::vector<ConstraintSpec> out;
  auto add = [&](std::string kind, ConstraintValue value, std::string note) {
    out.push_back({std::move(kind), std::move(value), std::move(note)});
  };

  bool recursive = !f.recursive_calls.empty();
  RecursionRequest request = policy.follow_recursion_request ? FindRecursionRequest(problem_text)
                                                             : RecursionRequest::kNone;
  if (request == RecursionRequest::kAsked)
    add("requires_recursion", {}, "the problem asks for recursion");
  else if (request == RecursionRequest::kForbidden)
    add("forbids_recursion", {}, "the problem rules out recursion");
  else if (policy.forbid_recursion_if_absent && !recursive)
    add("forbids_recursion", {}, "the reference is not recursive");
  if (policy.loop_depth_slack >= 0) {
    int64_t bound = f.max_loop_depth + policy.loop_depth_slack;
    std::string note =
        fmt::format("reference depth {} + slack {}", f.max_loop_depth, policy.loop_depth_slack);
    if (bound < policy.loop_depth_floor) {
      bound = policy.loop_depth_floor;
      note = fmt::format("floor {} (reference depth {})", bound, f.max_loop_depth);
    }
    add("max_loop_depth", bound, note);
  }
  if (policy.statement_factor > 0) {
    auto n = static_cast<int64_t>(
        std::ceil(policy.statement_factor * static_cast<double>(f.statements.size())) +
        policy.statement_slack);
    add("max_statements", std::max<int64_t>(n, 1),
        fmt::format("reference {} statements x {} + {}", f.statements.size(),
                    policy.statement_factor, policy.statement_slack));
  }
  if (policy.forbid_sorting_if_absent && f.sorts.empty())
    add("forbids_sorting", {}, "the reference does not sort");
  for (DataStructure s : policy.forbid_structures_if_absent) {
    bool used = std::any_of(f.structures.begin(), f.structures.end(),
                            [&](const StructureUse& u) { return u.structure == s; });
    if (!used)
      add("forbids_structure", std::string(DataStructureName(s)), "the reference uses none");
  }
  if (policy.forbid_while_if_absent &&
      std::none_of(f.loops.begin(), f.loops.end(),
                   [](const LoopFact& l) { return l.kind == LoopKind::kWhile; }))
    add("forbids_loop", std::string("while"), "the reference has no while loop");
  for (const std::string& m : policy.forbidden_imports) {
    bool used = std::any_of(f.imports.begin(), f.imports.end(),
                            [&](const ImportFact& i) { return ImportMatches(i.module, m); });
    if (!used) add("forbids_import", m, "not needed by the reference");
  }
  for (const std::string& c : policy.forbidden_calls) {
    bool used = std::any_of(f.calls.begin(), f.calls.end(),
                            [&](const CallFact& call) { return CallMatches(call.name, c); });
    if (!used) add("forbids_call", c, "not needed by the reference");
  }
  for (const ConstraintSpec& s : out) {
    Status st = ValidateConstraintSpec(s);
    if (!st.ok()) return st.WithContext("extraction policy");
  }
  return out;
}

}  // namespace egca::gates
