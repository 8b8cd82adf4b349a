#include "egca/cpp/compiler.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <atomic>

#include "egca/core/files.h"
#include "egca/sandbox/command.h"
#include "runtime_source.h"

namespace egca::cpp {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMessageBytes = 500;
constexpr size_t kDiagnosticsBytes = 16384;

uint64_t Fnv(uint64_t h, std::string_view s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  h ^= 0xff;  // separator, so ("ab","c") != ("a","bc")
  h *= 1099511628211ULL;
  return h;
}
constexpr uint64_t kFnvBasis = 1469598103934665603ULL;

std::string Hex(uint64_t h) { return fmt::format("{:016x}", h); }

// A temporary name beside `path`, unique across threads and processes (several Compilers
// may share one cache directory).
std::string TempName(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{}.{}.{}.tmp", path, getpid(), counter.fetch_add(1));
}

// Moves a finished temporary into place; another writer having got there first is fine
// (same content by construction: names are content hashes).
Status Publish(const std::string& tmp, const std::string& path) {
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec && !fs::exists(path)) {
    return Internal(fmt::format("{}: cannot move into place: {}", path, ec.message()));
  }
  return Status();
}


std::string Bounded(std::string s, size_t limit) {
  if (s.size() > limit) {
    s.resize(limit);
    s += "...";
  }
  return s;
}

// The first error clang (or the linker) reported.
void FirstError(const std::string& stderr_text, CompileResult* out) {
  static const std::regex kDiag(R"(^(.*?):(\d+):(\d+): (?:fatal )?error: (.*)$)");
  static const std::regex kLink(R"(^(.*?):(?:\(.*?\))?:? ?(?:(\d+):)? ?(undefined reference.*)$)");
  size_t pos = 0;
  std::string link_message;
  while (pos <= stderr_text.size()) {
    size_t nl = stderr_text.find('\n', pos);
    if (nl == std::string::npos) nl = stderr_text.size();
    std::string line = stderr_text.substr(pos, nl - pos);
    pos = nl + 1;
    std::smatch m;
    if (std::regex_match(line, m, kDiag)) {
      out->error_at = ParsePartLocation(m[1].str(), std::stoi(m[2].str()),
                                        std::max(0, std::stoi(m[3].str()) - 1));
      out->error_message = Bounded(m[4].str(), kMessageBytes);
      return;
    }
    if (link_message.empty() && line.find("undefined reference") != std::string::npos) {
      size_t at = line.find("undefined reference");
      link_message = line.substr(at);
      if (std::regex_match(line, m, kLink) && m[2].matched) {
        out->error_at = ParsePartLocation(m[1].str(), std::stoi(m[2].str()), 0);
      }
    }
  }
  if (!link_message.empty()) {
    out->error_message = Bounded(link_message, kMessageBytes);
    return;
  }
  out->error_message = "compilation failed";
}

// Writes `contents` to `path` through a unique temporary (safe with concurrent writers).
Status WriteShared(const std::string& path, std::string_view contents) {
  const std::string tmp = TempName(path);
  EGCA_RETURN_IF_ERROR(WriteFileAtomic(tmp, contents));
  return Publish(tmp, path);
}

}  // namespace

std::string DefaultCacheDir() {
  if (const char* d = std::getenv("EGCA_CACHE_DIR"); d != nullptr && *d) {
    return std::string(d) + "/cpp";
  }
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d != nullptr && *d) {
    return std::string(d) + "/egca/cpp";
  }
  if (const char* d = std::getenv("HOME"); d != nullptr && *d) {
    return std::string(d) + "/.cache/egca/cpp";
  }
  return "/var/tmp/egca-cpp";
}


PartLocation ParsePartLocation(std::string_view file, int32_t line, int32_t column) {
  PartLocation at;
  // Debug info and diagnostics may prefix the name with a directory.
  if (file.size() >= 11 && file.substr(file.size() - 11) == "<candidate>") {
    at.part = ProgramPart::kCandidate;
  } else if (file.size() >= 6 && file.substr(file.size() - 6) == "<test>") {
    at.part = ProgramPart::kTest;
  } else {
    return at;
  }
  at.line = line;
  at.column = column;
  return at;
}

std::vector<IncludeProblem> CheckIncludes(std::string_view source) {
  std::vector<IncludeProblem> problems;
  int32_t line_no = 0;
  size_t pos = 0;
  while (pos <= source.size()) {
    size_t nl = source.find('\n', pos);
    if (nl == std::string_view::npos) nl = source.size();
    std::string_view line = source.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string_view::npos || line[i] != '#') continue;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string_view::npos) continue;
    std::string_view directive = line.substr(i);
    bool is_include = directive.rfind("include", 0) == 0 || directive.rfind("import", 0) == 0;
    if (!is_include) continue;
    size_t open = directive.find_first_of("<\"");
    if (open == std::string_view::npos) {
      // `#include MACRO` could expand to any path: refuse it too.
      problems.push_back({line_no, "#include must name a header as <name>"});
      continue;
    }
    if (directive[open] == '"') {
      problems.push_back({line_no, "only system headers (#include <name>) may be included"});
      continue;
    }
    size_t close = directive.find('>', open);
    std::string_view name = directive.substr(open + 1, close == std::string_view::npos
                                                           ? std::string_view::npos
                                                           : close - open - 1);
    if (name.empty() || name.front() == '/' || name.find("..") != std::string_view::npos) {
      problems.push_back({line_no, fmt::format("header <{}> is not a system header", name)});
    }
  }
  return problems;
}

std::string Compiler::JoinProgram(std::string_view candidate, std::string_view test_code,
                                  std::string_view prelude) {
  std::string program(prelude);
  program += "\n#line 1 \"<candidate>\"\n";
  program.append(candidate);
  program += "\n#line 1 \"<test>\"\n";
  program.append(test_code);
  program += "\n";
  return program;
}

StatusOr<std::unique_ptr<Compiler>> Compiler::Create(CompilerOptions options) {
  std::unique_ptr<Compiler> c(new Compiler(std::move(options)));
  std::vector<std::string> tried;
  for (const std::string& name : {c->options_.clang, std::string("clang++")}) {
    if (name.empty()) continue;
    tried.push_back(name);
    auto version = sandbox::RunCommand({name, "--version"}, sandbox::CommandOptions::Within(10, 1 << 16));
    if (version.ok() && version->ok()) {
      c->clang_ = name;
      c->flags_key_ = version->stdout_data;
      break;
    }
  }
  if (c->clang_.empty()) {
    return NotFound(fmt::format("no C++ compiler: tried {} (install clang-14)",
                                fmt::join(tried, ", ")));
  }
  c->cache_dir_ = c->options_.cache_dir.empty() ? DefaultCacheDir() : c->options_.cache_dir;
  std::error_code ec;
  fs::create_directories(c->cache_dir_ + "/programs", ec);
  if (ec) {
    return Internal(fmt::format("{}: cannot create the cache directory: {}", c->cache_dir_,
                                ec.message()));
  }
  uint64_t h = Fnv(kFnvBasis, c->flags_key_);
  for (const std::string& f : c->BaseFlags()) h = Fnv(h, f);
  h = Fnv(h, internal::kRuntimeSource);
  c->flags_key_ = Hex(h);
  return c;
}

std::vector<std::string> Compiler::BaseFlags() const {
  std::vector<std::string> flags = {"-std=" + options_.standard, "-O0", "-g", "-fPIC",
                                    "-fno-omit-frame-pointer", "-w", "-Wno-register", "-fno-caret-diagnostics",
                                    "-fno-color-diagnostics", "-ferror-limit=5"};
  flags.insert(flags.end(), options_.extra_flags.begin(), options_.extra_flags.end());
  return flags;
}

Status Compiler::EnsureRuntime() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!runtime_object_.empty()) return Status();
  std::string object = fmt::format("{}/runtime-{}.o", cache_dir_, flags_key_);
  if (!fs::exists(object)) {
    std::string source = fmt::format("{}/runtime-{}.cpp", cache_dir_, flags_key_);
    EGCA_RETURN_IF_ERROR(WriteShared(source, internal::kRuntimeSource));
    std::string tmp = TempName(object);
    std::vector<std::string> argv = {clang_};
    for (const std::string& f : BaseFlags()) argv.push_back(f);
    for (const char* f : {"-c", "-x", "c++"}) argv.emplace_back(f);
    argv.push_back(source);
    argv.push_back("-o");
    argv.push_back(tmp);
    EGCA_ASSIGN_OR_RETURN(auto r, sandbox::RunCommand(argv, sandbox::CommandOptions::Within(options_.compile_seconds)));
    if (!r.ok()) {
      return Internal(fmt::format("{}: cannot compile egca's C++ runtime: {}", source,
                                  Bounded(r.stderr_data, kMessageBytes)));
    }
    EGCA_RETURN_IF_ERROR(Publish(tmp, object));
  }
  runtime_object_ = object;
  return Status();
}

StatusOr<std::string> EnsureStdcxxPch(const std::string& clang,
                                      const std::vector<std::string>& flags,
                                      const std::string& cache_dir, const std::string& stem,
                                      double seconds) {
  std::string pch = fmt::format("{}/{}.pch", cache_dir, stem);
  if (fs::exists(pch)) return pch;
  std::string header = fmt::format("{}/{}.h", cache_dir, stem);
  EGCA_RETURN_IF_ERROR(WriteShared(header, "#include <bits/stdc++.h>\n"));
  std::string tmp = TempName(pch);
  std::vector<std::string> argv = {clang};
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const char* f : {"-x", "c++-header"}) argv.emplace_back(f);
  argv.push_back(header);
  argv.push_back("-o");
  argv.push_back(tmp);
  EGCA_ASSIGN_OR_RETURN(auto r, sandbox::RunCommand(argv, sandbox::CommandOptions::Within(seconds)));
  if (!r.ok()) {
    std::error_code ec;
    fs::remove(tmp, ec);
    return Internal(fmt::format("{}: cannot build the precompiled header: {}", header,
                                Bounded(r.stderr_data, kMessageBytes)));
  }
  EGCA_RETURN_IF_ERROR(Publish(tmp, pch));
  return pch;
}

Status Compiler::PreparePch() {
  if (!options_.use_pch) return Status();
  std::lock_guard<std::mutex> lock(mu_);
  if (!pch_.empty()) return Status();
  EGCA_ASSIGN_OR_RETURN(pch_, EnsureStdcxxPch(clang_, BaseFlags(), cache_dir_, "stdcxx-" + flags_key_,
                                              options_.compile_seconds * 4));
  return Status();
}

StatusOr<CompileResult> Compiler::Compile(std::string_view candidate, std::string_view test_code,
                                          std::string_view prelude) {
  CompileResult out;
  for (std::string_view part : {candidate, test_code}) {
    std::vector<IncludeProblem> problems = CheckIncludes(part);
    if (problems.empty()) continue;
    out.error_at.part = part.data() == candidate.data() ? ProgramPart::kCandidate
                                                        : ProgramPart::kTest;
    out.error_at.line = problems.front().line;
    out.error_message = problems.front().message;
    out.diagnostics = out.error_message;
    return out;
  }
  EGCA_RETURN_IF_ERROR(EnsureRuntime());
  EGCA_RETURN_IF_ERROR(PreparePch());

  const std::string program = JoinProgram(candidate, test_code, prelude);
  const std::string key = Hex(Fnv(Fnv(kFnvBasis, flags_key_), program));
  const std::string stem = fmt::format("{}/programs/{}", cache_dir_, key);
  const std::string so = stem + ".so";
  if (fs::exists(so)) {
    out.ok = true;
    out.shared_object = so;
    out.used_pch = false;  // served from the program cache
    return out;
  }
  const std::string source = stem + ".cpp";
  EGCA_RETURN_IF_ERROR(WriteShared(source, program));
  const std::string tmp = TempName(so);
  auto run = [&](bool with_pch) -> StatusOr<sandbox::CommandResult> {
    std::vector<std::string> argv = {clang_};
    for (const std::string& f : BaseFlags()) argv.push_back(f);
    if (with_pch) {
      argv.push_back("-include-pch");
      argv.push_back(pch_);
    }
    for (const char* f : {"-x", "c++"}) argv.emplace_back(f);
    argv.push_back(source);
    for (const char* f : {"-x", "none"}) argv.emplace_back(f);
    argv.push_back(runtime_object_);
    // libcrypto (HumanEval-X CPP/162 uses OpenSSL's MD5) only when a program needs it.
    if (fs::exists("/usr/lib/x86_64-linux-gnu/libcrypto.so")) {
      for (const char* f : {"-Wl,--as-needed", "-lcrypto", "-Wl,--no-as-needed"}) argv.emplace_back(f);
    }
    for (const char* f : {"-shared", "-Wl,-Bsymbolic", "-Wl,--no-undefined", "-ldl", "-o"}) {
      argv.emplace_back(f);
    }
    argv.push_back(tmp);
    return sandbox::RunCommand(argv, sandbox::CommandOptions::Within(options_.compile_seconds, kDiagnosticsBytes));
  };
  const bool includes_bits = candidate.find("bits/stdc++.h") != std::string_view::npos ||
                             test_code.find("bits/stdc++.h") != std::string_view::npos;
  bool with_pch = options_.use_pch && !pch_.empty() &&
                  (includes_bits || !options_.pch_only_for_bits);
  EGCA_ASSIGN_OR_RETURN(sandbox::CommandResult r, run(with_pch));
  out.seconds = r.wall_seconds;
  if (!r.ok() && with_pch && !r.timed_out) {
    // The PCH declares every standard name; retry without it so it never decides a verdict.
    with_pch = false;
    EGCA_ASSIGN_OR_RETURN(r, run(false));
    out.seconds += r.wall_seconds;
  }
  out.used_pch = with_pch;
  if (r.ok()) {
    std::error_code ec;
    fs::permissions(tmp, fs::perms::owner_read | fs::perms::owner_write |
                             fs::perms::group_read | fs::perms::others_read, ec);
    EGCA_RETURN_IF_ERROR(Publish(tmp, so));
    out.ok = true;
    out.shared_object = so;
    return out;
  }
  std::error_code ignored;
  fs::remove(tmp, ignored);
  out.diagnostics = Bounded(r.stderr_data, kDiagnosticsBytes);
  if (r.timed_out) {
    out.timed_out = true;
    out.error_message = fmt::format("compilation exceeded {:g} s", options_.compile_seconds);
    return out;
  }
  FirstError(r.stderr_data, &out);
  return out;
}

}  // namespace egca::cpp
