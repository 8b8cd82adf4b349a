#include "egca/core/language.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace egca {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

const char* LanguageName(Language language) {
  switch (language) {
    case Language::kPython: return "python";
    case Language::kCpp: return "cpp";
  }
  return "?";
}

std::optional<Language> ParseLanguage(std::string_view name) {
  if (name == "python" || name == "py") return Language::kPython;
  if (name == "cpp" || name == "c++" || name == "cxx") return Language::kCpp;
  return std::nullopt;
}

std::optional<Language> LanguageFromPath(std::string_view path) {
  size_t slash = path.find_last_of('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  size_t dot = base.find_last_of('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  const std::string ext = Lower(base.substr(dot + 1));
  if (ext == "py") return Language::kPython;
  static constexpr std::array<const char*, 8> kCpp = {"cpp", "cc",  "cxx", "c++",
                                                      "hpp", "hh",  "hxx", "h"};
  for (const char* e : kCpp) {
    if (ext == e) return Language::kCpp;
  }
  return std::nullopt;
}

Language SniffLanguage(std::string_view source) {
  size_t pos = 0;
  while (pos < source.size()) {
    size_t nl = source.find('\n', pos);
    std::string_view line =
        source.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? source.size() : nl + 1;
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) continue;
    line = line.substr(b);
    // A Python comment line starts with '#' too, but never with these directives.
    for (std::string_view directive : {"#include", "#define", "#pragma", "#ifndef", "#ifdef"}) {
      if (StartsWith(line, directive)) return Language::kCpp;
    }
    if (StartsWith(line, "using namespace ") || StartsWith(line, "template <") ||
        StartsWith(line, "template<")) {
      return Language::kCpp;
    }
    if (line.find("std::") != std::string_view::npos && line.find(';') != std::string_view::npos) {
      return Language::kCpp;
    }
    if (StartsWith(line, "int main(") && line.find('{') != std::string_view::npos) {
      return Language::kCpp;
    }
  }
  return Language::kPython;
}

Language DetectLanguage(std::string_view path, std::string_view source) {
  if (auto from_path = LanguageFromPath(path)) return *from_path;
  return SniffLanguage(source);
}

}  // namespace egca
