#include "egca/tracer/test_args.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <utility>

#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/core/json_depth.h"

namespace egca::tracer {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool IsIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The text with comments and blank lines removed (a crude reading: a '#' inside a string
// also starts a "comment"; only used to tell whether a file holds any code at all).
bool HasCode(const std::string& text) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    size_t b = line.find_first_not_of(" \t\r\f\v");
    if (b != std::string_view::npos && line[b] != '#') return true;
    start = end + 1;
  }
  return false;
}

// A top-level line `check(NAME)` (what HumanEval's test files and the official harness end
// with): NAME, and the byte range of that line in *line_begin / *line_end. The last such
// line wins; "" when there is none.
std::string CheckCallOf(const std::string& text, size_t* line_begin, size_t* line_end) {
  std::string name;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) {
      line.remove_suffix(1);
    }
    if (line.rfind("check(", 0) == 0 && line.size() > 7 && line.back() == ')') {
      std::string_view arg = line.substr(6, line.size() - 7);
      bool ident = !arg.empty() && !std::isdigit(static_cast<unsigned char>(arg[0])) &&
                   std::all_of(arg.begin(), arg.end(), IsIdentifierChar);
      if (ident) {
        name = std::string(arg);
        *line_begin = start;
        *line_end = std::min(text.size(), end + 1);
      }
    }
    start = end + 1;
  }
  return name;
}

// Recursive-descent reader of the Python literals repr() prints for plain values.
class ReprReader {
 public:
  explicit ReprReader(std::string_view text) : text_(text) {}

  bool Read(nlohmann::json* out) {
    if (!Value(out, 0)) return false;
    SkipSpace();
    return pos_ == text_.size();
  }

 private:
  static constexpr int kMaxDepth = 200;

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Word(std::string_view w) {
    if (text_.substr(pos_, w.size()) != w) return false;
    size_t after = pos_ + w.size();
    if (after < text_.size() && IsIdentifierChar(text_[after])) return false;
    pos_ = after;
    return true;
  }

  bool Value(nlohmann::json* out, int depth) {
    if (depth > kMaxDepth) return false;
    SkipSpace();
    if (pos_ >= text_.size()) return false;
    char c = text_[pos_];
    if (Word("None")) {
      *out = nullptr;
      return true;
    }
    if (Word("True")) {
      *out = true;
      return true;
    }
    if (Word("False")) {
      *out = false;
      return true;
    }
    if (c == '\'' || c == '"') return String(out);
    if (c == '[') return Sequence(out, ']', depth);
    if (c == '(') return Sequence(out, ')', depth);
    if (c == '{') return Dict(out, depth);
    return Number(out);
  }

  bool Sequence(nlohmann::json* out, char close, int depth) {
    ++pos_;
    *out = nlohmann::json::array();
    if (Consume(close)) return true;
    while (true) {
      nlohmann::json item;
      if (!Value(&item, depth + 1)) return false;
      out->push_back(std::move(item));
      if (Consume(close)) return true;
      if (!Consume(',')) return false;
      if (Consume(close)) return true;  // (1,)
    }
  }

  bool Dict(nlohmann::json* out, int depth) {
    ++pos_;
    *out = nlohmann::json::object();
    if (Consume('}')) return true;
    while (true) {
      nlohmann::json key, value;
      // JSON keys are strings: a dict with other keys has no JSON form the harness would
      // compare equal to it.
      if (!Value(&key, depth + 1) || !key.is_string() || !Consume(':') ||
          !Value(&value, depth + 1)) {
        return false;
      }
      (*out)[key.get<std::string>()] = std::move(value);
      if (Consume('}')) return true;
      if (!Consume(',')) return false;
    }
  }

  bool Number(nlohmann::json* out) {
    size_t b = pos_;
    if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) ++pos_;
    bool is_float = false;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E' ||
                 ((c == '-' || c == '+') && (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E'))) {
        is_float = true;
        ++pos_;
      } else {
        break;
      }
    }
    std::string digits(text_.substr(b, pos_ - b));
    if (digits.empty() || digits == "-" || digits == "+") return false;
    if (pos_ < text_.size() && IsIdentifierChar(text_[pos_])) return false;  // inf, 1j, ...
    nlohmann::json parsed =
        nlohmann::json::parse(digits[0] == '+' ? digits.substr(1) : digits, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_number()) return false;
    // Integers past 64 bits come back as floats: their JSON form would lose digits.
    if (!is_float && parsed.is_number_float()) return false;
    *out = std::move(parsed);
    return true;
  }

  static int HexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      *out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *out += static_cast<char>(0xC0 | (cp >> 6));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      *out += static_cast<char>(0xE0 | (cp >> 12));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | (cp >> 18));
      *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool String(nlohmann::json* out) {
    char quote = text_[pos_++];
    std::string value;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c != '\\') {
        value += c;
        continue;
      }
      if (pos_ >= text_.size()) return false;
      char e = text_[pos_++];
      // Python's repr() escapes: \n \t \r \\ \' \" and \xNN \uNNNN \UNNNNNNNN.
      static constexpr std::pair<char, char> kSimple[] = {
          {'n', '\n'}, {'t', '\t'}, {'r', '\r'}, {'\\', '\\'}, {'\'', '\''}, {'"', '"'}};
      auto simple = std::find_if(std::begin(kSimple), std::end(kSimple),
                                 [&](const auto& p) { return p.first == e; });
      if (simple != std::end(kSimple)) {
        value += simple->second;
        continue;
      }
      const int hex_digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
      if (hex_digits == 0) return false;
      uint32_t cp = 0;
      for (int k = 0; k < hex_digits; ++k) {
        if (pos_ >= text_.size() || HexValue(text_[pos_]) < 0) return false;
        cp = cp * 16 + static_cast<uint32_t>(HexValue(text_[pos_++]));
      }
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
      AppendUtf8(cp, &value);
    }
    if (pos_ >= text_.size()) return false;
    ++pos_;
    *out = std::move(value);
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

StatusOr<std::string> PythonReprToJson(std::string_view repr) {
  nlohmann::json value;
  if (!ReprReader(repr).Read(&value)) {
    return InvalidArgument(fmt::format(
        "{} has no JSON form (only None, booleans, numbers, strings, lists, tuples and dicts "
        "with string keys have one)",
        repr.size() > 80 ? std::string(repr.substr(0, 77)) + "..." : std::string(repr)));
  }
  return value.dump();
}

StatusOr<std::vector<TestCase>> BuildTests(const TestArgs& a) {
  using nlohmann::json;
  std::vector<TestCase> tests;
  // Options that would be silently ignored, or that ask for two kinds of test at once.
  if (!a.function.empty() && !a.stdin_files.empty()) {
    return InvalidArgument(
        "--fn and --stdin conflict: a test calls a function (--fn) or feeds standard input "
        "(--stdin), give one of them");
  }
  if (!a.function.empty() && !a.tests_file.empty()) {
    return InvalidArgument(
        "--fn and --tests conflict: the tests file already says what to run, drop --fn");
  }
  if (a.tests_file.empty() && !a.setup_file.empty()) {
    return InvalidArgument("--setup needs --tests FILE (it runs before the file's asserts)");
  }
  if (a.tests_file.empty() && !a.entry_point.empty()) {
    return InvalidArgument(
        "--entry-point needs --tests FILE (it names the function HumanEval's check() receives)");
  }
  if (a.stdin_files.empty() && !a.expect_stdout_files.empty()) {
    return InvalidArgument("--expect-stdout needs --stdin FILE (one per --stdin)");
  }
  if (!a.function.empty()) {
    if (!a.expects.empty() && a.expects.size() != a.inputs.size()) {
      return InvalidArgument(fmt::format(
          "--expect given {} times but --input {} times (one --expect per --input, or none)",
          a.expects.size(), a.inputs.size()));
    }
    std::vector<std::string> inputs = a.inputs;
    if (inputs.empty()) inputs.push_back("[]");
    for (size_t i = 0; i < inputs.size(); ++i) {
      EGCA_RETURN_IF_ERROR(CheckJsonDepth(inputs[i], "--input"));
      if (i < a.expects.size()) EGCA_RETURN_IF_ERROR(CheckJsonDepth(a.expects[i], "--expect"));
      json args = json::parse(inputs[i], nullptr, false);
      if (args.is_discarded() || !args.is_array()) {
        return InvalidArgument(
            fmt::format("--input '{}': not a JSON array of arguments", inputs[i]));
      }
      TestCase t = TestCase::Call(a.function, inputs[i]);
      if (!a.expects.empty()) {
        if (json::parse(a.expects[i], nullptr, false).is_discarded()) {
          return InvalidArgument(fmt::format("--expect '{}': not JSON", a.expects[i]));
        }
        t.expected_json = a.expects[i];
        t.has_expected = true;
      }
      std::string dumped = args.dump();
      t.name = fmt::format("{}({})", a.function, dumped.substr(1, dumped.size() - 2));
      tests.push_back(std::move(t));
    }
  } else if (!a.inputs.empty() || !a.expects.empty()) {
    return InvalidArgument("--input/--expect need --fn NAME");
  }
  if (!a.expect_stdout_files.empty() && a.expect_stdout_files.size() != a.stdin_files.size()) {
    return InvalidArgument("--expect-stdout given a different number of times than --stdin");
  }
  for (size_t i = 0; i < a.stdin_files.size(); ++i) {
    EGCA_ASSIGN_OR_RETURN(std::string input, ReadFile(a.stdin_files[i]));
    TestCase t = TestCase::Stdio(std::move(input));
    if (!a.expect_stdout_files.empty()) {
      EGCA_ASSIGN_OR_RETURN(t.expected_stdout, ReadFile(a.expect_stdout_files[i]));
      t.has_expected = true;
    }
    t.name = a.stdin_files[i];
    tests.push_back(std::move(t));
  }
  if (!a.tests_file.empty()) {
    EGCA_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(a.tests_file));
    std::string setup;
    if (!a.setup_file.empty()) {
      EGCA_ASSIGN_OR_RETURN(setup, ReadSourceFile(a.setup_file));
    }
    if (!HasCode(text)) {
      return InvalidArgument(a.tests_file + ": no test in it (the file is empty or only comments)");
    }
    if (EndsWith(a.tests_file, ".json") || EndsWith(a.tests_file, ".json.gz")) {
      EGCA_ASSIGN_OR_RETURN(std::vector<TestCase> parsed,
                            ParseTestsJson(text, a.tests_file));
      if (parsed.empty()) return InvalidArgument(a.tests_file + ": no test in it (an empty list)");
      tests.insert(tests.end(), parsed.begin(), parsed.end());
    } else if (text.find("def check(") != std::string::npos) {
      // A file that ends with `check(NAME)`, as the official harness runs it, names the
      // entry point itself; the call is dropped so that check() runs once, on the program.
      size_t call_begin = 0, call_end = 0;
      std::string called = CheckCallOf(text, &call_begin, &call_end);
      std::string entry_point = a.entry_point;
      if (!called.empty()) {
        if (!entry_point.empty() && entry_point != called) {
          return InvalidArgument(
              fmt::format("--entry-point {} but {} calls check({}); give one or make them agree",
                          entry_point, a.tests_file, called));
        }
        entry_point = called;
        text.erase(call_begin, call_end - call_begin);
      }
      if (entry_point.empty()) {
        return InvalidArgument(a.tests_file +
                               ": defines check(candidate); name the function with --entry-point");
      }
      TestCase t = TestCase::HumanEvalCheck(text, entry_point);
      t.setup_code = setup;
      t.name = fmt::format("check({})", entry_point);
      tests.push_back(std::move(t));
    } else {
      if (!a.entry_point.empty()) {
        return InvalidArgument(
            fmt::format("--entry-point {}: {} defines no check(candidate) to call it with",
                        a.entry_point, a.tests_file));
      }
      if (text.find("assert") == std::string::npos && text.find("raise") == std::string::npos) {
        return InvalidArgument(a.tests_file +
                               ": no test in it (no assert, no raise, no def check(candidate))");
      }
      std::vector<TestCase> parsed = TestsFromScript(text, setup);
      tests.insert(tests.end(), parsed.begin(), parsed.end());
    }
  }
  if (tests.empty()) {
    return InvalidArgument("no tests: give --fn NAME [--input JSON], --stdin FILE or --tests FILE");
  }
  for (size_t i = 0; i < tests.size(); ++i) {
    if (tests[i].name.empty()) tests[i].name = fmt::format("test {}", i + 1);
  }
  return tests;
}

}  // namespace egca::tracer
