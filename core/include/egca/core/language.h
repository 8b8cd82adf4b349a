// Which language a candidate or reference program is written in, for the tools that take
// both (egca-run, egca-trace, egca-cfg, egca-batch): `--lang python|cpp|auto`.
//
// Detection (auto): the file extension first (.py -> Python; .cpp .cc .cxx .c++ .hpp .hh
// .hxx .h -> C++), then the content: a line starting with a preprocessor directive
// (`#include`, `#define`, `#pragma`), `using namespace`, `template <`, `std::`, or a brace-
// bodied `int main(` reads as C++; anything else (including a file with neither sign)
// is Python, egca's default language.
#pragma once

#include <optional>
#include <string_view>

namespace egca {

enum class Language { kPython, kCpp };

// "python", "cpp".
const char* LanguageName(Language language);

// "python" / "py" -> kPython, "cpp" / "c++" / "cxx" -> kCpp (case-sensitive); nullopt
// otherwise ("auto" included: callers treat it as "detect").
std::optional<Language> ParseLanguage(std::string_view name);

// From the extension of `path`; nullopt when it names neither language.
std::optional<Language> LanguageFromPath(std::string_view path);

// From the program text alone (see the file comment).
Language SniffLanguage(std::string_view source);

// The extension, else the content.
Language DetectLanguage(std::string_view path, std::string_view source);

}  // namespace egca
