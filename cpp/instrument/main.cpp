// egca-cpp-instrument: source-to-source instrumentation of a C++ candidate for per-statement
// state snapshots (LibTooling + Rewriter). Reads the candidate from stdin, writes the
// instrumented candidate to stdout with the same line numbers (insertions never add
// newlines), so every event's line is the candidate's own.
//
// For every function defined in the file, every statement of a compound statement gets
//   egca_rt::Before(line, plo, phi, "x", x, ...);   before it, and
//   egca_rt::After(line, plo, phi, "x", x, ...);    after it (not after return/break/...),
// and `return E;` becomes `return egca_rt::Ret(line, plo, phi, E);` when E has a type the
// runtime can print. (plo, phi) is the line range of the innermost enclosing if / loop /
// switch (0 0: none), used to attribute control-flow divergences. The variables passed are
// the parameters and locals in scope that are initialized at that point (a local of
// builtin type declared without an initializer is never read), excluding arrays, pointers
// and lambdas (no uninitialized or out-of-scope read by construction). Non-compound bodies
// of if/for/while are wrapped in braces so their statement is instrumented too.
//
// Runs as a separate process (with a time limit) so a pathological candidate cannot hang
// or crash the caller. Exit 0: instrumented; 1: the candidate does not parse (message on
// stderr); 2: usage.
#include <clang/AST/ASTConsumer.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Lex/Lexer.h>
#include <clang/Rewrite/Core/Rewriter.h>
#include <clang/Tooling/Tooling.h>

#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using namespace clang;

struct Var {
  std::string name;
};

struct Parent {
  unsigned lo = 0, hi = 0;
};

bool Printable(QualType t) {
  t = t.getNonReferenceType().getCanonicalType();
  if (t->isArrayType() || t->isPointerType() || t->isFunctionType() ||
      t->isMemberPointerType()) {
    return false;
  }
  if (const auto* rd = t->getAsCXXRecordDecl()) {
    if (rd->isLambda()) return false;
  }
  return t->isBuiltinType() || t->isEnumeralType() || t->isRecordType();
}

class Instrumenter {
 public:
  Instrumenter(ASTContext& ctx, Rewriter& rw) : ctx_(ctx), sm_(ctx.getSourceManager()), rw_(rw) {}

  void Function(FunctionDecl* fd) {
    if (!fd->hasBody() || !fd->isThisDeclarationADefinition()) return;
    if (!sm_.isWrittenInMainFile(fd->getLocation())) return;
    if (fd->isMain()) return;
    auto* body = dyn_cast<CompoundStmt>(fd->getBody());
    if (body == nullptr) return;
    std::vector<Var> scope;
    for (ParmVarDecl* p : fd->parameters()) {
      if (!p->getName().empty() && Printable(p->getType())) scope.push_back({p->getNameAsString()});
    }
    Compound(body, scope, Parent{});
  }

 private:
  unsigned Line(SourceLocation loc) { return sm_.getSpellingLineNumber(loc); }

  std::string Args(const std::vector<Var>& scope) {
    std::string out;
    for (const Var& v : scope) out += ", \"" + v.name + "\", (" + v.name + ")";
    return out;
  }

  std::string Call(const char* fn, unsigned line, Parent p, const std::vector<Var>& scope) {
    return std::string("egca_rt::") + fn + "(" + std::to_string(line) + ", " +
           std::to_string(p.lo) + ", " + std::to_string(p.hi) + Args(scope) + ");";
  }

  // Location just past the statement's last token (its ';' when it has one).
  SourceLocation EndOf(Stmt* s) {
    SourceLocation end = s->getEndLoc();
    if (end.isInvalid() || end.isMacroID()) return {};
    const LangOptions& lo = ctx_.getLangOpts();
    if (isa<CompoundStmt>(s) || isa<IfStmt>(s) || isa<ForStmt>(s) || isa<WhileStmt>(s) ||
        isa<CXXForRangeStmt>(s) || isa<SwitchStmt>(s) || isa<CXXTryStmt>(s)) {
      // Ends with a '}' or with its (non-compound) body, which was handled as a statement.
      Stmt* last = s;
      if (auto* i = dyn_cast<IfStmt>(s)) last = i->getElse() ? i->getElse() : i->getThen();
      else if (auto* f = dyn_cast<ForStmt>(s)) last = f->getBody();
      else if (auto* w = dyn_cast<WhileStmt>(s)) last = w->getBody();
      else if (auto* r = dyn_cast<CXXForRangeStmt>(s)) last = r->getBody();
      if (last != s && !isa<CompoundStmt>(last)) return EndOf(last);
      return Lexer::getLocForEndOfToken(end, 0, sm_, lo);
    }
    SourceLocation semi = Lexer::findLocationAfterToken(end, tok::semi, sm_, lo, false);
    if (semi.isValid()) return semi;
    return Lexer::getLocForEndOfToken(end, 0, sm_, lo);
  }

  // The target of an assignment statement (`a[i] = ...`, `s.x += ...`, `++a[i]`) as source
  // text, when reading it again has no side effects: elements of arrays and members are
  // then snapshotted too. "" otherwise.
  std::string AssignedLvalue(Stmt* s) {
    auto* e = dyn_cast<Expr>(s);
    if (e == nullptr) return "";
    e = e->IgnoreParenImpCasts();
    Expr* lhs = nullptr;
    if (auto* b = dyn_cast<BinaryOperator>(e); b != nullptr && b->isAssignmentOp()) {
      lhs = b->getLHS();
    } else if (auto* u = dyn_cast<UnaryOperator>(e); u != nullptr && u->isIncrementDecrementOp()) {
      lhs = u->getSubExpr();
    } else if (auto* op = dyn_cast<CXXOperatorCallExpr>(e); op != nullptr && op->isAssignmentOp()) {
      lhs = op->getArg(0);
    }
    if (lhs == nullptr || lhs->HasSideEffects(ctx_) || !Printable(lhs->getType())) return "";
    if (isa<DeclRefExpr>(lhs->IgnoreParenImpCasts())) return "";  // a local: already in scope
    CharSourceRange range = CharSourceRange::getTokenRange(lhs->getSourceRange());
    if (range.getBegin().isMacroID() || range.getEnd().isMacroID()) return "";
    std::string text = Lexer::getSourceText(range, sm_, ctx_.getLangOpts()).str();
    if (text.empty() || text.size() > 60 ||
        text.find_first_of("\"\\\t\n\r") != std::string::npos) {
      return "";
    }
    return text;
  }

  void Declare(Stmt* s, std::vector<Var>* scope) {
    auto* ds = dyn_cast<DeclStmt>(s);
    if (ds == nullptr) return;
    for (Decl* d : ds->decls()) {
      auto* vd = dyn_cast<VarDecl>(d);
      if (vd == nullptr || vd->getName().empty() || !Printable(vd->getType())) continue;
      bool builtin = vd->getType().getNonReferenceType().getCanonicalType()->isBuiltinType() ||
                     vd->getType()->isEnumeralType();
      if (builtin && !vd->hasInit()) continue;  // never read an uninitialized local
      if (vd->getType()->isReferenceType() && !vd->hasInit()) continue;
      scope->push_back({vd->getNameAsString()});
    }
  }

  void Compound(CompoundStmt* cs, std::vector<Var> scope, Parent parent) {
    for (Stmt* child : cs->body()) Statement(child, &scope, parent, true);
  }

  // A body that is not a compound statement: braces around it, instrumented as one.
  void Body(Stmt* body, const std::vector<Var>& scope, Parent parent) {
    if (body == nullptr) return;
    if (auto* cs = dyn_cast<CompoundStmt>(body)) {
      Compound(cs, scope, parent);
      return;
    }
    if (isa<NullStmt>(body)) return;
    SourceLocation begin = body->getBeginLoc();
    SourceLocation end = EndOf(body);
    if (begin.isInvalid() || begin.isMacroID() || end.isInvalid()) return;
    // Statement() inserts its snapshot before `begin` first; InsertTextBefore puts later
    // text in front of earlier text, so the brace lands before the snapshot.
    std::vector<Var> inner = scope;
    Statement(body, &inner, parent, true);
    rw_.InsertTextBefore(begin, "{ ");
    rw_.InsertTextAfter(end, " }");
  }

  void Statement(Stmt* s, std::vector<Var>* scope, Parent parent, bool instrument) {
    if (s == nullptr) return;
    SourceLocation begin = s->getBeginLoc();
    if (begin.isInvalid() || begin.isMacroID() || !sm_.isWrittenInMainFile(begin)) return;
    if (isa<NullStmt>(s) || isa<LabelStmt>(s) || isa<SwitchCase>(s)) return;
    const unsigned line = Line(begin);
    const bool jump = isa<ReturnStmt>(s) || isa<BreakStmt>(s) || isa<ContinueStmt>(s) ||
                      isa<GotoStmt>(s);
    // A declaration's own variable is not in scope before it.
    if (instrument) rw_.InsertTextBefore(begin, Call("Before", line, parent, *scope) + " ");

    Parent here{line, Line(s->getEndLoc())};
    if (auto* i = dyn_cast<IfStmt>(s)) {
      std::vector<Var> inner = *scope;
      if (i->getConditionVariable() != nullptr) Declare(i->getConditionVariableDeclStmt(), &inner);
      Body(i->getThen(), inner, here);
      if (Stmt* e = i->getElse()) {
        if (isa<IfStmt>(e)) {
          // else-if chain: its condition is part of this decision.
          Statement(e, &inner, here, false);
        } else {
          Body(e, inner, here);
        }
      }
    } else if (auto* f = dyn_cast<ForStmt>(s)) {
      std::vector<Var> inner = *scope;
      if (f->getInit() != nullptr) Declare(f->getInit(), &inner);
      Body(f->getBody(), inner, here);
    } else if (auto* w = dyn_cast<WhileStmt>(s)) {
      Body(w->getBody(), *scope, here);
    } else if (auto* d = dyn_cast<DoStmt>(s)) {
      Body(d->getBody(), *scope, here);
    } else if (auto* r = dyn_cast<CXXForRangeStmt>(s)) {
      std::vector<Var> inner = *scope;
      if (VarDecl* lv = r->getLoopVariable(); lv != nullptr && Printable(lv->getType())) {
        inner.push_back({lv->getNameAsString()});
      }
      Body(r->getBody(), inner, here);
    } else if (auto* sw = dyn_cast<SwitchStmt>(s)) {
      if (auto* cs = dyn_cast_or_null<CompoundStmt>(sw->getBody())) {
        std::vector<Var> inner = *scope;
        for (Stmt* c : cs->body()) {
          Stmt* inner_stmt = c;
          while (auto* sc = dyn_cast<SwitchCase>(inner_stmt)) inner_stmt = sc->getSubStmt();
          Statement(inner_stmt, &inner, here, !isa<SwitchCase>(c) || inner_stmt != c);
        }
      }
    } else if (auto* cs = dyn_cast<CompoundStmt>(s)) {
      Compound(cs, *scope, parent);
    } else if (auto* ret = dyn_cast<ReturnStmt>(s)) {
      Expr* e = ret->getRetValue();
      if (e != nullptr && !isa<InitListExpr>(e->IgnoreImplicit()) && Printable(e->getType()) &&
          !e->getBeginLoc().isMacroID() && !e->getEndLoc().isMacroID() &&
          !e->getType()->isVoidType()) {
        SourceLocation eb = e->getBeginLoc();
        SourceLocation ee = Lexer::getLocForEndOfToken(e->getEndLoc(), 0, sm_, ctx_.getLangOpts());
        if (eb.isValid() && ee.isValid()) {
          rw_.InsertTextBefore(eb, "egca_rt::Ret(" + std::to_string(line) + ", " +
                                       std::to_string(parent.lo) + ", " +
                                       std::to_string(parent.hi) + ", (");
          rw_.InsertTextAfter(ee, "))");
        }
      }
    }
    Declare(s, scope);
    if (instrument && !jump) {
      SourceLocation end = EndOf(s);
      if (end.isValid() && !end.isMacroID()) {
        std::vector<Var> after = *scope;
        if (std::string target = AssignedLvalue(s); !target.empty()) after.push_back({target});
        rw_.InsertTextAfter(end, " " + Call("After", line, parent, after));
      }
    }
  }

  ASTContext& ctx_;
  SourceManager& sm_;
  Rewriter& rw_;
};

class Visitor : public RecursiveASTVisitor<Visitor> {
 public:
  explicit Visitor(Instrumenter* in) : in_(in) {}
  bool VisitFunctionDecl(FunctionDecl* fd) {
    in_->Function(fd);
    return true;
  }
  bool shouldVisitTemplateInstantiations() const { return false; }

 private:
  Instrumenter* in_;
};

class Consumer : public ASTConsumer {
 public:
  Consumer(Rewriter& rw, bool* ok) : rw_(rw), ok_(ok) {}
  void HandleTranslationUnit(ASTContext& ctx) override {
    if (ctx.getDiagnostics().hasErrorOccurred()) {
      *ok_ = false;
      return;
    }
    rw_.setSourceMgr(ctx.getSourceManager(), ctx.getLangOpts());
    Instrumenter in(ctx, rw_);
    Visitor v(&in);
    v.TraverseDecl(ctx.getTranslationUnitDecl());
    const RewriteBuffer* buf = rw_.getRewriteBufferFor(ctx.getSourceManager().getMainFileID());
    if (buf != nullptr) {
      *out_ = std::string(buf->begin(), buf->end());
    } else {
      const llvm::MemoryBufferRef mb =
          ctx.getSourceManager().getBufferOrFake(ctx.getSourceManager().getMainFileID());
      *out_ = mb.getBuffer().str();
    }
    *ok_ = true;
  }
  std::string* out_ = nullptr;

 private:
  Rewriter& rw_;
  bool* ok_;
};

class Action : public ASTFrontendAction {
 public:
  Action(std::string* out, bool* ok) : out_(out), ok_(ok) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance&, StringRef) override {
    auto c = std::make_unique<Consumer>(rw_, ok_);
    c->out_ = out_;
    return c;
  }

 private:
  Rewriter rw_;
  std::string* out_;
  bool* ok_;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args = {"-std=c++17", "-w", "-Wno-register", "-fsyntax-only"};
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  std::string source((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  // The runtime's declarations (egca_rt) are not needed to parse the candidate.
  std::string out;
  bool ok = false;
  bool ran = clang::tooling::runToolOnCodeWithArgs(std::make_unique<Action>(&out, &ok), source,
                                                   args, "candidate.cpp", "egca-cpp-instrument");
  if (!ran || !ok) {
    std::cerr << "egca-cpp-instrument: the candidate does not parse\n";
    return 1;
  }
  std::cout << out;
  return 0;
}
