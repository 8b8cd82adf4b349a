#include "egca/gates/cause.h"

#include <algorithm>
#include <cctype>

namespace egca::gates {
namespace {

enum class TokKind { kName, kOp, kOpen, kClose };

// One token of a statement's text. `binding_context`: every bracket around it is a tuple or
// list display (not a call, subscript, or a dict/set display).
struct Tok {
  TokKind kind;
  std::string_view text;
  bool binding_context = true;
  int depth = 0;
};

bool NameStart(unsigned char c) { return std::isalpha(c) || c == '_' || c >= 0x80; }
bool NameChar(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

// Identifiers, brackets and operators of `text`; strings (with any prefix, single or triple
// quoted) and comments are skipped.
std::vector<Tok> Lex(std::string_view text) {
  std::vector<Tok> out;
  std::vector<bool> display;  // per open bracket: a tuple/list display
  size_t i = 0;
  auto context = [&] {
    return std::all_of(display.begin(), display.end(), [](bool d) { return d; });
  };
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      const bool triple = i + 2 < text.size() && text[i + 1] == text[i] && text[i + 2] == text[i];
      const size_t q = triple ? 3 : 1;
      const char quote = text[i];
      i += q;
      while (i < text.size()) {
        if (text[i] == '\\') {
          i += 2;
          continue;
        }
        if (text[i] == quote &&
            (!triple || (i + 2 < text.size() && text[i + 1] == quote && text[i + 2] == quote))) {
          i += q;
          break;
        }
        ++i;
      }
      continue;
    }
    if (NameStart(c)) {
      size_t j = i;
      while (j < text.size() && NameChar(static_cast<unsigned char>(text[j]))) ++j;
      // A string prefix (r"", f'', b"", rb'' ...) glued to a quote: the string follows.
      if (j < text.size() && (text[j] == '"' || text[j] == '\'') && j - i <= 2) {
        i = j;
        continue;
      }
      out.push_back({TokKind::kName, text.substr(i, j - i), context(), static_cast<int>(display.size())});
      i = j;
      continue;
    }
    if (std::isdigit(c)) {
      while (i < text.size() && (NameChar(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
      out.push_back({TokKind::kOp, "0", context(), static_cast<int>(display.size())});
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      // A bracket right after a name, ')' or ']' is a call or subscript; '{' is never a
      // binding target.
      bool after_value = !out.empty() && (out.back().kind == TokKind::kName ||
                                          out.back().kind == TokKind::kClose);
      if (after_value && out.back().kind == TokKind::kName) {
        const std::string_view w = out.back().text;
        if (w == "in" || w == "for" || w == "and" || w == "or" || w == "not" || w == "if" ||
            w == "else" || w == "return" || w == "yield" || w == "import" || w == "as") {
          after_value = false;
        }
      }
      out.push_back({TokKind::kOpen, text.substr(i, 1), context(), static_cast<int>(display.size())});
      display.push_back(c != '{' && !after_value);
      ++i;
      continue;
    }
    if (c == ')' || c == ']' || c == '}') {
      if (!display.empty()) display.pop_back();
      out.push_back({TokKind::kClose, text.substr(i, 1), context(), static_cast<int>(display.size())});
      ++i;
      continue;
    }
    if (std::isspace(c) || c == '\\') {
      ++i;
      continue;
    }
    // Operators: the longest of the multi-character ones, else one character.
    static constexpr std::string_view kOps[] = {"**=", "//=", ">>=", "<<=", ":=", "==", "!=", "<=",
                                                ">=", "+=",  "-=",  "*=",  "/=", "%=", "&=", "|=",
                                                "^=", "@=",  "->",  "**",  "//"};
    size_t len = 1;
    for (std::string_view op : kOps) {
      if (text.substr(i, op.size()) == op) {
        len = op.size();
        break;
      }
    }
    out.push_back({TokKind::kOp, text.substr(i, len), context(), static_cast<int>(display.size())});
    i += len;
  }
  return out;
}

bool IsAugmented(std::string_view op) {
  return op.size() >= 2 && op.back() == '=' && op != "==" && op != "!=" && op != "<=" &&
         op != ">=" && op != ":=";
}

// Whether tokens [b, e) bind `name` as an assignment target: the name at top level or in
// tuple/list displays, not after a '.', not inside a call or subscript. self_attribute:
// "self . name" instead.
bool TargetBinds(const std::vector<Tok>& t, size_t b, size_t e, std::string_view name,
                 bool self_attribute) {
  for (size_t k = b; k < e && k < t.size(); ++k) {
    if (t[k].kind != TokKind::kName || !t[k].binding_context) continue;
    if (self_attribute) {
      if (t[k].text == "self" && k + 2 < e && t[k + 1].text == "." && t[k + 2].text == name &&
          (k + 3 >= e || (t[k + 3].text != "." && t[k + 3].text != "(" && t[k + 3].text != "["))) {
        return true;
      }
      continue;
    }
    if (t[k].text != name) continue;
    if (k > b && t[k - 1].text == ".") continue;
    if (k + 1 < e && (t[k + 1].text == "." || t[k + 1].text == "(" || t[k + 1].text == "[")) {
      continue;  // x.attr = / x(...) / x[i] = : not a binding of x
    }
    return true;
  }
  return false;
}

// First top-level (depth 0) token at or after `from` whose text is `what`; t.size() if none.
size_t FindTop(const std::vector<Tok>& t, size_t from, std::string_view what) {
  for (size_t k = from; k < t.size(); ++k) {
    if (t[k].depth == 0 && t[k].text == what) return k;
  }
  return t.size();
}

bool WalrusBinds(const std::vector<Tok>& t, std::string_view name) {
  for (size_t k = 0; k + 1 < t.size(); ++k) {
    if (t[k].kind == TokKind::kName && t[k].text == name && t[k + 1].text == ":=") return true;
  }
  return false;
}

// "def name(...)": binds `name` in the scope holding the statement.
bool DefBindsName(const std::vector<Tok>& t, std::string_view name) {
  const size_t d = FindTop(t, 0, "def");
  return d + 1 < t.size() && t[d + 1].text == name;
}

// A parameter `name`: binds it in the function's own scope. The first name of each
// comma-separated item inside the parentheses (defaults and annotations are uses).
bool DefBindsParameter(const std::vector<Tok>& t, std::string_view name) {
  const size_t open = FindTop(t, FindTop(t, 0, "def"), "(");
  bool item_start = true;
  for (size_t k = open + 1; k < t.size(); ++k) {
    if (t[k].depth == 0) break;  // the closing parenthesis
    if (t[k].depth == 1 && t[k].text == ",") {
      item_start = true;
      continue;
    }
    if (t[k].depth == 1 && t[k].kind == TokKind::kName && item_start) {
      if (t[k].text == name) return true;
      item_start = false;
    }
  }
  return false;
}

std::optional<std::string> Quoted(std::string_view s, size_t from = 0) {
  const size_t a = s.find('\'', from);
  if (a == std::string_view::npos) return std::nullopt;
  const size_t b = s.find('\'', a + 1);
  if (b == std::string_view::npos || b == a + 1) return std::nullopt;
  return std::string(s.substr(a + 1, b - a - 1));
}

SourceSpan Cover(const SourceSpan& a, const SourceSpan& b) {
  SourceSpan out = a;
  if (b.begin_byte < out.begin_byte) {
    out.begin_byte = b.begin_byte;
    out.begin = b.begin;
  }
  if (b.end_byte > out.end_byte) {
    out.end_byte = b.end_byte;
    out.end = b.end;
  }
  return out;
}

}  // namespace

std::optional<std::string> ErrorName(std::string_view kind, std::string_view message,
                                     bool* on_module) {
  if (on_module) *on_module = false;
  if (kind == "NameError" || kind == "UnboundLocalError") return Quoted(message);
  if (kind == "AttributeError") {
    if (message.rfind("module '", 0) == 0) {
      if (on_module) *on_module = true;
      return Quoted(message);
    }
    const size_t has = message.find("has no attribute '");
    if (has == std::string_view::npos) return std::nullopt;
    return Quoted(message, has + std::string_view("has no attribute ").size());
  }
  return std::nullopt;
}

bool StatementBinds(cfg::StmtKind kind, std::string_view text, std::string_view name,
                    bool self_attribute) {
  const std::vector<Tok> t = Lex(text);
  if (!self_attribute && WalrusBinds(t, name)) return true;
  using K = cfg::StmtKind;
  switch (kind) {
    case K::kAssign: {
      // Targets: everything before the last top-level '=' (a lambda's defaults end it).
      size_t last = t.size();
      for (size_t k = 0; k < t.size(); ++k) {
        if (t[k].depth == 0 && t[k].text == "lambda") break;
        if (t[k].depth == 0 && t[k].text == "=") last = k;
      }
      return last < t.size() && TargetBinds(t, 0, last, name, self_attribute);
    }
    case K::kAugAssign: {
      for (size_t k = 0; k < t.size(); ++k) {
        if (t[k].depth == 0 && t[k].kind == TokKind::kOp && IsAugmented(t[k].text)) {
          return TargetBinds(t, 0, k, name, self_attribute);
        }
      }
      return false;
    }
    case K::kAnnAssign:
      return TargetBinds(t, 0, FindTop(t, 0, ":"), name, self_attribute);
    case K::kFor:
    case K::kAsyncFor:
    case K::kComprehensionFor: {
      const size_t f = FindTop(t, 0, "for");
      if (f == t.size()) return false;
      return TargetBinds(t, f + 1, FindTop(t, f + 1, "in"), name, self_attribute);
    }
    case K::kFunctionDef:
    case K::kAsyncFunctionDef:
      return DefBindsName(t, name) || (!self_attribute && DefBindsParameter(t, name));
    case K::kClassDef: {
      const size_t c = FindTop(t, 0, "class");
      return !self_attribute && c + 1 < t.size() && t[c + 1].text == name;
    }
    case K::kImport: {
      if (self_attribute) return false;
      // "import a.b as c, d" binds c, d; "from m import x as y, z" binds y, z.
      const size_t imp = FindTop(t, 0, "import");
      const bool from = !t.empty() && t[0].text == "from";
      size_t k = imp + 1;
      while (k < t.size()) {
        size_t end = k;
        while (end < t.size() && !(t[end].text == "," && t[end].depth <= 1)) ++end;
        std::string_view bound;
        for (size_t j = k; j < end; ++j) {
          if (t[j].kind != TokKind::kName) continue;
          if (bound.empty()) bound = t[j].text;
          if (t[j].text == "as" && j + 1 < end) bound = t[j + 1].text;
        }
        if (!from && bound.empty()) break;
        if (bound == name) return true;
        k = end + 1;
      }
      return false;
    }
    case K::kWith:
    case K::kAsyncWith:
    case K::kExcept: {
      for (size_t k = 0; k + 1 < t.size(); ++k) {
        if (t[k].depth != 0 || t[k].text != "as") continue;
        size_t end = k + 1;
        while (end < t.size() && !(t[end].depth == 0 && (t[end].text == "," || t[end].text == ":"))) {
          ++end;
        }
        if (TargetBinds(t, k + 1, end, name, self_attribute)) return true;
      }
      return false;
    }
    default:
      return false;
  }
}

ErrorCause CauseOfError(const cfg::ProgramCfg& program, std::string_view source,
                        std::string_view kind, std::string_view message,
                        const SourceSpan& raising) {
  ErrorCause out;
  out.kind = std::string(kind);
  out.span = raising;
  bool on_module = false;
  std::optional<std::string> name = ErrorName(kind, message, &on_module);
  if (!name || name->empty() || !program.parsed() || program.scopes().empty()) return out;
  const std::string_view use = source.substr(
      std::min<size_t>(raising.begin_byte, source.size()),
      raising.end_byte > raising.begin_byte ? raising.end_byte - raising.begin_byte : 0);
  bool self_attribute = false;
  if (kind == "AttributeError" && !on_module) {
    // Only self.<name>: an attribute missing on any other object is not a naming slip.
    const std::vector<Tok> t = Lex(use);
    bool found = false;
    for (size_t k = 0; k + 2 < t.size(); ++k) {
      if (t[k].text == "self" && t[k + 1].text == "." && t[k + 2].text == *name) found = true;
    }
    if (!found) return out;
    self_attribute = true;
  }
  out.name = *name;
  out.name_error = true;

  // The scope of the use (the innermost scope with a statement containing it) and the scopes
  // enclosing it; self attributes: every scope (the class's other methods).
  const auto& scopes = program.scopes();
  int32_t use_scope = 0;
  uint32_t best = UINT32_MAX;
  for (size_t s = 0; s < scopes.size(); ++s) {
    for (cfg::BlockId b = 0; b < scopes[s].block_count(); ++b) {
      for (const cfg::Statement& st : scopes[s].block(b).statements) {
        if (st.span.begin_byte <= raising.begin_byte && raising.end_byte <= st.span.end_byte &&
            st.span.end_byte - st.span.begin_byte < best) {
          best = st.span.end_byte - st.span.begin_byte;
          use_scope = static_cast<int32_t>(s);
        }
      }
    }
  }
  std::vector<bool> searched(scopes.size(), self_attribute);
  for (int32_t s = use_scope; s >= 0; s = scopes[static_cast<size_t>(s)].parent) {
    searched[static_cast<size_t>(s)] = true;
  }
  // A def statement lies in its enclosing scope, but its parameters bind in the function's
  // own: they count when that function is searched (its header starts where the def does).
  std::vector<uint32_t> searched_headers;
  for (size_t s = 0; s < scopes.size(); ++s) {
    if (searched[s] && scopes[s].kind == cfg::ScopeKind::kFunction) {
      searched_headers.push_back(scopes[s].header_span.begin_byte);
    }
  }
  for (size_t s = 0; s < scopes.size(); ++s) {
    for (cfg::BlockId b = 0; b < scopes[s].block_count(); ++b) {
      for (const cfg::Statement& st : scopes[s].block(b).statements) {
        if (st.span.end_byte > source.size() || st.span.empty()) continue;
        const std::string_view text =
            source.substr(st.span.begin_byte, st.span.end_byte - st.span.begin_byte);
        bool binds = false;
        if (st.kind == cfg::StmtKind::kFunctionDef || st.kind == cfg::StmtKind::kAsyncFunctionDef) {
          const std::vector<Tok> t = Lex(text);
          binds = (searched[s] && DefBindsName(t, *name)) ||
                  (!self_attribute && DefBindsParameter(t, *name) &&
                   std::find(searched_headers.begin(), searched_headers.end(),
                             st.span.begin_byte) != searched_headers.end());
        } else {
          binds = searched[s] && StatementBinds(st.kind, text, *name, self_attribute);
        }
        if (binds) out.bindings.push_back(st.span);
      }
    }
  }
  std::sort(out.bindings.begin(), out.bindings.end(),
            [](const SourceSpan& a, const SourceSpan& b) { return a.begin_byte < b.begin_byte; });
  out.bindings.erase(std::unique(out.bindings.begin(), out.bindings.end()), out.bindings.end());
  if (out.bindings.empty()) {
    // Bound nowhere: the binding that should have matched lies somewhere between the
    // scope's header and the use.
    // A comprehension or lambda has no statements of its own to bind a name: its function.
    int32_t home = use_scope;
    while (home > 0 && (scopes[static_cast<size_t>(home)].kind == cfg::ScopeKind::kComprehension ||
                        scopes[static_cast<size_t>(home)].kind == cfg::ScopeKind::kLambda)) {
      home = scopes[static_cast<size_t>(home)].parent;
    }
    const cfg::FunctionCfg& scope = scopes[static_cast<size_t>(std::max(home, 0))];
    SourceSpan from = scope.kind == cfg::ScopeKind::kModule ? raising : scope.header_span;
    if (scope.kind == cfg::ScopeKind::kModule) {
      for (cfg::BlockId b = 0; b < scope.block_count(); ++b) {
        for (const cfg::Statement& st : scope.block(b).statements) {
          if (st.span.begin_byte < from.begin_byte) from = st.span;
        }
      }
    }
    out.span = Cover(raising, from);
    return out;
  }
  for (const SourceSpan& s : out.bindings) out.span = Cover(out.span, s);
  return out;
}

}  // namespace egca::gates
