// Converters from published sample files (CodeT, MapCoder, LDB, Reflexion) to Samples whose
// problem ids match the loaders of datasets.h.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <memory>
#include <unordered_map>

#include "datasets_text.h"
#include "egca/datasets/samples.h"
#include "egca/core/files.h"

namespace egca::datasets {
namespace fs = std::filesystem;
using internal::json;

namespace {

struct SourceName {
  SampleSource source;
  const char* name;
};

constexpr std::array<SourceName, 5> kSources = {{
    {SampleSource::kCodeT, "codet"},
    {SampleSource::kMapCoder, "mapcoder"},
    {SampleSource::kLdb, "ldb"},
    {SampleSource::kReflexion, "reflexion"},
    {SampleSource::kMbxp, "mbxp"},
}};

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One JSONL run file of a sample source: `relative` is its path inside the tarball or folder
// ("" for a single file), `shown` how bad records name it.
struct RunFile {
  std::string relative;
  std::string shown;
  std::string_view text;
};

// The run files of a tarball, a folder or one file. Owns the decompressed bytes.
class RunFiles {
 public:
  static StatusOr<std::unique_ptr<RunFiles>> Open(const std::string& path,
                                                  const ConvertOptions& options) {
    auto files = std::unique_ptr<RunFiles>(new RunFiles());
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::recursive_directory_iterator(path, ec)) {
        if (e.is_regular_file() && EndsWith(e.path().string(), ".jsonl")) found.push_back(e.path());
      }
      std::sort(found.begin(), found.end());
      for (const fs::path& f : found) {
        std::string rel = fs::relative(f, path).string();
        if (!Wanted(rel, options)) continue;
        EGCA_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(f.string()));
        files->buffers_.push_back(std::make_unique<std::string>(std::move(text)));
        files->files_.push_back({rel, f.string(), *files->buffers_.back()});
      }
      return files;
    }
    EGCA_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(path));
    files->buffers_.push_back(std::make_unique<std::string>(std::move(text)));
    const std::string& data = *files->buffers_.back();
    if (EndsWith(path, ".tar.gz") || EndsWith(path, ".tgz") || EndsWith(path, ".tar")) {
      EGCA_ASSIGN_OR_RETURN(std::vector<internal::TarEntry> entries, internal::ReadTar(data, path));
      std::sort(entries.begin(), entries.end(),
                [](const internal::TarEntry& a, const internal::TarEntry& b) {
                  return a.path < b.path;
                });
      for (internal::TarEntry& e : entries) {
        if (!EndsWith(e.path, ".jsonl") || !Wanted(e.path, options)) continue;
        files->files_.push_back({e.path, path + "/" + e.path, e.contents});
      }
      return files;
    }
    files->files_.push_back({fs::path(path).filename().string(), path, data});
    return files;
  }

  const std::vector<RunFile>& files() const { return files_; }

 private:
  RunFiles() = default;

  static bool Wanted(const std::string& relative, const ConvertOptions& options) {
    if (!options.run_filter.empty() && relative.find(options.run_filter) == std::string::npos) {
      return false;
    }
    if (options.dataset.empty()) return true;
    const std::string want = Lower(options.dataset);
    fs::path dir = fs::path(relative).parent_path();
    for (const fs::path& part : dir) {
      if (Lower(part.string()) == want) return true;
    }
    return false;
  }

  std::vector<std::unique_ptr<std::string>> buffers_;
  std::vector<RunFile> files_;
};

// Problems by id, and the ids a source's task id may stand for.
class ProblemIndex {
 public:
  explicit ProblemIndex(const std::vector<ProblemRecord>& problems) {
    for (const ProblemRecord& p : problems) by_id_.emplace(p.id, &p);
  }

  // "HumanEval/0" as is; "MBPP/11" and MultiPL-E "mbpp_11_name" -> "mbpp/11";
  // "HumanEval_23_strlen" -> "HumanEval/23"; APPS numbers 3554 -> "apps/3554".
  const ProblemRecord* Find(const std::string& raw) const {
    for (const std::string& id : Candidates(raw)) {
      auto it = by_id_.find(id);
      if (it != by_id_.end()) return it->second;
    }
    return nullptr;
  }

 private:
  static std::vector<std::string> Candidates(const std::string& raw) {
    std::vector<std::string> ids = {raw};
    auto number_after = [&](size_t pos) {
      size_t e = pos;
      while (e < raw.size() && std::isdigit(static_cast<unsigned char>(raw[e]))) ++e;
      return e > pos ? raw.substr(pos, e - pos) : std::string();
    };
    if (!raw.empty() && number_after(0).size() == raw.size()) ids.push_back("apps/" + raw);
    std::string lower = Lower(raw);
    if (lower.rfind("mbpp/", 0) == 0 || lower.rfind("mbpp_", 0) == 0) {
      std::string n = number_after(5);
      if (!n.empty()) ids.push_back("mbpp/" + n);
    }
    if (raw.rfind("HumanEval_", 0) == 0) {
      std::string n = number_after(10);
      if (!n.empty()) ids.push_back("HumanEval/" + n);
    }
    return ids;
  }

  std::unordered_map<std::string, const ProblemRecord*> by_id_;
};

// The record's task id: task_id, else name, else id (string or number); "" if none.
std::string TaskIdOf(const json& r) {
  for (const char* key : {"task_id", "name", "id", "src_uid"}) {
    auto it = r.find(key);
    if (it == r.end()) continue;
    if (it->is_string() && !it->get_ref<const std::string&>().empty()) return it->get<std::string>();
    if (it->is_number_integer()) return it->dump();
  }
  return "";
}

// is_solved: a boolean in MapCoder files, "True"/"False" in some LDB/Reflexion files.
int SolvedOf(const json& r) {
  auto it = r.find("is_solved");
  if (it == r.end()) return -1;
  if (it->is_boolean()) return it->get<bool>() ? 1 : 0;
  if (it->is_string()) {
    if (it->get_ref<const std::string&>() == "True") return 1;
    if (it->get_ref<const std::string&>() == "False") return 0;
  }
  return -1;
}

std::vector<std::string> StringsOf(const json& r, const char* key) {
  std::vector<std::string> out;
  auto it = r.find(key);
  if (it == r.end()) return out;
  if (it->is_string()) out.push_back(it->get<std::string>());
  if (it->is_array()) {
    for (const json& v : *it) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  }
  return out;
}

// The programs a record carries: every attempt or the final one.
std::vector<std::string> ProgramsOf(const json& r, const ConvertOptions& options) {
  std::vector<std::string> attempts =
      StringsOf(r, options.raw_responses && r.contains("responses") ? "responses" : "source_codes");
  if (attempts.empty()) attempts = StringsOf(r, "implementations");
  std::vector<std::string> final_program = StringsOf(r, "solution");
  if (final_program.empty()) final_program = StringsOf(r, "completion");
  if (options.all_attempts && !attempts.empty()) return attempts;
  if (r.contains("source_codes") && !attempts.empty()) return {attempts.back()};
  if (!final_program.empty()) return final_program;
  if (!attempts.empty()) return {attempts.back()};
  return {};
}

bool DefinesFunction(const std::string& code, const std::string& name) {
  size_t pos = 0;
  const std::string needle = "def " + name;
  while ((pos = code.find(needle, pos)) != std::string::npos) {
    size_t after = pos + needle.size();
    while (after < code.size() && code[after] == ' ') ++after;
    if (after < code.size() && code[after] == '(') return true;
    pos = after;
  }
  return false;
}

// A HumanEval-style function body is run after the prompt: the problem's prompt is code
// (its reference starts with it) defining the entry point, and the sample does not define
// the entry point itself. (A description that merely mentions `def f` is not code.)
bool IsBody(const std::string& code, const ProblemRecord& problem) {
  return PromptIsCode(problem) && !DefinesFunction(code, problem.entry_point);
}

std::string ModelFromPath(SampleSource source, const std::string& relative) {
  fs::path rel(relative);
  std::vector<std::string> parts;
  for (const fs::path& p : rel.parent_path()) parts.push_back(p.string());
  std::string stem = rel.stem().string();
  switch (source) {
    case SampleSource::kMapCoder: {
      for (std::string_view suffix : {"-Python3-0-1", "-Python3"}) {
        if (EndsWith(stem, suffix)) {
          stem.resize(stem.size() - suffix.size());
          break;
        }
      }
      return stem;
    }
    case SampleSource::kLdb: {
      // results/ldb/<dataset>/<run>[/<file>] or input_data/<dataset>/seed/<run>/seed.jsonl
      if (parts.size() >= 4 && parts[0] == "input_data") return "ldb-seed/" + parts[3];
      std::string model = "ldb";
      for (size_t i = 3; i < parts.size(); ++i) model += "/" + parts[i];
      if (stem != "results") model += "/" + stem;
      return model;
    }
    case SampleSource::kReflexion:
      return "reflexion/" + (parts.empty() ? stem : parts.back());
    case SampleSource::kCodeT:
      return "codegen16B";
    case SampleSource::kMbxp:
      return "mbxp";
  }
  return stem;
}

// MBXP/mxeval samples: {task_id, completion, language}, one per line; the completion
// continues the prompt.
Status ConvertMbxp(const std::string& path, const std::vector<ProblemRecord>& problems,
                   const ConvertOptions& options, LoadReport* report,
                   std::vector<Sample>* samples) {
  EGCA_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(path));
  std::unordered_map<std::string, const ProblemRecord*> by_id;
  for (const ProblemRecord& p : problems) by_id.emplace(p.id, &p);
  internal::ForEachJsonlLine(text, [&](int64_t line, std::string_view rec) {
    ++report->records;
    std::string error, task_id, completion;
    std::optional<json> r = internal::ParseObject(rec, &error);
    if (!r) {
      report->Bad(path, line, error + ", skipped");
      return;
    }
    if (!internal::GetId(*r, "task_id", &task_id, &error) ||
        !internal::GetString(*r, "completion", &completion, &error)) {
      report->Bad(path, line, error + ", skipped");
      return;
    }
    if (by_id.find(task_id) == by_id.end()) {
      ++report->unmatched;
      report->Bad(path, line, fmt::format("problem \"{}\" is not among the problems, skipped",
                                          task_id));
      return;
    }
    Sample s;
    s.problem_id = task_id;
    s.completion = std::move(completion);
    s.completion_is_body = true;
    s.model = options.model.empty() ? "mbxp" : options.model;
    s.origin = fmt::format("{}:{}", path, line);
    samples->push_back(std::move(s));
    ++report->loaded;
  });
  return Status::Ok();
}

Status ConvertCodeT(const std::string& path, const std::vector<ProblemRecord>& problems,
                    const ConvertOptions& options, LoadReport* report,
                    std::vector<Sample>* samples) {
  EGCA_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(path));
  // CodeT's prompts drop the docstring examples, so exact matching is not enough: a problem
  // is a candidate when the record's prompt starts with the problem's prompt up to its
  // entry-point `def` line; ties (two problems with the same signature) go to the longest
  // common prefix of the whole prompts.
  struct Key {
    const ProblemRecord* problem;
    std::string head;
  };
  std::vector<Key> keys;
  std::unordered_map<std::string, const ProblemRecord*> exact;
  for (const ProblemRecord& p : problems) {
    exact.emplace(p.prompt, &p);
    size_t def = p.entry_point.empty() ? std::string::npos : p.prompt.find("def " + p.entry_point);
    if (def == std::string::npos) continue;
    size_t eol = p.prompt.find('\n', def);
    keys.push_back({&p, p.prompt.substr(0, eol == std::string::npos ? p.prompt.size() : eol + 1)});
  }
  auto common_prefix = [](const std::string& a, const std::string& b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
  };
  const std::string model = options.model.empty() ? "codegen16B" : options.model;
  const std::string stem = fs::path(path).filename().string();
  internal::ForEachJsonlLine(text, [&](int64_t line, std::string_view rec) {
    ++report->records;
    std::string error, prompt;
    std::vector<std::string> bodies;
    std::optional<json> r = internal::ParseObject(rec, &error);
    if (!r || !internal::GetString(*r, "prompt", &prompt, &error) ||
        !internal::GetStringList(*r, "samples", &bodies, &error)) {
      report->Bad(path, line, error + ", skipped");
      return;
    }
    const ProblemRecord* match = nullptr;
    if (auto it = exact.find(prompt); it != exact.end()) {
      match = it->second;
    } else {
      size_t best = 0;
      bool tie = false;
      for (const Key& k : keys) {
        if (prompt.rfind(k.head, 0) != 0) continue;
        size_t n = common_prefix(prompt, k.problem->prompt);
        if (n > best) {
          best = n;
          match = k.problem;
          tie = false;
        } else if (n == best) {
          tie = true;
        }
      }
      if (tie) match = nullptr;
    }
    if (!match) {
      ++report->unmatched;
      report->Bad(path, line, "prompt matches no given HumanEval problem, skipped");
      return;
    }
    for (size_t i = 0; i < bodies.size(); ++i) {
      Sample s;
      s.problem_id = match->id;
      s.completion = std::move(bodies[i]);
      s.completion_is_body = true;
      s.model = model;
      s.sample_id = fmt::format("{}:{}#{}", stem, line, i);
      s.origin = fmt::format("{}:{}", path, line);
      ++report->loaded;
      samples->push_back(std::move(s));
    }
  });
  return Status::Ok();
}

// MapCoder, LDB and Reflexion run files share their record shape closely enough: a task id,
// programs (source_codes[] / implementations[] / solution), is_solved.
Status ConvertRuns(const std::string& path, SampleSource source,
                   const std::vector<ProblemRecord>& problems, const ConvertOptions& options,
                   LoadReport* report, std::vector<Sample>* samples) {
  EGCA_ASSIGN_OR_RETURN(std::unique_ptr<RunFiles> runs, RunFiles::Open(path, options));
  ProblemIndex index(problems);
  for (const RunFile& run : runs->files()) {
    const std::string model = options.model.empty() ? ModelFromPath(source, run.relative)
                                                    : options.model;
    std::vector<Sample> file_samples;
    std::vector<BadRecord> file_bad;
    int64_t records = 0, matched = 0, with_programs = 0, unmatched = 0;
    internal::ForEachJsonlLine(run.text, [&](int64_t line, std::string_view rec) {
      ++records;
      std::string error;
      std::optional<json> r = internal::ParseObject(rec, &error);
      if (!r) {
        file_bad.push_back({run.shown, line, error + ", skipped"});
        return;
      }
      std::vector<std::string> programs = ProgramsOf(*r, options);
      if (programs.empty()) {
        file_bad.push_back({run.shown, line,
                            "no program field (source_codes, implementations, solution), skipped"});
        return;
      }
      ++with_programs;
      std::string task_id = TaskIdOf(*r);
      const ProblemRecord* problem = task_id.empty() ? nullptr : index.Find(task_id);
      if (!problem) {
        ++unmatched;
        file_bad.push_back({run.shown, line,
                            fmt::format("task \"{}\" is not among the given problems, skipped",
                                        task_id)});
        return;
      }
      ++matched;
      const int solved = SolvedOf(*r);
      for (size_t i = 0; i < programs.size(); ++i) {
        Sample s;
        s.problem_id = problem->id;
        s.completion_is_body = IsBody(programs[i], *problem);
        s.completion = std::move(programs[i]);
        s.model = model;
        s.sample_id = programs.size() == 1 ? fmt::format("{}:{}", run.relative, line)
                                           : fmt::format("{}:{}#{}", run.relative, line, i);
        s.origin = fmt::format("{}:{}", run.shown, line);
        // is_solved judges the final program only.
        s.reported_solved = i + 1 == programs.size() ? solved : -1;
        file_samples.push_back(std::move(s));
      }
    });
    report->records += records;
    report->unmatched += unmatched;
    if (matched == 0 && records > 0) {
      // A run on another data set (or a file without samples): one line, not one per record;
      // unparsable lines are still named.
      for (const BadRecord& b : file_bad) {
        if (b.message.rfind("not valid", 0) == 0) report->bad.push_back(b);
      }
      report->Bad(run.shown, 0,
                  with_programs == 0
                      ? fmt::format("no record has a program ({} records), skipped", records)
                      : fmt::format("no record matches the given problems ({} records), skipped",
                                    records));
      continue;
    }
    for (BadRecord& b : file_bad) report->bad.push_back(std::move(b));
    report->loaded += static_cast<int64_t>(file_samples.size());
    for (Sample& s : file_samples) samples->push_back(std::move(s));
  }
  return Status::Ok();
}

}  // namespace

const char* SampleSourceName(SampleSource source) {
  for (const SourceName& s : kSources) {
    if (s.source == source) return s.name;
  }
  return "codet";
}

StatusOr<SampleSource> ParseSampleSource(std::string_view name) {
  for (const SourceName& s : kSources) {
    if (name == s.name) return s.source;
  }
  return InvalidArgument(fmt::format("unknown sample source \"{}\" (expected one of {})", name,
                                     fmt::join(SampleSourceNames(), ", ")));
}

std::vector<std::string> SampleSourceNames() {
  std::vector<std::string> names;
  for (const SourceName& s : kSources) names.emplace_back(s.name);
  return names;
}

StatusOr<std::vector<Sample>> ConvertSamples(const std::string& path, SampleSource source,
                                             const std::vector<ProblemRecord>& problems,
                                             const ConvertOptions& options, LoadReport* report) {
  std::vector<Sample> samples;
  if (source == SampleSource::kCodeT) {
    EGCA_RETURN_IF_ERROR(ConvertCodeT(path, problems, options, report, &samples));
  } else if (source == SampleSource::kMbxp) {
    EGCA_RETURN_IF_ERROR(ConvertMbxp(path, problems, options, report, &samples));
  } else {
    EGCA_RETURN_IF_ERROR(ConvertRuns(path, source, problems, options, report, &samples));
  }
  return samples;
}

}  // namespace egca::datasets
