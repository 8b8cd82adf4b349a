// `--lang auto|python|cpp` for the tools that take programs of either language, and the
// C++ forms of egca-run's test options:
//   --tests TEST.cpp           a `main` that asserts (HumanEval-X / MBXP style); compiled
//                              after the candidate, one test
//   --stdin FILE [--expect-stdout FILE]   the candidate has its own main
// Call-based options (--fn/--input/--expect) and --setup/--entry-point are Python-only: a
// C++ program given them is bad usage (one line, exit 2).
//
// Header-only: egca::cli is an interface library; tools that include this link egca::tracer.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "egca/core/files.h"
#include "egca/core/language.h"
#include "egca/core/status.h"
#include "egca/tracer/test_args.h"
#include "egca/tracer/test_case.h"

namespace egca::tools {

inline constexpr const char* kLanguageHelp =
    "auto (default: the file extension .py / .cpp .cc .cxx .hpp ..., else the content), "
    "python or cpp";

// The language argv names before the arguments are parsed (the fork server of the
// language must start before any expected value is read, see egca-run): `--lang X` /
// `--lang=X`, else C++ when some argument has a C++ extension; nullopt when argv says
// nothing either way (then the program's content decides, after parsing).
inline std::optional<Language> PeekLanguage(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--lang" && i + 1 < argc) return ParseLanguage(argv[i + 1]);
    if (arg.substr(0, 7) == "--lang=") return ParseLanguage(arg.substr(7));
  }
  for (int i = 1; i < argc; ++i) {
    if (LanguageFromPath(argv[i]) == Language::kCpp) return Language::kCpp;
  }
  return std::nullopt;
}

// `flag` ("auto", "python", "cpp") for the program at `path` with text `source`.
inline Language ResolveLanguage(const std::string& flag, std::string_view path,
                                std::string_view source) {
  if (auto named = ParseLanguage(flag)) return *named;
  return DetectLanguage(path, source);
}

// Tests of a C++ program from egca-run-style options (see the file comment). Errors name
// the option or file.
inline StatusOr<std::vector<tracer::TestCase>> BuildCppTests(const tracer::TestArgs& a) {
  if (!a.function.empty() || !a.inputs.empty() || !a.expects.empty()) {
    return InvalidArgument(
        "--fn/--input/--expect: call-based tests are Python-only; test a C++ program with "
        "--tests TEST.cpp (a main that asserts) or --stdin FILE");
  }
  if (!a.setup_file.empty()) return InvalidArgument("--setup is Python-only (C++: --tests)");
  if (!a.entry_point.empty()) {
    return InvalidArgument("--entry-point is Python-only (C++: --tests TEST.cpp with a main)");
  }
  if (!a.tests_file.empty() && !a.stdin_files.empty()) {
    return InvalidArgument("--tests and --stdin conflict: give one kind of test");
  }
  if (!a.stdin_files.empty()) return tracer::BuildTests(a);
  if (a.tests_file.empty()) {
    return InvalidArgument("no tests: give --tests TEST.cpp (a main that asserts) or --stdin FILE");
  }
  EGCA_ASSIGN_OR_RETURN(std::string code, ReadSourceFile(a.tests_file));
  if (code.find("main") == std::string::npos) {
    return InvalidArgument(fmt::format(
        "{}: no main(): a C++ tests file is a main that asserts (HumanEval-X / MBXP style)",
        a.tests_file));
  }
  tracer::TestCase t = tracer::TestCase::Asserts(code);
  size_t slash = a.tests_file.find_last_of('/');
  t.name = slash == std::string::npos ? a.tests_file : a.tests_file.substr(slash + 1);
  return std::vector<tracer::TestCase>{std::move(t)};
}

}  // namespace egca::tools
