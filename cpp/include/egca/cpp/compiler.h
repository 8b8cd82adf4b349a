// Compiling a C++ candidate: clang++ on the trusted side, once per candidate program.
//
// A program is the candidate's source followed by the test's code (HumanEval-X / MBXP: a
// `main` that asserts or throws), joined with `#line` markers so that every diagnostic,
// assertion message and debug line names "<candidate>" or "<test>" with the line in that
// part. The result is a position-independent shared object (`-shared -fPIC -g -O0`,
// `-Wl,-Bsymbolic`) linked with egca's small runtime (runtime.cpp: throw-site recording);
// the sandboxed child loads it and calls its `main` (see executor.h for why a shared object
// and not an executable).
//
// The standard library is precompiled once per (clang, flags) into a PCH of
// <bits/stdc++.h> under `cache_dir`, used for programs that include <bits/stdc++.h>. A program that
// does not compile with the PCH (every standard name is then declared, which can collide
// with a candidate's own globals) is compiled once more without it, so the PCH never
// changes a verdict.
//
// Compiling is not sandboxed (clang does not run the program), but the source is checked
// first: only `#include <header>` of system headers is allowed (no quoted includes, no
// absolute or `..` paths), so a candidate cannot make the compiler read host files into
// its diagnostics. The compiler runs with a wall-clock limit; a candidate that exceeds it
// (template bombs) is a SYNTAX verdict with that message.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "egca/core/span.h"
#include "egca/core/status.h"

namespace egca::cpp {

// egca's C++ cache directory: $EGCA_CACHE_DIR/cpp, else $XDG_CACHE_HOME/egca/cpp, else
// $HOME/.cache/egca/cpp, else /var/tmp/egca-cpp.
std::string DefaultCacheDir();

// A precompiled <bits/stdc++.h> for `flags` in `cache_dir` ("<stem>.pch", made from
// "<stem>.h", which stays beside it: the PCH names it), built with the driver `clang` when
// missing; safe with concurrent builders (unique temporaries, atomic rename). Returns its
// path. Errors: clang failed or ran past `seconds`.
StatusOr<std::string> EnsureStdcxxPch(const std::string& clang,
                                      const std::vector<std::string>& flags,
                                      const std::string& cache_dir, const std::string& stem,
                                      double seconds);

struct CompilerOptions {
  std::string clang = "clang++-14";  // the driver (falls back to "clang++" when missing)
  // Where the PCH, the runtime object and compiled programs live. Empty: $EGCA_CACHE_DIR/cpp,
  // else $XDG_CACHE_HOME/egca/cpp, else $HOME/.cache/egca/cpp.
  std::string cache_dir;
  std::string standard = "c++17";
  bool use_pch = true;
  // Use the PCH only for programs that include <bits/stdc++.h> themselves (MBXP prompts,
  // competitive code): loading the whole-library PCH costs more than parsing a few headers
  // (bench/cpp_cost), and a program that names its headers then sees only those.
  bool pch_only_for_bits = true;
  std::vector<std::string> extra_flags;  // appended to every compile (e.g. "-DNDEBUG")
  double compile_seconds = 60;           // wall limit per clang invocation
};

// Which part of the program a location is in.
enum class ProgramPart {
  kUnknown,
  kCandidate,  // "<candidate>"
  kTest,       // "<test>"
};

// A location in the program, from a diagnostic, an assertion message or debug info.
struct PartLocation {
  ProgramPart part = ProgramPart::kUnknown;
  int32_t line = 0;    // 1-based within the part; 0 unknown
  int32_t column = 0;  // 0-based byte column; 0 unknown
};

// Parses "<candidate>:12:5" / "<test>:3" (the file names the #line markers give).
PartLocation ParsePartLocation(std::string_view file, int32_t line, int32_t column);

struct CompileResult {
  bool ok = false;
  std::string shared_object;  // ok: path of the compiled program (owned by the cache dir)
  // !ok: the first error: where (in the candidate or the test) and what, as clang said it.
  PartLocation error_at;
  std::string error_message;   // "use of undeclared identifier 'x'" (bounded)
  std::string diagnostics;     // clang's whole stderr (bounded)
  bool used_pch = false;
  bool timed_out = false;      // the compiler ran past compile_seconds
  double seconds = 0;          // wall time of the compile(s)
};

class Compiler {
 public:
  // Finds clang and makes the cache directory. The PCH and runtime are built lazily on
  // the first Compile(). Errors: no clang, or the cache directory cannot be made.
  static StatusOr<std::unique_ptr<Compiler>> Create(CompilerOptions options = {});

  // Compiles candidate + test into a shared object. A candidate that does not compile is
  // a CompileResult with ok = false; a Status error means egca's own setup failed (the
  // runtime or the PCH could not be built, the cache is not writable). Thread-safe.
  // `prelude` (e.g. the snapshot runtime) goes before the candidate's #line marker, so
  // it never shifts the candidate's line numbers.
  StatusOr<CompileResult> Compile(std::string_view candidate, std::string_view test_code,
                                  std::string_view prelude = {});

  // The joined program text Compile() builds (for tools that show or instrument it).
  static std::string JoinProgram(std::string_view candidate, std::string_view test_code,
                                 std::string_view prelude = {});

  // Builds the PCH now (benchmarks time it apart); no-op when built or use_pch is off.
  Status PreparePch();

  const CompilerOptions& options() const { return options_; }
  const std::string& clang() const { return clang_; }
  const std::string& cache_dir() const { return cache_dir_; }
  // Hash of the clang version and the compile flags (names cached files).
  const std::string& flags_key() const { return flags_key_; }

 private:
  explicit Compiler(CompilerOptions options) : options_(std::move(options)) {}
  Status EnsureRuntime();
  std::vector<std::string> BaseFlags() const;

  CompilerOptions options_;
  std::string clang_;
  std::string cache_dir_;
  std::string flags_key_;  // hash of clang version + flags (names the PCH and runtime)
  std::mutex mu_;          // guards building the PCH and runtime
  std::string pch_;        // built PCH path ("" until built)
  std::string runtime_object_;
};

// A source-level check run before compiling: empty when every #include names a system
// header as <name> without absolute or `..` components, else why not (and where).
struct IncludeProblem {
  int32_t line = 0;
  std::string message;
};
std::vector<IncludeProblem> CheckIncludes(std::string_view source);

}  // namespace egca::cpp
