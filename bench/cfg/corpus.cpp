#include "corpus.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "egca/core/files.h"

namespace egca::cfg::corpus {
namespace fs = std::filesystem;
using json = nlohmann::json;

StatusOr<std::string> TempExtract::Into(const std::string& tarball, TempExtract* holder) {
  std::string tmpl = (fs::temp_directory_path() / "egca-cfg-corpus-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) return Internal(fmt::format("mkdtemp {} failed", tmpl));
  holder->dir_ = tmpl;
  pid_t pid = fork();
  if (pid < 0) return Internal("fork failed");
  if (pid == 0) {
    execlp("tar", "tar", "xzf", tarball.c_str(), "-C", tmpl.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return DataLoss(fmt::format("{}: tar xzf failed (status {})", tarball, status));
  }
  return tmpl;
}

TempExtract::~TempExtract() {
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

namespace {

bool DefinesFunction(const std::string& code, const std::string& name) {
  return !name.empty() && code.find("def " + name) != std::string::npos;
}

void VisitRecord(const json& r, const std::string& where, const std::string& dataset,
                 const std::function<void(const Program&)>& visit) {
  auto str = [&](const char* k) -> std::string {
    auto it = r.find(k);
    return it != r.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::string prompt = str("prompt"), entry = str("entry_point");
  auto emit = [&](const std::string& field, size_t i, const std::string& text, bool completion) {
    if (text.empty()) return;
    visit(Program{fmt::format("{}:{}[{}]", where, field, i), dataset, text, completion});
  };
  // A body-only solution (HumanEval style) is completed by its prompt.
  auto program_of = [&](const std::string& code) {
    if (!prompt.empty() && !entry.empty() && !DefinesFunction(code, entry)) return prompt + code;
    return code;
  };
  for (const char* field : {"source_codes", "implementations", "solution", "samples"}) {
    auto it = r.find(field);
    if (it == r.end()) continue;
    if (it->is_string()) emit(field, 0, program_of(it->get<std::string>()), false);
    if (it->is_array()) {
      for (size_t i = 0; i < it->size(); ++i) {
        if ((*it)[i].is_string()) emit(field, i, program_of((*it)[i].get<std::string>()), false);
      }
    }
  }
  for (const char* field : {"canonical_solution", "code"}) {
    std::string c = str(field);
    if (!c.empty()) emit(field, 0, program_of(c), false);
  }
  std::string completion = str("completion");
  if (!completion.empty()) emit("completion", 0, completion, true);
  auto it = r.find("responses");
  if (it != r.end() && it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) {
      if ((*it)[i].is_string()) emit("responses", i, (*it)[i].get<std::string>(), true);
    }
  }
}

Status VisitJsonl(const std::string& path, const std::string& shown, const std::string& dataset,
                  const std::function<void(const Program&)>& visit, Stats* stats) {
  EGCA_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(path));
  ++stats->files;
  // Records are split on '\n' only: some contain U+2028 (data README pitfall).
  size_t pos = 0;
  int64_t line = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string_view rec(text.data() + pos, nl - pos);
    pos = nl + 1;
    ++line;
    if (rec.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    ++stats->records;
    json r = json::parse(rec, nullptr, /*allow_exceptions=*/false);
    if (r.is_discarded() || !r.is_object()) {
      ++stats->bad_records;
      stats->bad_record_messages.push_back(
          fmt::format("{}:{}: not a JSON object, skipped", shown, line));
      continue;
    }
    VisitRecord(r, fmt::format("{}:{}", shown, line), dataset, visit);
  }
  return Status::Ok();
}

}  // namespace

Status ForEachProgram(const Options& options, const std::function<void(const Program&)>& visit,
                      Stats* stats) {
  const std::string& d = options.data_dir;
  // CodeT: prompt + each sampled body.
  {
    std::string path = d + "/samples/codet/HumanEval_codegen16B_temp0.8_topp0.95_num100.jsonl.gz";
    EGCA_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(path));
    ++stats->files;
    int64_t taken = 0, line = 0;
    size_t pos = 0;
    while (pos < text.size() && (options.max_codet < 0 || taken < options.max_codet)) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      std::string_view rec(text.data() + pos, nl - pos);
      pos = nl + 1;
      ++line;
      if (rec.empty()) continue;
      ++stats->records;
      json r = json::parse(rec, nullptr, false);
      if (r.is_discarded() || !r.contains("prompt") || !r.contains("samples")) {
        ++stats->bad_records;
        stats->bad_record_messages.push_back(fmt::format("{}:{}: malformed, skipped", path, line));
        continue;
      }
      const std::string prompt = r["prompt"].get<std::string>();
      const json& samples = r["samples"];
      for (size_t i = 0; i < samples.size(); ++i) {
        if (options.max_codet >= 0 && taken >= options.max_codet) break;
        if (!samples[i].is_string()) continue;
        visit(Program{fmt::format("codet:{}:samples[{}]", line, i), "codet",
                      prompt + samples[i].get<std::string>(), false});
        ++taken;
      }
    }
  }
  // HumanEval canonical solutions.
  EGCA_RETURN_IF_ERROR(
      VisitJsonl(d + "/humaneval/HumanEval.jsonl.gz", "humaneval", "humaneval", visit, stats));
  if (!options.tarballs) return Status::Ok();
  const std::vector<std::pair<std::string, std::string>> tarballs = {
      {"mapcoder", "/samples/mapcoder/final-results.tar.gz"},
      {"ldb", "/samples/ldb/ldb.tar.gz"},
      {"reflexion", "/samples/reflexion/programming_runs.tar.gz"},
  };
  for (const auto& [name, rel] : tarballs) {
    TempExtract holder;
    EGCA_ASSIGN_OR_RETURN(std::string dir, TempExtract::Into(d + rel, &holder));
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.is_regular_file() && e.path().extension() == ".jsonl") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      std::string shown = name + ":" + fs::relative(f, dir).string();
      EGCA_RETURN_IF_ERROR(VisitJsonl(f.string(), shown, name, visit, stats));
    }
  }
  return Status::Ok();
}

}  // namespace egca::cfg::corpus
