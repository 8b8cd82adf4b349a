#include "egca/tracer/test_case.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "egca/core/json_depth.h"

namespace egca::tracer {
namespace {

using nlohmann::json;

// Numbers nlohmann::json cannot hold exactly (integers beyond 18 digits become doubles;
// beyond double range the parse fails) are valid JSON, and Python's json.loads reads
// them exactly: before parsing, each such number token is replaced by a string holding
// it behind this marker, and Dump() writes the token back verbatim.
constexpr std::string_view kNumberMarker = "\\u0000egca-number:";

bool NumberNeedsProtection(std::string_view token) {
  if (token.find_first_of(".eE") == std::string_view::npos) {
    return token.size() - (token[0] == '-' ? 1 : 0) > 18;  // beyond int64 (or close)
  }
  const double d = std::strtod(std::string(token).c_str(), nullptr);
  return !std::isfinite(d);
}

// `text` with the numbers nlohmann::json would not hold exactly protected (see above);
// false if the text already holds the marker.
bool ProtectNumbers(const std::string& text, std::string* out) {
  if (text.find(kNumberMarker) != std::string::npos) return false;
  out->clear();
  out->reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (in_string) {
      out->push_back(c);
      if (c == '\\' && i + 1 < text.size()) {
        out->push_back(text[i + 1]);
        i += 2;
        continue;
      }
      if (c == '"') in_string = false;
      ++i;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out->push_back(c);
      ++i;
      continue;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      size_t j = i + 1;
      while (j < text.size() &&
             (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.' ||
              text[j] == 'e' || text[j] == 'E' || text[j] == '+' || text[j] == '-')) {
        ++j;
      }
      std::string_view token(text.data() + i, j - i);
      if (token != "-" && NumberNeedsProtection(token)) {
        *out += '"';
        *out += kNumberMarker;
        *out += token;
        *out += '"';
      } else {
        out->append(token);
      }
      i = j;
      continue;
    }
    out->push_back(c);
    ++i;
  }
  return true;
}

// Dumps a JSON value without escaping non-ASCII (the harness parses it back), protected
// numbers written back as the tokens they were.
std::string Dump(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  const std::string open = "\"" + std::string(kNumberMarker);
  for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
    const size_t start = at + open.size();
    const size_t end = text.find('"', start);
    if (end == std::string::npos) break;
    const std::string token = text.substr(start, end - start);
    text.replace(at, end + 1 - at, token);
    at += token.size();
  }
  return text;
}

json ParseProtected(const std::string& text) {
  std::string protected_text;
  if (!ProtectNumbers(text, &protected_text)) return json(json::value_t::discarded);
  return json::parse(protected_text, nullptr, /*allow_exceptions=*/false);
}

StatusOr<std::string> StringField(const json& record, const char* key, const std::string& where,
                                  bool required) {
  auto it = record.find(key);
  if (it == record.end()) {
    if (required) return InvalidArgument(fmt::format("{}: missing field \"{}\"", where, key));
    return std::string();
  }
  if (!it->is_string()) {
    return InvalidArgument(fmt::format("{}: field \"{}\" must be a string", where, key));
  }
  return it->get<std::string>();
}

StatusOr<TestCase> ParseOneTest(const json& record, const std::string& where) {
  if (!record.is_object()) return InvalidArgument(where + ": a test must be a JSON object");
  EGCA_ASSIGN_OR_RETURN(std::string kind, StringField(record, "kind", where, true));
  TestCase test;
  EGCA_ASSIGN_OR_RETURN(test.name, StringField(record, "name", where, false));
  if (kind == "call") {
    test.kind = TestKind::kCall;
    EGCA_ASSIGN_OR_RETURN(test.function, StringField(record, "function", where, true));
    auto args = record.find("args");
    if (args != record.end()) {
      if (!args->is_array()) {
        return InvalidArgument(where + ": field \"args\" must be a JSON array");
      }
      test.args_json = Dump(*args);
    }
    auto expected = record.find("expected");
    if (expected != record.end()) {
      test.expected_json = Dump(*expected);
      test.has_expected = true;
    }
  } else if (kind == "stdio") {
    test.kind = TestKind::kStdio;
    EGCA_ASSIGN_OR_RETURN(test.stdin_data, StringField(record, "stdin", where, false));
    if (record.contains("expected_stdout")) {
      EGCA_ASSIGN_OR_RETURN(test.expected_stdout,
                            StringField(record, "expected_stdout", where, true));
      test.has_expected = true;
    }
  } else if (kind == "assert") {
    test.kind = TestKind::kAssert;
    EGCA_ASSIGN_OR_RETURN(test.test_code, StringField(record, "test_code", where, true));
    EGCA_ASSIGN_OR_RETURN(test.setup_code, StringField(record, "setup_code", where, false));
    EGCA_ASSIGN_OR_RETURN(test.entry_point, StringField(record, "entry_point", where, false));
    EGCA_ASSIGN_OR_RETURN(test.problem_code, StringField(record, "problem_code", where, false));
  } else {
    return InvalidArgument(
        fmt::format("{}: unknown kind \"{}\" (expected call, stdio or assert)", where, kind));
  }
  return test;
}

StatusOr<std::vector<TestCase>> FromAppsObject(const json& doc, const std::string& origin) {
  auto inputs = doc.find("inputs");
  auto outputs = doc.find("outputs");
  if (inputs == doc.end() || !inputs->is_array() || outputs == doc.end() || !outputs->is_array()) {
    return InvalidArgument(origin + ": APPS input_output needs arrays \"inputs\" and \"outputs\"");
  }
  if (inputs->size() != outputs->size()) {
    return InvalidArgument(
        fmt::format("{}: {} inputs but {} outputs", origin, inputs->size(), outputs->size()));
  }
  std::string fn_name;
  auto fn = doc.find("fn_name");
  if (fn != doc.end()) {
    if (!fn->is_string()) return InvalidArgument(origin + ": \"fn_name\" must be a string");
    fn_name = fn->get<std::string>();
  }
  std::vector<TestCase> tests;
  for (size_t i = 0; i < inputs->size(); ++i) {
    const json& in = (*inputs)[i];
    const json& out = (*outputs)[i];
    const std::string where = fmt::format("{}: test {}", origin, i + 1);
    TestCase test;
    if (!fn_name.empty()) {
      // APPS call-based inputs are the argument list.
      json args = in.is_array() ? in : json::array({in});
      test = TestCase::Call(fn_name, Dump(args), Dump(out));
    } else {
      if (!in.is_string()) return InvalidArgument(where + ": stdin input must be a string");
      // Some APPS outputs are lists of lines.
      std::string expected;
      if (out.is_string()) {
        expected = out.get<std::string>();
      } else if (out.is_array()) {
        for (const json& line : out) {
          if (!line.is_string()) return InvalidArgument(where + ": output must be text");
          expected += line.get<std::string>() + "\n";
        }
      } else {
        return InvalidArgument(where + ": output must be text");
      }
      test = TestCase::Stdio(in.get<std::string>(), std::move(expected));
    }
    test.name = fmt::format("test {}", i + 1);
    tests.push_back(std::move(test));
  }
  return tests;
}

}  // namespace

const char* TestKindName(TestKind kind) {
  switch (kind) {
    case TestKind::kCall:
      return "call";
    case TestKind::kStdio:
      return "stdio";
    case TestKind::kAssert:
      return "assert";
  }
  return "call";
}

TestCase TestCase::Call(std::string function, std::string args_json) {
  TestCase t;
  t.kind = TestKind::kCall;
  t.function = std::move(function);
  t.args_json = std::move(args_json);
  return t;
}

TestCase TestCase::Call(std::string function, std::string args_json, std::string expected_json) {
  TestCase t = Call(std::move(function), std::move(args_json));
  t.expected_json = std::move(expected_json);
  t.has_expected = true;
  return t;
}

TestCase TestCase::Stdio(std::string stdin_data) {
  TestCase t;
  t.kind = TestKind::kStdio;
  t.stdin_data = std::move(stdin_data);
  return t;
}

TestCase TestCase::Stdio(std::string stdin_data, std::string expected_stdout) {
  TestCase t = Stdio(std::move(stdin_data));
  t.expected_stdout = std::move(expected_stdout);
  t.has_expected = true;
  return t;
}

TestCase TestCase::HumanEvalCheck(std::string test_code, std::string entry_point,
                                  std::string problem_code) {
  TestCase t;
  t.kind = TestKind::kAssert;
  t.name = "check";
  t.test_code = std::move(test_code);
  t.entry_point = std::move(entry_point);
  t.problem_code = std::move(problem_code);
  return t;
}

TestCase TestCase::Asserts(std::string test_code, std::string setup_code) {
  TestCase t;
  t.kind = TestKind::kAssert;
  t.test_code = std::move(test_code);
  t.setup_code = std::move(setup_code);
  return t;
}

StatusOr<std::vector<TestCase>> ParseTestsJson(const std::string& text, const std::string& origin) {
  EGCA_RETURN_IF_ERROR(CheckJsonDepth(text, origin));
  json doc = ParseProtected(text);
  if (doc.is_discarded()) return InvalidArgument(origin + ": not valid JSON");
  if (doc.is_object()) return FromAppsObject(doc, origin);
  if (!doc.is_array()) {
    return InvalidArgument(origin + ": expected a JSON array of tests or an APPS object");
  }
  std::vector<TestCase> tests;
  for (size_t i = 0; i < doc.size(); ++i) {
    EGCA_ASSIGN_OR_RETURN(TestCase test,
                          ParseOneTest(doc[i], fmt::format("{}: test {}", origin, i + 1)));
    if (test.name.empty()) test.name = fmt::format("test {}", i + 1);
    tests.push_back(std::move(test));
  }
  return tests;
}

StatusOr<std::vector<TestCase>> TestsFromAppsInputOutput(const std::string& text,
                                                         const std::string& origin) {
  EGCA_RETURN_IF_ERROR(CheckJsonDepth(text, origin));
  json doc = ParseProtected(text);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgument(origin + ": not a JSON object");
  }
  return FromAppsObject(doc, origin);
}

std::vector<TestCase> TestsFromAssertLines(const std::vector<std::string>& assert_lines,
                                           const std::string& setup_code) {
  std::vector<TestCase> tests;
  for (size_t i = 0; i < assert_lines.size(); ++i) {
    TestCase t = TestCase::Asserts(assert_lines[i], setup_code);
    t.name = assert_lines[i];  // the assert itself: a label people can read
    tests.push_back(std::move(t));
  }
  return tests;
}

std::vector<TestCase> TestsFromScript(const std::string& script, const std::string& setup_code) {
  std::vector<std::string> lines;
  bool all_asserts = true;
  size_t start = 0;
  while (start <= script.size()) {
    size_t end = script.find('\n', start);
    if (end == std::string::npos) end = script.size();
    std::string line = script.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    start = end + 1;
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    // Indented lines are continuations of something else.
    if (line.rfind("assert ", 0) != 0 && line.rfind("assert(", 0) != 0) {
      all_asserts = false;
      break;
    }
    lines.push_back(std::move(line));
  }
  if (all_asserts && !lines.empty()) return TestsFromAssertLines(lines, setup_code);
  TestCase whole = TestCase::Asserts(script, setup_code);
  whole.name = "tests";
  return {whole};
}

}  // namespace egca::tracer
