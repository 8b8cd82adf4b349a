#include "egca/core/language.h"

#include <gtest/gtest.h>

namespace egca {
namespace {

TEST(Language, ParseNames) {
  EXPECT_EQ(ParseLanguage("python"), Language::kPython);
  EXPECT_EQ(ParseLanguage("py"), Language::kPython);
  EXPECT_EQ(ParseLanguage("cpp"), Language::kCpp);
  EXPECT_EQ(ParseLanguage("c++"), Language::kCpp);
  EXPECT_EQ(ParseLanguage("auto"), std::nullopt);
  EXPECT_EQ(ParseLanguage("rust"), std::nullopt);
  EXPECT_STREQ(LanguageName(Language::kCpp), "cpp");
  EXPECT_STREQ(LanguageName(Language::kPython), "python");
}

TEST(Language, FromExtension) {
  EXPECT_EQ(LanguageFromPath("a/b/sol.cpp"), Language::kCpp);
  EXPECT_EQ(LanguageFromPath("sol.CC"), Language::kCpp);
  EXPECT_EQ(LanguageFromPath("x.cxx"), Language::kCpp);
  EXPECT_EQ(LanguageFromPath("x.hpp"), Language::kCpp);
  EXPECT_EQ(LanguageFromPath("x.py"), Language::kPython);
  EXPECT_EQ(LanguageFromPath("x.txt"), std::nullopt);
  EXPECT_EQ(LanguageFromPath("dir.cpp/noext"), std::nullopt);
  EXPECT_EQ(LanguageFromPath(".cpp"), std::nullopt);  // a hidden file, not an extension
}

TEST(Language, SniffContent) {
  EXPECT_EQ(SniffLanguage("#include <vector>\nint f() { return 1; }\n"), Language::kCpp);
  EXPECT_EQ(SniffLanguage("  using namespace std;\n"), Language::kCpp);
  EXPECT_EQ(SniffLanguage("int main() {\n  return 0;\n}\n"), Language::kCpp);
  EXPECT_EQ(SniffLanguage("std::vector<int> v;\n"), Language::kCpp);
  // Python comments start with '#' but are not directives.
  EXPECT_EQ(SniffLanguage("# include this\ndef f():\n    return 1\n"), Language::kPython);
  EXPECT_EQ(SniffLanguage("print('std::x')\n"), Language::kPython);
  EXPECT_EQ(SniffLanguage(""), Language::kPython);
}

TEST(Language, ExtensionWinsOverContent) {
  EXPECT_EQ(DetectLanguage("p.py", "#include <x>\n"), Language::kPython);
  EXPECT_EQ(DetectLanguage("p.txt", "#include <x>\n"), Language::kCpp);
  EXPECT_EQ(DetectLanguage("p", "def f(): pass\n"), Language::kPython);
}

}  // namespace
}  // namespace egca
