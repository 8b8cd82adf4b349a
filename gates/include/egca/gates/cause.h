// The cause of a run-time error, for the SYNTAX credit option `cause` (issue 37;
// credit::SyntaxCredit::kCause).
//
// The statement that raised is often not where the program went wrong. A NameError is
// raised by the *use* of a name; the mistake is as likely the binding that named it
// differently. For a name error (NameError, UnboundLocalError, an AttributeError on a module
// or on self) the cause span runs from the first binding site of the name (an assignment,
// augmented or annotated assignment, for target, def/class, parameter, import, with/except
// target, walrus) in the use's scope and the scopes enclosing it, to the end of the use;
// when the program binds the name nowhere there, the binding that should have matched it is
// unknown, so the span runs from the enclosing scope's header (def line; the module's first
// statement) to the use. Any other exception's cause is the raising statement itself.
//
// Binding sites are found on the statements of egca::cfg's CFG (their kinds and spans) with
// a small lexer over each statement's text (strings and comments skipped, brackets tracked:
// `x[i] = v` binds neither x nor i; `a, (b, c) = v` binds all three).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "egca/cfg/cfg.h"
#include "egca/core/span.h"

namespace egca::gates {

struct ErrorCause {
  std::string kind;          // the exception's class, e.g. "NameError" ("" if unknown)
  std::string name;          // name errors: the name (an attribute's name for self.attr,
                             // the module's for module.attr); "" otherwise
  bool name_error = false;   // kind is one of the name errors above and a name was found
  SourceSpan span;           // the cause span (the raising statement when !name_error)
  std::vector<SourceSpan> bindings;  // the binding statements found (name errors)
};

// The name an error message is about: NameError "name 'x' is not defined" and the other
// quoted-name messages of NameError / UnboundLocalError -> x; AttributeError "module 'm' has
// no attribute 'a'" -> m (*on_module = true); "'C' object has no attribute 'a'" -> a.
// nullopt when the message names none.
std::optional<std::string> ErrorName(std::string_view kind, std::string_view message,
                                     bool* on_module = nullptr);

// The cause of exception `kind` with `message`, raised by the statement at `raising` (a
// span of `source`, as the router's error span). `program` is `source`'s CFG.
ErrorCause CauseOfError(const cfg::ProgramCfg& program, std::string_view source,
                        std::string_view kind, std::string_view message,
                        const SourceSpan& raising);

// Whether statement `text` of kind `kind` binds `name` (exposed for tests). With
// `self_attribute`, whether it binds self.<name> (or defines a method `name`).
bool StatementBinds(cfg::StmtKind kind, std::string_view text, std::string_view name,
                    bool self_attribute = false);

}  // namespace egca::gates
