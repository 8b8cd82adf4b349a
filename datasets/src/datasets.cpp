#include "egca/datasets/datasets.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>

#include "datasets_formats.h"
#include "egca/core/files.h"

namespace egca::datasets {
namespace fs = std::filesystem;
using internal::json;

namespace {

struct FormatName {
  DatasetFormat format;
  const char* name;
};

constexpr std::array<FormatName, 12> kFormats = {{
    {DatasetFormat::kAuto, "auto"},
    {DatasetFormat::kHumanEval, "humaneval"},
    {DatasetFormat::kMbpp, "mbpp"},
    {DatasetFormat::kMbppSanitized, "mbpp_sanitized"},
    {DatasetFormat::kMbppEt, "mbpp_et"},
    {DatasetFormat::kAppsDir, "apps_dir"},
    {DatasetFormat::kCodeparrotApps, "codeparrot_apps"},
    {DatasetFormat::kMapCoderApps, "mapcoder_apps"},
    {DatasetFormat::kAppsPlus, "apps_plus"},
    {DatasetFormat::kHumanEvalCpp, "humaneval_cpp"},
    {DatasetFormat::kMbxpCpp, "mbxp_cpp"},
    {DatasetFormat::kMdevalCpp, "mdeval_cpp"},
}};

bool Has(const json& r, const char* key) { return r.contains(key); }

// The format a record's keys point to, or kAuto when none fits.
DatasetFormat FormatOfRecord(const json& r, const DatasetOptions& options) {
  if (Has(r, "buggy_code") && Has(r, "fragment_lines") && Has(r, "test")) {
    return DatasetFormat::kMdevalCpp;
  }
  if (Has(r, "task_id") && Has(r, "declaration") && Has(r, "canonical_solution") &&
      Has(r, "test")) {
    return DatasetFormat::kHumanEvalCpp;
  }
  if (Has(r, "task_id") && Has(r, "prompt") && Has(r, "test") && r.contains("language") &&
      r["language"].is_string() && r["language"].get<std::string>() == "cpp") {
    return DatasetFormat::kMbxpCpp;
  }
  if (Has(r, "task_id") && Has(r, "prompt") && Has(r, "canonical_solution") && Has(r, "test") &&
      Has(r, "entry_point")) {
    return DatasetFormat::kHumanEval;
  }
  if (Has(r, "text") && Has(r, "code") && Has(r, "test_list")) {
    return Has(r, "entry_point") ? DatasetFormat::kMbppEt : DatasetFormat::kMbpp;
  }
  if (Has(r, "prompt") && Has(r, "code") && Has(r, "test_list")) {
    return DatasetFormat::kMbppSanitized;
  }
  if (Has(r, "problem_id") && Has(r, "question") && Has(r, "input_output")) {
    return DatasetFormat::kCodeparrotApps;
  }
  if (Has(r, "description") && Has(r, "test_list") && Has(r, "starter_code")) {
    return DatasetFormat::kMapCoderApps;
  }
  const AppsPlusFields& f = options.apps_plus;
  if (internal::ResolveField(r, f.id) && internal::ResolveField(r, f.inputs) &&
      internal::ResolveField(r, f.outputs)) {
    return DatasetFormat::kAppsPlus;
  }
  return DatasetFormat::kAuto;
}

std::string KeysOf(const json& r) {
  std::string keys;
  for (auto it = r.begin(); it != r.end(); ++it) {
    if (!keys.empty()) keys += ", ";
    keys += it.key();
  }
  return keys;
}

// Detection on a file's contents: the first record that parses decides.
StatusOr<DatasetFormat> DetectFromText(const std::string& path, std::string_view text,
                                       const DatasetOptions& options) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return InvalidArgument(fmt::format("{}: empty file, cannot detect its format", path));
  }
  std::optional<json> record;
  std::string error;
  if (text[first] == '[') {
    std::optional<json> doc = internal::ParseDocument(text, &error);
    if (!doc) return InvalidArgument(fmt::format("{}: {}", path, error));
    for (const json& r : *doc) {
      if (r.is_object()) {
        record = r;
        break;
      }
    }
  } else {
    internal::ForEachJsonlLine(text, [&](int64_t, std::string_view rec) {
      if (record) return;
      std::string ignored;
      record = internal::ParseObject(rec, &ignored);
    });
  }
  if (!record) {
    return InvalidArgument(
        fmt::format("{}: no JSON object record found, cannot detect its format", path));
  }
  DatasetFormat format = FormatOfRecord(*record, options);
  if (format == DatasetFormat::kAuto) {
    return InvalidArgument(fmt::format(
        "{}: cannot detect the data set format from the first record's keys ({}); pass the "
        "format (one of {})",
        path, KeysOf(*record), fmt::join(DatasetFormatNames(), ", ")));
  }
  return format;
}

}  // namespace

const char* DatasetFormatName(DatasetFormat format) {
  for (const FormatName& f : kFormats) {
    if (f.format == format) return f.name;
  }
  return "auto";
}

StatusOr<DatasetFormat> ParseDatasetFormat(std::string_view name) {
  for (const FormatName& f : kFormats) {
    if (name == f.name) return f.format;
  }
  return InvalidArgument(fmt::format("unknown data set format \"{}\" (expected one of {})", name,
                                     fmt::join(DatasetFormatNames(), ", ")));
}

std::vector<std::string> DatasetFormatNames() {
  std::vector<std::string> names;
  for (const FormatName& f : kFormats) names.emplace_back(f.name);
  return names;
}

Status SetAppsPlusField(AppsPlusFields* fields, std::string_view assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) {
    return InvalidArgument(
        fmt::format("field mapping \"{}\" must be key=name", assignment));
  }
  std::string_view key = assignment.substr(0, eq);
  std::string name(assignment.substr(eq + 1));
  std::pair<const char*, std::string*> slots[] = {
      {"id", &fields->id},
      {"description", &fields->description},
      {"solution", &fields->solution},
      {"fn_name", &fields->fn_name},
      {"inputs", &fields->inputs},
      {"outputs", &fields->outputs},
      {"starter_code", &fields->starter_code},
      {"difficulty", &fields->difficulty},
  };
  for (auto& [k, slot] : slots) {
    if (key == k) {
      *slot = std::move(name);
      return Status::Ok();
    }
  }
  return InvalidArgument(fmt::format(
      "field mapping \"{}\": unknown key \"{}\" (expected id, description, solution, fn_name, "
      "inputs, outputs, starter_code or difficulty)",
      assignment, key));
}

StatusOr<DatasetFormat> DetectDatasetFormat(const std::string& path,
                                            const DatasetOptions& options) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (internal::IsAppsDir(path)) return DatasetFormat::kAppsDir;
    return InvalidArgument(fmt::format(
        "{}: a directory without APPS problem folders (<id>/input_output.json), cannot detect "
        "its format",
        path));
  }
  EGCA_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(path));
  return DetectFromText(path, text, options);
}

StatusOr<std::vector<ProblemRecord>> LoadProblems(const std::string& path,
                                                  const DatasetOptions& options,
                                                  LoadReport* report) {
  internal::ProblemSink sink(path, options, report);
  DatasetFormat format = options.format;
  std::error_code ec;
  const bool is_dir = fs::is_directory(path, ec);
  if (format == DatasetFormat::kAppsDir || (format == DatasetFormat::kAuto && is_dir)) {
    if (!is_dir) return InvalidArgument(fmt::format("{}: apps_dir needs a directory", path));
    if (format == DatasetFormat::kAuto && !internal::IsAppsDir(path)) {
      return InvalidArgument(fmt::format(
          "{}: a directory without APPS problem folders (<id>/input_output.json), cannot "
          "detect its format",
          path));
    }
    EGCA_RETURN_IF_ERROR(internal::LoadAppsDir(path, &sink));
    return sink.Take();
  }
  if (is_dir) {
    return InvalidArgument(fmt::format("{}: is a directory, format {} needs a file", path,
                                       DatasetFormatName(format)));
  }
  EGCA_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(path));
  if (format == DatasetFormat::kAuto) {
    EGCA_ASSIGN_OR_RETURN(format, DetectFromText(path, text, options));
  }
  auto visit = [&](const json& r, int64_t line, const std::string& origin) {
    switch (format) {
      case DatasetFormat::kHumanEval:
        internal::LoadHumanEvalRecord(r, line, origin, &sink);
        break;
      case DatasetFormat::kMbpp:
      case DatasetFormat::kMbppSanitized:
      case DatasetFormat::kMbppEt:
        internal::LoadMbppRecord(format, r, line, origin, &sink);
        break;
      case DatasetFormat::kCodeparrotApps:
        internal::LoadCodeparrotRecord(r, line, origin, &sink);
        break;
      case DatasetFormat::kMapCoderApps:
        internal::LoadMapCoderRecord(r, line, origin, &sink);
        break;
      case DatasetFormat::kAppsPlus:
        internal::LoadAppsPlusRecord(r, line, origin, &sink);
        break;
      case DatasetFormat::kHumanEvalCpp:
        internal::LoadHumanEvalCppRecord(r, line, origin, &sink);
        break;
      case DatasetFormat::kMbxpCpp:
        internal::LoadMbxpCppRecord(r, line, origin, &sink);
        break;
      case DatasetFormat::kMdevalCpp:
        internal::LoadMdevalCppRecord(r, line, origin, &sink, nullptr);
        break;
      case DatasetFormat::kAuto:
      case DatasetFormat::kAppsDir:
        break;
    }
  };
  EGCA_RETURN_IF_ERROR(internal::ForEachJsonRecord(text, &sink, visit));
  return sink.Take();
}

std::string EntryPointFromAsserts(const std::string& reference,
                                  const std::vector<std::string>& asserts) {
  for (const std::string& name : internal::TopLevelDefs(reference)) {
    for (const std::string& line : asserts) {
      size_t pos = 0;
      while ((pos = line.find(name, pos)) != std::string::npos) {
        bool starts = pos == 0 || !(std::isalnum(static_cast<unsigned char>(line[pos - 1])) ||
                                    line[pos - 1] == '_' || line[pos - 1] == '.');
        size_t after = pos + name.size();
        while (after < line.size() && line[after] == ' ') ++after;
        if (starts && after < line.size() && line[after] == '(') return name;
        pos += name.size();
      }
    }
  }
  return "";
}

namespace internal {

bool ProblemSink::Full() const {
  return options_.limit >= 0 && static_cast<int64_t>(problems_.size()) >= options_.limit;
}

void ProblemSink::Add(ProblemRecord problem, int64_t line) {
  if (problem.tests.empty()) {
    Bad(line, fmt::format("problem \"{}\" has no tests, skipped", problem.id));
    return;
  }
  // JSON text is UTF-8 once parsed; files of the APPS layout are read raw.
  auto check = [&](const std::string& text, const char* what) {
    long bad = FindInvalidUtf8(text);
    if (bad < 0) return true;
    Bad(line, fmt::format("problem \"{}\": {} is not valid UTF-8 (byte 0x{:02x} at offset {}), "
                          "skipped",
                          problem.id, what, static_cast<unsigned char>(text[bad]), bad));
    return false;
  };
  if (!check(problem.prompt, "the prompt") || !check(problem.starter_code, "the starter code")) {
    return;
  }
  for (const std::string& ref : problem.references) {
    if (!check(ref, "a reference solution")) return;
  }
  for (const tracer::TestCase& t : problem.tests) {
    if (!check(t.stdin_data, "a test input") || !check(t.expected_stdout, "a test output") ||
        !check(t.test_code, "a test")) {
      return;
    }
  }
  if (ids_.Seen(problem.id, problem.origin, path_, line, report_)) return;
  ++report_->loaded;
  problems_.push_back(std::move(problem));
}

Status ForEachJsonRecord(
    std::string_view text, ProblemSink* sink,
    const std::function<void(const json&, int64_t, const std::string&)>& visit) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '[') {
    std::string error;
    std::optional<json> doc = ParseDocument(text, &error);
    if (!doc) return InvalidArgument(fmt::format("{}: {}", sink->path(), error));
    for (size_t i = 0; i < doc->size() && !sink->Full(); ++i) {
      sink->Record();
      if (!(*doc)[i].is_object()) {
        sink->Bad(0, fmt::format("element {}: not a JSON object, skipped", i));
        continue;
      }
      visit((*doc)[i], 0, fmt::format("{}[{}]", sink->path(), i));
    }
    return Status::Ok();
  }
  ForEachJsonlLine(text, [&](int64_t line, std::string_view rec) {
    if (sink->Full()) return;
    sink->Record();
    std::string error;
    std::optional<json> r = ParseObject(rec, &error);
    if (!r) {
      sink->Bad(line, error + ", skipped");
      return;
    }
    visit(*r, line, fmt::format("{}:{}", sink->path(), line));
  });
  return Status::Ok();
}

std::string IdPrefix(const DatasetOptions& options, const char* default_prefix) {
  return options.id_prefix.empty() ? std::string(default_prefix) : options.id_prefix;
}

void LoadHumanEvalRecord(const json& r, int64_t line, const std::string& origin,
                         ProblemSink* sink) {
  std::string error, solution, test;
  ProblemRecord p;
  if (!GetString(r, "task_id", &p.id, &error) || !GetString(r, "prompt", &p.prompt, &error) ||
      !GetString(r, "canonical_solution", &solution, &error) ||
      !GetString(r, "test", &test, &error) ||
      !GetString(r, "entry_point", &p.entry_point, &error)) {
    sink->Bad(line, error + ", skipped");
    return;
  }
  if (p.entry_point.empty()) {
    sink->Bad(line, fmt::format("problem \"{}\": empty entry_point, skipped", p.id));
    return;
  }
  p.dataset = "humaneval";
  p.references.push_back(p.prompt + solution);
  if (!test.empty()) p.tests.push_back(tracer::TestCase::HumanEvalCheck(test, p.entry_point, p.prompt));
  p.origin = origin;
  sink->Add(std::move(p), line);
}

void LoadMbppRecord(DatasetFormat format, const json& r, int64_t line, const std::string& origin,
                    ProblemSink* sink) {
  std::string error, task_id, code, setup;
  std::vector<std::string> asserts, challenge, imports;
  ProblemRecord p;
  const bool sanitized = format == DatasetFormat::kMbppSanitized;
  bool ok = GetId(r, "task_id", &task_id, &error) &&
            GetString(r, sanitized ? "prompt" : "text", &p.prompt, &error) &&
            GetString(r, "code", &code, &error) && GetStringList(r, "test_list", &asserts, &error);
  if (ok && sanitized) {
    ok = GetStringList(r, "test_imports", &imports, &error, /*optional=*/true);
  } else if (ok) {
    ok = GetString(r, "test_setup_code", &setup, &error, /*optional=*/true) &&
         GetStringList(r, "challenge_test_list", &challenge, &error, /*optional=*/true) &&
         GetString(r, "entry_point", &p.entry_point, &error, /*optional=*/true);
  }
  if (!ok) {
    sink->Bad(line, error + ", skipped");
    return;
  }
  p.id = IdPrefix(sink->options(), "mbpp/") + task_id;
  p.dataset = DatasetFormatName(format);
  p.references.push_back(code);
  // Sanitized MBPP's test_imports (e.g. "import math" for math.isclose asserts) run before
  // the asserts, like the setup code of plain MBPP.
  for (const std::string& imp : imports) setup += imp + "\n";
  if (sink->options().mbpp_challenge_tests) {
    asserts.insert(asserts.end(), challenge.begin(), challenge.end());
  }
  std::vector<std::string> lines;
  for (const std::string& a : asserts) {
    if (a.find_first_not_of(" \t\r\n") != std::string::npos) lines.push_back(a);
  }
  p.tests = tracer::TestsFromAssertLines(lines, setup);
  if (p.entry_point.empty()) p.entry_point = EntryPointFromAsserts(code, lines);
  p.origin = origin;
  sink->Add(std::move(p), line);
}

}  // namespace internal
}  // namespace egca::datasets
