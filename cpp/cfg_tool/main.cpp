// egca-cpp-cfg: statement-level control-flow graphs and structural facts of a C++ program,
// from Clang (clang::CFG::buildCFG on every function the file defines). Reads the program
// from stdin; writes one record per line, tab-separated, byte offsets into the input:
//
//   F name qualified_name begin end header_end first_line      a function (scope)
//   B id kind terminator                                       its blocks: entry is 0,
//                                                              exit the last id
//   S block kind loop_depth begin end                          a statement of the block
//   E from to edge_kind                                        an edge, successor order
//   L loop_kind depth begin end                                a loop (depth 1 = outermost
//                                                              of its function)
//   C callee caller begin end                                  a call ("std::sort";
//                                                              ".name" for a method)
//   R caller callee direct begin end                           a call on a call-graph cycle
//   T structure begin end                                      a container-typed declaration
//
// Statement level, as egca::cfg's Python CFGs: Clang's CFG lists every evaluated
// sub-expression as an element; only the statements of compound statements (and the
// non-compound bodies of if / loops) are kept, and a control statement contributes its
// header ("if (c)", "for (...)", "while (c)", "switch (x)", "case 1:", "catch (...)") to
// the block it terminates or labels. Blocks left without a statement (a for's increment, the
// right-hand side of && / ||, the arms of ?:) are contracted: their predecessors get edges
// to where they lead, with the predecessor's edge kind.
//
// A separate process with a time limit (as egca-cpp-instrument), compiled -fno-rtti.
// Exit 0: done; 1: the program does not parse (first error on stderr); 2: usage.
#include <clang/AST/ASTConsumer.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Analysis/CFG.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/FrontendAction.h>
#include <clang/Lex/Lexer.h>
#include <clang/Tooling/Tooling.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace clang;

// The names egca::cfg uses (StmtKindName, TerminatorName, EdgeKindName).
struct RootInfo {
  int loop_depth = 0;
  bool elif = false;
};

struct OutStmt {
  std::string kind;
  int loop_depth = 0;
  unsigned begin = 0, end = 0;
};

struct OutBlock {
  std::string kind = "basic";  // entry / exit / basic
  std::string terminator = "none";
  std::vector<OutStmt> statements;
  std::vector<std::pair<int, std::string>> successors;  // (out id, edge kind)
};

const char* StructureOf(const std::string& record) {
  static const std::map<std::string, const char*> kMap = {
      {"std::vector", "list"},         {"std::list", "list"},
      {"std::stack", "list"},          {"std::array", "list"},
      {"std::map", "dict"},            {"std::unordered_map", "dict"},
      {"std::multimap", "dict"},       {"std::unordered_multimap", "dict"},
      {"std::set", "set"},             {"std::unordered_set", "set"},
      {"std::multiset", "set"},        {"std::unordered_multiset", "set"},
      {"std::priority_queue", "heap"}, {"std::deque", "deque"},
      {"std::queue", "deque"},
  };
  auto it = kMap.find(record);
  return it == kMap.end() ? nullptr : it->second;
}

class Analyzer {
 public:
  explicit Analyzer(ASTContext& ctx)
      : ctx_(ctx), sm_(ctx.getSourceManager()), lo_(ctx.getLangOpts()) {}

  // Byte range [begin, end) of `r` in the main file (macro uses: the expansion); false
  // when it is not in the main file.
  bool Range(SourceRange r, unsigned* begin, unsigned* end) {
    CharSourceRange cr = Lexer::makeFileCharRange(CharSourceRange::getTokenRange(r), sm_, lo_);
    if (cr.isInvalid()) return false;
    if (!sm_.isWrittenInMainFile(cr.getBegin())) return false;
    *begin = sm_.getFileOffset(cr.getBegin());
    *end = sm_.getFileOffset(cr.getEnd());
    return *end >= *begin;
  }
  // [begin of `from`, end of the token at `to`).
  bool Range(SourceLocation from, SourceLocation to, unsigned* begin, unsigned* end) {
    return Range(SourceRange(from, to), begin, end);
  }

  void Function(FunctionDecl* fd) {
    if (!fd->doesThisDeclarationHaveABody() || fd->getBody() == nullptr) return;
    if (!sm_.isWrittenInMainFile(fd->getLocation())) return;
    unsigned begin = 0, end = 0, body_begin = 0, body_end = 0;
    if (!Range(fd->getSourceRange(), &begin, &end)) return;
    // The header ends where the body's '{' begins.
    const unsigned header_end =
        Range(fd->getBody()->getSourceRange(), &body_begin, &body_end) ? body_begin : begin;
    const std::string qualified = fd->getQualifiedNameAsString();
    defined_.insert(fd->getCanonicalDecl());
    roots_.clear();
    alias_.clear();
    label_depth_.clear();
    Walk(fd->getBody(), 0, /*is_root=*/false);
    CFG::BuildOptions options;
    std::unique_ptr<CFG> cfg = CFG::buildCFG(fd, fd->getBody(), &ctx_, options);
    out_ << "F\t" << fd->getNameAsString() << "\t" << qualified << "\t" << begin << "\t" << end
         << "\t" << header_end << "\t" << sm_.getSpellingLineNumber(fd->getBeginLoc()) << "\n";
    if (cfg) {
      Blocks(*cfg);
    } else {
      // Not built (an unsupported construct): Entry -> Exit, as egca::cfg does for nothing.
      out_ << "B\t0\tentry\tnone\nB\t1\texit\tnone\nE\t0\t1\tnormal\n";
    }
    Facts(fd, qualified);
  }

  // Calls on cycles of the call graph among the file's own functions.
  void Recursion() {
    std::map<const Decl*, std::set<const Decl*>> graph;
    for (const Call& c : calls_) {
      if (c.callee != nullptr && defined_.count(c.callee)) graph[c.caller].insert(c.callee);
    }
    std::function<bool(const Decl*, const Decl*, std::set<const Decl*>&)> reaches =
        [&](const Decl* from, const Decl* to, std::set<const Decl*>& seen) {
          if (from == to) return true;
          if (!seen.insert(from).second) return false;
          for (const Decl* next : graph[from]) {
            if (reaches(next, to, seen)) return true;
          }
          return false;
        };
    for (const Call& c : calls_) {
      if (c.callee == nullptr || !defined_.count(c.callee)) continue;
      std::set<const Decl*> seen;
      if (!reaches(c.callee, c.caller, seen)) continue;
      out_ << "R\t" << c.caller_name << "\t" << c.callee_name << "\t"
           << (c.callee == c.caller ? 1 : 0) << "\t" << c.begin << "\t" << c.end << "\n";
    }
  }

  std::string output() const { return out_.str(); }

 private:
  struct Call {
    const Decl* caller = nullptr;
    const Decl* callee = nullptr;  // canonical; null when not a plain function
    std::string caller_name, callee_name;
    unsigned begin = 0, end = 0;
  };

  static bool IsLoop(const Stmt* s) {
    return isa<ForStmt>(s) || isa<WhileStmt>(s) || isa<DoStmt>(s) || isa<CXXForRangeStmt>(s);
  }

  // Marks the statements of a function body (see the file comment) with their loop depth
  // (loops of the function enclosing them) and records its loops.
  void Walk(Stmt* s, int depth, bool is_root) {
    if (s == nullptr) return;
    if (auto* c = dyn_cast<CompoundStmt>(s)) {
      for (Stmt* child : c->body()) Walk(child, depth, true);
      return;
    }
    if (auto* sc = dyn_cast<SwitchCase>(s)) {
      label_depth_[sc] = depth;
      Walk(sc->getSubStmt(), depth, true);
      return;
    }
    if (auto* l = dyn_cast<LabelStmt>(s)) {
      Walk(l->getSubStmt(), depth, true);
      return;
    }
    if (auto* a = dyn_cast<AttributedStmt>(s)) {
      Walk(a->getSubStmt(), depth, true);
      return;
    }
    if (!is_root) return;
    roots_[s].loop_depth = depth;
    // Clang's CFG lists the expression a full-expression wraps (temporaries: `throw E(..)`,
    // `v.push_back(std::string(..))`), not the wrapper: it stands for the statement too.
    for (const Stmt* inner = s;;) {
      if (const auto* fe = dyn_cast<FullExpr>(inner)) {
        inner = fe->getSubExpr();
      } else if (const auto* bt = dyn_cast<CXXBindTemporaryExpr>(inner)) {
        inner = bt->getSubExpr();
      } else if (const auto* mt = dyn_cast<MaterializeTemporaryExpr>(inner)) {
        inner = mt->getSubExpr();
      } else if (const auto* ic = dyn_cast<ImplicitCastExpr>(inner)) {
        inner = ic->getSubExpr();
      } else {
        if (inner != s) alias_[inner] = s;
        break;
      }
    }
    if (auto* i = dyn_cast<IfStmt>(s)) {
      Walk(i->getThen(), depth, true);
      if (Stmt* e = i->getElse()) {
        if (isa<IfStmt>(e)) roots_[e].elif = true;
        Walk(e, depth, true);
        if (isa<IfStmt>(e)) roots_[e].elif = true;
      }
    } else if (IsLoop(s)) {
      unsigned b = 0, e = 0;
      if (Range(s->getSourceRange(), &b, &e)) {
        loops_.push_back({isa<ForStmt>(s) || isa<CXXForRangeStmt>(s) ? "for" : "while", depth + 1,
                          b, e});
      }
      Stmt* body = nullptr;
      if (auto* f = dyn_cast<ForStmt>(s)) body = f->getBody();
      if (auto* w = dyn_cast<WhileStmt>(s)) body = w->getBody();
      if (auto* d = dyn_cast<DoStmt>(s)) body = d->getBody();
      if (auto* r = dyn_cast<CXXForRangeStmt>(s)) body = r->getBody();
      Walk(body, depth + 1, true);
    } else if (auto* sw = dyn_cast<SwitchStmt>(s)) {
      Walk(sw->getBody(), depth, true);
    } else if (auto* t = dyn_cast<CXXTryStmt>(s)) {
      Walk(t->getTryBlock(), depth, true);
      for (unsigned h = 0; h < t->getNumHandlers(); ++h) {
        label_depth_[t->getHandler(h)] = depth;
        Walk(t->getHandler(h)->getHandlerBlock(), depth, true);
      }
    }
  }

  std::string SimpleKind(const Stmt* s) {
    if (isa<DeclStmt>(s)) return "assign";
    if (isa<ReturnStmt>(s)) return "return";
    if (isa<BreakStmt>(s)) return "break";
    if (isa<ContinueStmt>(s)) return "continue";
    if (isa<NullStmt>(s)) return "pass";
    if (isa<CXXThrowExpr>(s)) return "raise";
    if (const auto* e = dyn_cast<Expr>(s)) {
      e = e->IgnoreImplicit()->IgnoreParenImpCasts();
      if (const auto* b = dyn_cast<BinaryOperator>(e)) {
        if (b->getOpcode() == BO_Assign) return "assign";
        if (b->isCompoundAssignmentOp()) return "augassign";
      }
      if (const auto* u = dyn_cast<UnaryOperator>(e)) {
        if (u->isIncrementDecrementOp()) return "augassign";
      }
      if (const auto* op = dyn_cast<CXXOperatorCallExpr>(e)) {
        if (op->getOperator() == OO_Equal) return "assign";
        if (op->isAssignmentOp() || op->getOperator() == OO_PlusPlus ||
            op->getOperator() == OO_MinusMinus) {
          return "augassign";
        }
      }
      if (isa<CXXThrowExpr>(e)) return "raise";
    }
    return "expr";
  }

  // The header statement a terminator contributes, if any.
  bool Header(const Stmt* t, OutStmt* out, std::string* terminator) {
    SourceLocation from = t->getBeginLoc(), to;
    if (const auto* i = dyn_cast<IfStmt>(t)) {
      out->kind = roots_.count(t) && roots_.at(t).elif ? "elif" : "if";
      *terminator = "if";
      to = i->getRParenLoc();
    } else if (const auto* w = dyn_cast<WhileStmt>(t)) {
      out->kind = "while";
      *terminator = "while";
      to = w->getRParenLoc();
    } else if (const auto* d = dyn_cast<DoStmt>(t)) {
      out->kind = "while";
      *terminator = "while";
      from = d->getWhileLoc();
      to = d->getRParenLoc();
    } else if (const auto* f = dyn_cast<ForStmt>(t)) {
      out->kind = "for";
      *terminator = "for";
      to = f->getRParenLoc();
    } else if (const auto* r = dyn_cast<CXXForRangeStmt>(t)) {
      out->kind = "for";
      *terminator = "for";
      to = r->getRParenLoc();
    } else if (const auto* s = dyn_cast<SwitchStmt>(t)) {
      out->kind = "match";
      *terminator = "case";
      to = s->getRParenLoc();
    } else if (isa<BreakStmt>(t)) {
      out->kind = "break";
      *terminator = "break";
      to = t->getEndLoc();
    } else if (isa<ContinueStmt>(t)) {
      out->kind = "continue";
      *terminator = "continue";
      to = t->getEndLoc();
    } else if (const auto* tr = dyn_cast<CXXTryStmt>(t)) {
      out->kind = "try";
      *terminator = "except";
      to = tr->getTryLoc();
    } else {
      return false;  // && || ?: goto: expression-level or unstructured, no header
    }
    if (to.isInvalid()) to = t->getEndLoc();
    const auto it = roots_.find(t);
    out->loop_depth = it != roots_.end() ? it->second.loop_depth : 0;
    return Range(from, to, &out->begin, &out->end);
  }

  // The statement a block label contributes ("case 1:", "default:", "catch (E& e)").
  bool LabelHeader(const Stmt* label, OutStmt* out) {
    const auto known = label_depth_.find(label);
    const int depth = known != label_depth_.end() ? known->second : 0;
    SourceLocation from = label->getBeginLoc(), to;
    if (const auto* c = dyn_cast<CaseStmt>(label)) {
      to = c->getColonLoc();
      out->kind = "case";
    } else if (const auto* d = dyn_cast<DefaultStmt>(label)) {
      to = d->getColonLoc();
      out->kind = "case";
    } else if (const auto* h = dyn_cast<CXXCatchStmt>(label)) {
      // "catch (...)": up to the handler's '{', without it.
      out->kind = "except";
      out->loop_depth = depth;
      unsigned b = 0, e = 0, brace = 0, brace_end = 0;
      if (!Range(from, from, &b, &e) || h->getHandlerBlock() == nullptr ||
          !Range(h->getHandlerBlock()->getBeginLoc(), h->getHandlerBlock()->getBeginLoc(), &brace,
                 &brace_end) ||
          brace < b) {
        return false;
      }
      const StringRef text = sm_.getBufferData(sm_.getMainFileID());
      while (brace > b && (text[brace - 1] == ' ' || text[brace - 1] == '\t' ||
                           text[brace - 1] == '\n' || text[brace - 1] == '\r')) {
        --brace;
      }
      out->begin = b;
      out->end = brace;
      return true;
    } else {
      return false;
    }
    out->loop_depth = depth;
    return Range(from, to, &out->begin, &out->end);
  }

  void Blocks(const CFG& cfg) {
    // Kept statements per Clang block, then the contraction.
    const unsigned n = cfg.getNumBlockIDs();
    std::vector<OutBlock> blocks(n);
    std::vector<const CFGBlock*> by_id(n, nullptr);
    for (const CFGBlock* b : cfg) {
      if (b == nullptr) continue;
      by_id[b->getBlockID()] = b;
      OutBlock& ob = blocks[b->getBlockID()];
      if (b == &cfg.getEntry()) ob.kind = "entry";
      if (b == &cfg.getExit()) ob.kind = "exit";
      std::set<const Stmt*> seen;
      std::vector<OutStmt> body;
      for (const CFGElement& e : *b) {
        auto cs = e.getAs<CFGStmt>();
        if (!cs) continue;
        const Stmt* s = cs->getStmt();
        // A multi-declaration DeclStmt is split into synthetic single ones.
        if (const auto* ds = dyn_cast<DeclStmt>(s)) {
          for (auto it = cfg.synthetic_stmt_begin(); it != cfg.synthetic_stmt_end(); ++it) {
            if (it->first == ds) s = it->second;
          }
        }
        if (auto a = alias_.find(s); a != alias_.end()) s = a->second;
        auto root = roots_.find(s);
        if (root == roots_.end() || !seen.insert(s).second) continue;
        OutStmt st;
        st.kind = SimpleKind(s);
        st.loop_depth = root->second.loop_depth;
        if (!Range(s->getSourceRange(), &st.begin, &st.end)) continue;
        body.push_back(st);
      }
      if (const Stmt* label = b->getLabel()) {
        OutStmt st;
        if (LabelHeader(label, &st)) ob.statements.push_back(st);
      }
      ob.statements.insert(ob.statements.end(), body.begin(), body.end());
      if (const Stmt* t = b->getTerminatorStmt()) {
        OutStmt st;
        std::string terminator;
        if (Header(t, &st, &terminator)) {
          ob.terminator = terminator;
          ob.statements.push_back(st);
        }
      } else if (!ob.statements.empty()) {
        const std::string& last = ob.statements.back().kind;
        if (last == "return") ob.terminator = "return";
        if (last == "raise") ob.terminator = "raise";
      }
    }
    // Kept: entry, exit, and blocks with a statement.
    std::vector<int> out_id(n, -1);
    std::vector<unsigned> order;
    order.push_back(cfg.getEntry().getBlockID());
    // Source order of the remaining kept blocks (Clang numbers them backwards).
    std::vector<std::pair<unsigned, unsigned>> basic;  // (first byte, clang id)
    for (unsigned id = 0; id < n; ++id) {
      if (by_id[id] == nullptr || blocks[id].kind != "basic" || blocks[id].statements.empty()) {
        continue;
      }
      basic.push_back({blocks[id].statements.front().begin, id});
    }
    std::sort(basic.begin(), basic.end());
    for (const auto& [byte, id] : basic) order.push_back(id);
    order.push_back(cfg.getExit().getBlockID());
    for (size_t i = 0; i < order.size(); ++i) out_id[order[i]] = static_cast<int>(i);

    // A block that ends in a short-circuit operator (&&, ||, ?:) inside the condition of
    // an if / loop / switch header belongs to that header: its edges go to the header's
    // block only (the statement-level graph enters the condition as one statement).
    std::vector<int> owner(n, -1);
    for (unsigned id = 0; id < n; ++id) {
      const CFGBlock* b = by_id[id];
      if (b == nullptr) continue;
      const Stmt* t = b->getTerminatorStmt();
      if (t == nullptr || !isa<Expr>(t)) continue;
      unsigned tb = 0, te = 0;
      if (!Range(t->getSourceRange(), &tb, &te)) continue;
      for (unsigned h : order) {
        const OutBlock& hb = blocks[h];
        if (h == id || hb.statements.empty()) continue;
        if (hb.terminator != "if" && hb.terminator != "while" && hb.terminator != "for" &&
            hb.terminator != "case") {
          continue;
        }
        const OutStmt& header = hb.statements.back();
        if (tb >= header.begin && tb < header.end) owner[id] = out_id[h];
      }
    }

    // Where an edge into Clang block `id` lands among kept blocks (through contracted ones).
    std::function<void(unsigned, std::set<unsigned>&, std::vector<int>&)> land =
        [&](unsigned id, std::set<unsigned>& seen, std::vector<int>& targets) {
          const int kept = out_id[id] >= 0 ? out_id[id] : owner[id];
          if (kept >= 0) {
            if (std::find(targets.begin(), targets.end(), kept) == targets.end()) {
              targets.push_back(kept);
            }
            return;
          }
          if (!seen.insert(id).second) return;
          for (const auto& succ : by_id[id]->succs()) {
            if (const CFGBlock* s = succ.getReachableBlock()) land(s->getBlockID(), seen, targets);
          }
        };
    for (unsigned id : order) {
      OutBlock& ob = blocks[id];
      const CFGBlock* b = by_id[id];
      if (owner[id] >= 0) {
        ob.successors.push_back({owner[id], "normal"});
        continue;
      }
      int index = 0;
      const int count = static_cast<int>(b->succ_size());
      for (const auto& succ : b->succs()) {
        const CFGBlock* s = succ.getReachableBlock();
        const int i = index++;
        if (s == nullptr) continue;
        std::string kind = "normal";
        const std::string& t = ob.terminator;
        if (t == "if" || t == "while" || t == "for") {
          kind = i == 0 ? "true" : "false";
        } else if (t == "case") {
          kind = i + 1 < count ? "true" : "false";
        } else if (t == "break" || t == "continue" || t == "return") {
          kind = t;
        } else if (t == "raise" || t == "except") {
          kind = "exception";
        }
        std::set<unsigned> seen;
        std::vector<int> targets;
        land(s->getBlockID(), seen, targets);
        for (int target : targets) {
          std::string k = kind;
          // An edge back to a loop header from later in the source: the loop's back edge.
          const OutBlock& tb = blocks[order[target]];
          if (k == "normal" && (tb.terminator == "for" || tb.terminator == "while") &&
              !tb.statements.empty() && !ob.statements.empty() &&
              ob.statements.front().begin > tb.statements.back().begin) {
            k = "loop-back";
          }
          bool dup = false;
          for (const auto& [to, kk] : ob.successors) dup = dup || (to == target && kk == k);
          if (!dup) ob.successors.push_back({target, k});
        }
      }
    }
    for (unsigned id : order) {
      // A switch's cases in source order (Clang lists them backwards), the default last.
      OutBlock& ob = blocks[id];
      if (ob.terminator == "case") {
        std::stable_sort(ob.successors.begin(), ob.successors.end(),
                         [](const auto& a, const auto& b) {
                           return std::make_pair(a.second == "false", a.first) <
                                  std::make_pair(b.second == "false", b.first);
                         });
      }
    }
    for (size_t i = 0; i < order.size(); ++i) {
      const OutBlock& ob = blocks[order[i]];
      out_ << "B\t" << i << "\t" << ob.kind << "\t" << ob.terminator << "\n";
      for (const OutStmt& s : ob.statements) {
        out_ << "S\t" << i << "\t" << s.kind << "\t" << s.loop_depth << "\t" << s.begin << "\t"
             << s.end << "\n";
      }
    }
    for (size_t i = 0; i < order.size(); ++i) {
      for (const auto& [to, kind] : blocks[order[i]].successors) {
        out_ << "E\t" << i << "\t" << to << "\t" << kind << "\n";
      }
    }
  }

  // Loops, calls and containers of one function.
  void Facts(FunctionDecl* fd, const std::string& qualified) {
    for (const auto& l : loops_) {
      out_ << "L\t" << l.kind << "\t" << l.depth << "\t" << l.begin << "\t" << l.end << "\n";
    }
    loops_.clear();
    class Visitor : public RecursiveASTVisitor<Visitor> {
     public:
      Visitor(Analyzer* a, FunctionDecl* fd, std::string qualified)
          : a_(a), fd_(fd), qualified_(std::move(qualified)) {}
      bool VisitCallExpr(CallExpr* call) {
        if (isa<CXXOperatorCallExpr>(call)) return true;
        const FunctionDecl* callee = call->getDirectCallee();
        if (callee == nullptr) return true;
        Call c;
        c.caller = fd_->getCanonicalDecl();
        c.caller_name = qualified_;
        if (isa<CXXMemberCallExpr>(call)) {
          c.callee_name = "." + callee->getNameAsString();
        } else {
          c.callee_name = callee->getQualifiedNameAsString();
        }
        c.callee = callee->getCanonicalDecl();
        if (!a_->Range(call->getSourceRange(), &c.begin, &c.end)) return true;
        a_->out_ << "C\t" << c.callee_name << "\t" << qualified_ << "\t" << c.begin << "\t"
                 << c.end << "\n";
        const std::string& name = c.callee_name;
        if (name == "std::make_heap" || name == "std::push_heap" || name == "std::pop_heap") {
          a_->out_ << "T\theap\t" << c.begin << "\t" << c.end << "\n";
        }
        a_->calls_.push_back(std::move(c));
        return true;
      }
      bool VisitVarDecl(VarDecl* v) { return Typed(v); }
      bool VisitFieldDecl(FieldDecl* f) { return Typed(f); }
      // Lambdas are part of the function they are written in.
      bool shouldVisitLambdaBody() const { return true; }

     private:
      bool Typed(DeclaratorDecl* d) {
        QualType t = d->getType().getNonReferenceType().getCanonicalType();
        const auto* rd = t->getAsCXXRecordDecl();
        if (rd == nullptr) return true;
        const char* s = StructureOf(rd->getQualifiedNameAsString());
        unsigned b = 0, e = 0;
        if (s != nullptr && a_->Range(d->getSourceRange(), &b, &e)) {
          a_->out_ << "T\t" << s << "\t" << b << "\t" << e << "\n";
        }
        return true;
      }
      Analyzer* a_;
      FunctionDecl* fd_;
      std::string qualified_;
    };
    Visitor v(this, fd, qualified);
    for (ParmVarDecl* p : fd->parameters()) v.TraverseDecl(p);
    v.TraverseStmt(fd->getBody());
  }

  struct Loop {
    std::string kind;
    int depth = 1;
    unsigned begin = 0, end = 0;
  };

  ASTContext& ctx_;
  SourceManager& sm_;
  const LangOptions& lo_;
  std::map<const Stmt*, RootInfo> roots_;
  std::map<const Stmt*, const Stmt*> alias_;     // wrapped expression -> its statement
  std::map<const Stmt*, int> label_depth_;       // case / default / catch -> loop depth
  std::vector<Loop> loops_;
  std::vector<Call> calls_;
  std::set<const Decl*> defined_;
  std::ostringstream out_;
};

class Visitor : public RecursiveASTVisitor<Visitor> {
 public:
  explicit Visitor(Analyzer* a) : a_(a) {}
  bool VisitFunctionDecl(FunctionDecl* fd) {
    a_->Function(fd);
    return true;
  }
  bool shouldVisitTemplateInstantiations() const { return false; }

 private:
  Analyzer* a_;
};

class Consumer : public ASTConsumer {
 public:
  Consumer(std::string* out, bool* ok) : out_(out), ok_(ok) {}
  void HandleTranslationUnit(ASTContext& ctx) override {
    if (ctx.getDiagnostics().hasErrorOccurred()) {
      *ok_ = false;
      return;
    }
    Analyzer a(ctx);
    Visitor v(&a);
    // Only what the program itself declares: the library's declarations (and, with
    // -include-pch, the precompiled header's, which would be deserialized one by one)
    // are never walked.
    const SourceManager& sm = ctx.getSourceManager();
    for (Decl* d : ctx.getTranslationUnitDecl()->decls()) {
      if (sm.isInMainFile(sm.getExpansionLoc(d->getLocation()))) v.TraverseDecl(d);
    }
    a.Recursion();
    *out_ = a.output();
    *ok_ = true;
  }

 private:
  std::string* out_;
  bool* ok_;
};

class Action : public ASTFrontendAction {
 public:
  Action(std::string* out, bool* ok) : out_(out), ok_(ok) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance&, StringRef) override {
    return std::make_unique<Consumer>(out_, ok_);
  }

 private:
  std::string* out_;
  bool* ok_;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args = {"-std=c++17", "-w", "-Wno-register", "-fsyntax-only"};
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  std::string source((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  std::string out;
  bool ok = false;
  bool ran = clang::tooling::runToolOnCodeWithArgs(std::make_unique<Action>(&out, &ok), source,
                                                   args, "program.cpp", "egca-cpp-cfg");
  if (!ran || !ok) {
    std::cerr << "egca-cpp-cfg: the program does not parse\n";
    return 1;
  }
  std::cout << out;
  return 0;
}
