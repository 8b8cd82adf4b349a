// Program extraction from LLM completions; the offset must map the code back exactly.
#include "egca/cfg/extract.h"

#include <gtest/gtest.h>

namespace egca::cfg {
namespace {

// Every byte of the code maps back to the same byte of the completion.
void ExpectSubstring(const std::string& completion, const ExtractedProgram& e) {
  if (e.dedent == 0) {
    ASSERT_LE(e.offset + e.code.size(), completion.size());
    EXPECT_EQ(completion.substr(e.offset, e.code.size()), e.code);
  }
  for (uint32_t i = 0; i < e.code.size(); ++i) {
    uint32_t at = e.ToCompletionByte(i);
    ASSERT_LT(at, completion.size());
    ASSERT_EQ(completion[at], e.code[i]) << "code byte " << i;
  }
}

TEST(Extract, BareCodeIsWhole) {
  std::string c = "def f(x):\n    return x\n";
  ExtractedProgram e = ExtractProgram(c);
  EXPECT_EQ(e.kind, ExtractionKind::kWhole);
  EXPECT_EQ(e.code, c);
  EXPECT_EQ(e.offset, 0u);
  EXPECT_EQ(e.fence_count, 0);
}

TEST(Extract, PythonFenceWithProse) {
  std::string c =
      "Here is the solution:\n\n```python\ndef f(x):\n    return x\n```\n\nIt returns x.\n";
  ExtractedProgram e = ExtractProgram(c);
  EXPECT_EQ(e.kind, ExtractionKind::kFence);
  EXPECT_EQ(e.code, "def f(x):\n    return x\n");
  EXPECT_EQ(e.offset, c.find("def"));
  ExpectSubstring(c, e);
}

TEST(Extract, MultipleFencesPickTheEntryPointDefinition) {
  std::string c =
      "Plan:\n```\nstep 1\n```\nCode:\n```python\ndef helper(a):\n    return a\n\n"
      "def solve(a):\n    return helper(a)\n```\nUsage:\n```python\nprint(solve(3))\n```\n"
      "Output:\n```text\n3\n```\n";
  ExtractedProgram e = ExtractProgram(c, ExtractOptions().set_entry_point("solve"));
  EXPECT_EQ(e.fence_count, 4);
  EXPECT_EQ(e.kind, ExtractionKind::kFence);
  EXPECT_NE(e.code.find("def solve"), std::string::npos);
  ExpectSubstring(c, e);
  // Without an entry point: the last Python block that defines something (same block).
  EXPECT_EQ(ExtractProgram(c).code, e.code);
}

TEST(Extract, LaterRevisionWinsForTheSameEntryPoint) {
  std::string c =
      "```python\ndef f():\n    return 1\n```\nFixed:\n```py\ndef f():\n    return 2\n```\n";
  ExtractedProgram e = ExtractProgram(c, ExtractOptions().set_entry_point("f"));
  EXPECT_NE(e.code.find("return 2"), std::string::npos);
  ExpectSubstring(c, e);
}

TEST(Extract, OtherLanguagesOnlyAsLastResort) {
  std::string c = "```bash\npip install x\n```\n```\nx = 1\n```\n";
  EXPECT_EQ(ExtractProgram(c).code, "x = 1\n");
  std::string only_text = "```text\nhello\n```\n";
  EXPECT_EQ(ExtractProgram(only_text).code, "hello\n");
}

TEST(Extract, UnclosedFenceRunsToTheEnd) {
  std::string c = "Sure.\n```python\ndef f(x):\n    return x +";
  ExtractedProgram e = ExtractProgram(c);
  EXPECT_EQ(e.kind, ExtractionKind::kUnclosedFence);
  EXPECT_EQ(e.code, "def f(x):\n    return x +");
  ExpectSubstring(c, e);
}

TEST(Extract, LeadingAndTrailingProseWithoutFence) {
  std::string c =
      "Sure! The function below sums the list.\nimport math\ndef f(xs):\n    return sum(xs)\n"
      "This runs in O(n) time.\n";
  ExtractedProgram e = ExtractProgram(c);
  EXPECT_EQ(e.kind, ExtractionKind::kProseTrimmed);
  EXPECT_EQ(e.code, "import math\ndef f(xs):\n    return sum(xs)\n");
  EXPECT_EQ(e.offset, c.find("import"));
  ExpectSubstring(c, e);
}

TEST(Extract, NothingPythonLikeIsLeftWhole) {
  std::string c = "I cannot solve this problem.";
  ExtractedProgram e = ExtractProgram(c);
  EXPECT_EQ(e.kind, ExtractionKind::kWhole);
  EXPECT_EQ(e.code, c);
}

TEST(Extract, IndentedFenceAndTildes) {
  std::string c = "1. Code:\n   ```python\n   x = 1\n   ```\n~~~\ny = 2\n~~~\n";
  ExtractedProgram e = ExtractProgram(c);
  EXPECT_EQ(e.fence_count, 2);
  ExpectSubstring(c, e);
  // No block defines anything: the longest, dedented (it sat inside a list item).
  EXPECT_EQ(e.code, "x = 1\n");
  EXPECT_EQ(e.dedent, 3u);
  EXPECT_EQ(e.offset, c.find("x = 1"));
}

TEST(Extract, ForgottenClosingFenceBeforeTheNextBlock) {
  // From a real MapCoder response: an example block in a list item is never closed, the
  // solution block follows.
  std::string c =
      "1. Example:\n   ```python\n   def lis(nums):\n       return max(nums)\n\n"
      "## Code:\n```python\ndef fib4(n):\n    return n\n```\n";
  ExtractedProgram e = ExtractProgram(c, ExtractOptions().set_entry_point("fib4"));
  EXPECT_EQ(e.fence_count, 2);
  EXPECT_EQ(e.code, "def fib4(n):\n    return n\n");
  EXPECT_EQ(e.kind, ExtractionKind::kFence);
  ExpectSubstring(c, e);
  ExtractedProgram lis = ExtractProgram(c, ExtractOptions().set_entry_point("lis"));
  EXPECT_EQ(lis.kind, ExtractionKind::kUnclosedFence);
  // The prose heading that follows is a comment to Python; comments keep their column.
  EXPECT_EQ(lis.code, "def lis(nums):\n    return max(nums)\n\n## Code:\n");
  EXPECT_EQ(lis.dedent, 3u);
  ExpectSubstring(c, lis);
}

TEST(Extract, IndentedCompletionIsDedented) {
  std::string c = "     def f(s):\n         if s:\n             return 1\n\n         return 0\n";
  ExtractedProgram e = ExtractProgram(c);
  EXPECT_EQ(e.code, "def f(s):\n    if s:\n        return 1\n\n    return 0\n");
  EXPECT_EQ(e.dedent, 5u);
  ExpectSubstring(c, e);
  EXPECT_EQ(e.ToCompletionByte(static_cast<uint32_t>(e.code.find("return 0"))), c.find("return 0"));
}

}  // namespace
}  // namespace egca::cfg
