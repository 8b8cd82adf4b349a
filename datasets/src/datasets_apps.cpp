// APPS in its four shapes: the original folder layout, the codeparrot/apps JSONL export,
// MapCoder/TeamCoder's selected-problem JSONL, and APPS+ read by field mapping.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "datasets_formats.h"
#include "egca/core/files.h"
#include "egca/core/json_depth.h"

namespace egca::datasets::internal {
namespace fs = std::filesystem;

namespace {

// An optional string that may be a JSON document (codeparrot's solutions/input_output).
std::optional<json> DecodeJsonString(const json& value) {
  if (!value.is_string()) return value;
  const std::string& s = value.get_ref<const std::string&>();
  size_t first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || (s[first] != '{' && s[first] != '[')) return std::nullopt;
  if (!CheckJsonDepth(s, "").ok()) return std::nullopt;
  json doc = json::parse(s, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return std::nullopt;
  return doc;
}

// References from a string (one program, or a JSON-encoded list) or an array of strings.
bool ReferencesFrom(const json& value, std::vector<std::string>* out, std::string* error) {
  json list = value;
  if (value.is_string()) {
    std::optional<json> decoded = DecodeJsonString(value);
    if (decoded && decoded->is_array()) {
      list = *decoded;
    } else {
      if (!value.get_ref<const std::string&>().empty()) out->push_back(value.get<std::string>());
      return true;
    }
  }
  if (list.is_null()) return true;
  if (!list.is_array()) {
    *error = fmt::format("solutions must be a string or an array of strings, not {}",
                         list.type_name());
    return false;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) {
      *error = fmt::format("solutions[{}] must be a string, not {}", i, list[i].type_name());
      return false;
    }
    out->push_back(list[i].get<std::string>());
  }
  return true;
}

// Reads an optional file of an APPS problem folder; "" when absent.
StatusOr<std::string> ReadOptional(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::string();
  return ReadFile(file.string());
}

// APPS folders are zero-padded ("0001"); the codeparrot export and MapCoder's files number
// the same problems without padding (1, 3554). Ids use the number, so one problem has one id
// whichever file it came from.
std::string AppsNumber(const std::string& folder) {
  if (folder.empty() || folder.find_first_not_of("0123456789") != std::string::npos) {
    return folder;
  }
  size_t nz = folder.find_first_not_of('0');
  return nz == std::string::npos ? "0" : folder.substr(nz);
}

}  // namespace

std::optional<json> ResolveField(const json& record, const std::string& path) {
  if (path.empty()) return std::nullopt;
  json current = record;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t dot = path.find('.', pos);
    if (dot == std::string::npos) dot = path.size();
    std::string key = path.substr(pos, dot - pos);
    pos = dot + 1;
    if (current.is_string()) {
      std::optional<json> decoded = DecodeJsonString(current);
      if (!decoded) return std::nullopt;
      current = std::move(*decoded);
    }
    if (!current.is_object()) return std::nullopt;
    auto it = current.find(key);
    if (it == current.end()) return std::nullopt;
    json next = *it;
    current = std::move(next);
  }
  return current;
}

bool IsAppsDir(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec) && (fs::exists(e.path() / "input_output.json", ec) ||
                               fs::exists(e.path() / "question.txt", ec))) {
      return true;
    }
  }
  return false;
}

Status LoadAppsDir(const std::string& dir, ProblemSink* sink) {
  std::error_code ec;
  std::vector<fs::path> folders;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory() && (fs::exists(e.path() / "input_output.json") ||
                             fs::exists(e.path() / "question.txt"))) {
      folders.push_back(e.path());
    }
  }
  if (ec) return NotFound(fmt::format("{}: cannot list directory: {}", dir, ec.message()));
  std::sort(folders.begin(), folders.end());
  const std::string prefix = IdPrefix(sink->options(), "apps/");
  for (const fs::path& folder : folders) {
    if (sink->Full()) break;
    sink->Record();
    const std::string name = folder.filename().string();
    auto bad = [&](const std::string& message) {
      sink->Bad(0, fmt::format("{}: {}, skipped", name, message));
    };
    ProblemRecord p;
    p.id = prefix + AppsNumber(name);
    p.dataset = "apps";
    p.origin = (fs::path(dir) / name).string();
    p.apps_conventions = true;
    StatusOr<std::string> question = ReadOptional(folder / "question.txt");
    StatusOr<std::string> io = ReadOptional(folder / "input_output.json");
    StatusOr<std::string> solutions = ReadOptional(folder / "solutions.json");
    StatusOr<std::string> metadata = ReadOptional(folder / "metadata.json");
    StatusOr<std::string> starter = ReadOptional(folder / "starter_code.py");
    for (const auto* s : {&question, &io, &solutions, &metadata, &starter}) {
      if (!s->ok()) return s->status();
    }
    p.prompt = *question;
    p.starter_code = *starter;
    if (io->empty()) {
      bad("no input_output.json (no tests)");
      continue;
    }
    std::string error;
    std::optional<json> io_doc = ParseDocument(*io, &error);
    if (!io_doc || !io_doc->is_object()) {
      bad("input_output.json: " + (io_doc ? std::string("not a JSON object") : error));
      continue;
    }
    if (io_doc->contains("fn_name") && (*io_doc)["fn_name"].is_string()) {
      p.entry_point = (*io_doc)["fn_name"].get<std::string>();
    }
    StatusOr<std::vector<tracer::TestCase>> tests =
        tracer::TestsFromAppsInputOutput(*io, "input_output.json");
    if (!tests.ok()) {
      bad(tests.status().message());
      continue;
    }
    p.tests = std::move(*tests);
    if (!solutions->empty()) {
      std::optional<json> doc = ParseDocument(*solutions, &error);
      if (!doc) {
        bad("solutions.json: " + error);
        continue;
      }
      if (!ReferencesFrom(*doc, &p.references, &error)) {
        bad("solutions.json: " + error);
        continue;
      }
    }
    if (!metadata->empty()) {
      std::optional<json> doc = ParseDocument(*metadata, &error);
      if (doc && doc->is_object() && doc->contains("difficulty") &&
          (*doc)["difficulty"].is_string()) {
        p.difficulty = (*doc)["difficulty"].get<std::string>();
      }
    }
    sink->Add(std::move(p), 0);
  }
  return Status::Ok();
}

void LoadCodeparrotRecord(const json& r, int64_t line, const std::string& origin,
                          ProblemSink* sink) {
  std::string error, id, io;
  ProblemRecord p;
  if (!GetId(r, "problem_id", &id, &error) || !GetString(r, "question", &p.prompt, &error) ||
      !GetString(r, "input_output", &io, &error) ||
      !GetString(r, "difficulty", &p.difficulty, &error, /*optional=*/true) ||
      !GetString(r, "starter_code", &p.starter_code, &error, /*optional=*/true)) {
    sink->Bad(line, error + ", skipped");
    return;
  }
  p.id = IdPrefix(sink->options(), "apps/") + id;
  p.dataset = "codeparrot_apps";
  p.origin = origin;
  p.apps_conventions = true;
  auto sol = r.find("solutions");
  if (sol != r.end() && !ReferencesFrom(*sol, &p.references, &error)) {
    sink->Bad(line, error + ", skipped");
    return;
  }
  if (io.find_first_not_of(" \t\r\n") == std::string::npos) {
    sink->Bad(line, fmt::format("problem \"{}\" has no tests (empty input_output), skipped", p.id));
    return;
  }
  StatusOr<std::vector<tracer::TestCase>> tests =
      tracer::TestsFromAppsInputOutput(io, "input_output");
  if (!tests.ok()) {
    sink->Bad(line, tests.status().message() + ", skipped");
    return;
  }
  p.tests = std::move(*tests);
  std::optional<json> io_doc = DecodeJsonString(json(io));
  if (io_doc && io_doc->is_object() && io_doc->contains("fn_name") &&
      (*io_doc)["fn_name"].is_string()) {
    p.entry_point = (*io_doc)["fn_name"].get<std::string>();
  }
  sink->Add(std::move(p), line);
}

void LoadMapCoderRecord(const json& r, int64_t line, const std::string& origin,
                        ProblemSink* sink) {
  std::string error, id;
  ProblemRecord p;
  if (!GetId(r, "id", &id, &error) || !GetString(r, "description", &p.prompt, &error) ||
      !GetString(r, "starter_code", &p.starter_code, &error, /*optional=*/true) ||
      !GetString(r, "difficulty", &p.difficulty, &error, /*optional=*/true)) {
    sink->Bad(line, error + ", skipped");
    return;
  }
  auto list = r.find("test_list");
  if (list == r.end() || !list->is_array()) {
    sink->Bad(line, list == r.end() ? "missing field \"test_list\", skipped"
                                    : "field \"test_list\" must be an array, skipped");
    return;
  }
  p.id = IdPrefix(sink->options(), "apps/") + id;
  p.dataset = "mapcoder_apps";
  p.origin = origin;
  p.apps_conventions = true;
  const bool call_based = p.starter_code.find_first_not_of(" \t\r\n") != std::string::npos;
  std::vector<std::string> params;
  size_t required = 0;
  if (call_based) {
    std::optional<std::vector<std::string>> found =
        FirstDefParams(p.starter_code, &p.entry_point, &required);
    if (!found) {
      sink->Bad(line, fmt::format("problem \"{}\": starter_code defines no function, skipped",
                                  p.id));
      return;
    }
    params = std::move(*found);
  }
  const bool as_call =
      call_based && sink->options().mapcoder_call_tests == MapCoderCallTests::kCall;
  for (size_t i = 0; i < list->size(); ++i) {
    const json& t = (*list)[i];
    auto in = t.is_object() ? t.find("input") : t.end();
    auto out = t.is_object() ? t.find("output") : t.end();
    if (!t.is_object() || in == t.end() || !in->is_string() || out == t.end()) {
      sink->Bad(line, fmt::format("problem \"{}\": test_list[{}] needs a string \"input\" and an "
                                  "\"output\", skipped",
                                  p.id, i));
      return;
    }
    // Outputs come wrapped in a one-element list.
    const json& value = out->is_array() && out->size() == 1 ? (*out)[0] : *out;
    const std::string& input = in->get_ref<const std::string&>();
    tracer::TestCase test;
    if (as_call) {
      // str(arg) of each argument, one per line.
      std::vector<std::string> lines;
      size_t pos = 0;
      while (pos <= input.size()) {
        size_t nl = input.find('\n', pos);
        if (nl == std::string::npos) nl = input.size();
        lines.push_back(input.substr(pos, nl - pos));
        pos = nl + 1;
      }
      if (lines.size() < required || lines.size() > params.size()) {
        sink->Bad(line, fmt::format("problem \"{}\": test_list[{}] has {} input lines but {}() "
                                    "takes {} to {} arguments, skipped",
                                    p.id, i, lines.size(), p.entry_point, required,
                                    params.size()));
        return;
      }
      json args = json::array();
      for (const std::string& l : lines) {
        std::optional<json> literal = ParsePythonLiteral(l);
        args.push_back(literal ? *literal : json(l));
      }
      test = tracer::TestCase::Call(p.entry_point, Dump(args), Dump(value));
    } else {
      test = tracer::TestCase::Stdio(input, PythonStr(value));
    }
    test.name = fmt::format("test {}", i + 1);
    p.tests.push_back(std::move(test));
  }
  sink->Add(std::move(p), line);
}

void LoadAppsPlusRecord(const json& r, int64_t line, const std::string& origin,
                        ProblemSink* sink) {
  const AppsPlusFields& f = sink->options().apps_plus;
  auto bad = [&](const std::string& message) { sink->Bad(line, message + ", skipped"); };
  auto string_field = [&](const std::string& path, const char* what, std::string* out,
                          bool required) {
    std::optional<json> v = ResolveField(r, path);
    if (!v || v->is_null()) {
      if (required) bad(fmt::format("missing field \"{}\" ({})", path, what));
      return !required;
    }
    if (v->is_number_integer() && std::string(what) == "id") {
      *out = v->dump();
      return true;
    }
    if (!v->is_string()) {
      bad(fmt::format("field \"{}\" ({}) must be a string, not {}", path, what, v->type_name()));
      return false;
    }
    *out = v->get<std::string>();
    return true;
  };
  ProblemRecord p;
  std::string id, fn_name;
  if (!string_field(f.id, "id", &id, true) ||
      !string_field(f.description, "description", &p.prompt, false) ||
      !string_field(f.fn_name, "fn_name", &fn_name, false) ||
      !string_field(f.starter_code, "starter_code", &p.starter_code, false) ||
      !string_field(f.difficulty, "difficulty", &p.difficulty, false)) {
    return;
  }
  if (id.empty()) {
    bad(fmt::format("field \"{}\" (id) is empty", f.id));
    return;
  }
  p.id = IdPrefix(sink->options(), "apps_plus/") + id;
  p.dataset = "apps_plus";
  p.origin = origin;
  p.apps_conventions = true;
  p.entry_point = fn_name;
  std::string error;
  if (std::optional<json> sol = ResolveField(r, f.solution);
      sol && !ReferencesFrom(*sol, &p.references, &error)) {
    bad(error);
    return;
  }
  std::optional<json> inputs = ResolveField(r, f.inputs);
  std::optional<json> outputs = ResolveField(r, f.outputs);
  if (inputs && inputs->is_string()) inputs = DecodeJsonString(*inputs);
  if (outputs && outputs->is_string()) outputs = DecodeJsonString(*outputs);
  if (!inputs || !outputs || !inputs->is_array() || !outputs->is_array()) {
    bad(fmt::format("fields \"{}\" and \"{}\" (inputs, outputs) must be arrays", f.inputs,
                    f.outputs));
    return;
  }
  json io = {{"inputs", *inputs}, {"outputs", *outputs}};
  if (!fn_name.empty()) io["fn_name"] = fn_name;
  StatusOr<std::vector<tracer::TestCase>> tests = tracer::TestsFromAppsInputOutput(
      Dump(io), fmt::format("problem \"{}\"", p.id));
  if (!tests.ok()) {
    bad(tests.status().message());
    return;
  }
  p.tests = std::move(*tests);
  sink->Add(std::move(p), line);
}

}  // namespace egca::datasets::internal
