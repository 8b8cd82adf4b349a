#include "egca/core/files.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace egca {
namespace {

TEST(Utf8, AcceptsValidAndFindsFirstBadByte) {
  EXPECT_EQ(FindInvalidUtf8("plain ascii"), -1);
  EXPECT_EQ(FindInvalidUtf8("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80"), -1);
  EXPECT_EQ(FindInvalidUtf8("ab\xff"), 2);
  EXPECT_EQ(FindInvalidUtf8("ab\xc3"), 2);           // truncated sequence
  EXPECT_EQ(FindInvalidUtf8("\xc0\xaf"), 0);         // overlong '/'
  EXPECT_EQ(FindInvalidUtf8("x\xed\xa0\x80"), 1);    // UTF-16 surrogate
  EXPECT_EQ(FindInvalidUtf8("\xf4\x90\x80\x80"), 0); // > U+10FFFF
}

TEST(ReadSourceFile, NamesFileLineAndColumnOfBadByte) {
  std::string path = ::testing::TempDir() + "/bad_utf8.py";
  {
    std::ofstream out(path, std::ios::binary);
    out << "x = 1\ny = '\xff'\n";
  }
  auto r = ReadSourceFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(path + ":2:6:"), std::string::npos) << r.status().message();
  std::remove(path.c_str());
}

TEST(ReadFile, MissingFileIsNotFoundAndNamed) {
  auto r = ReadFile("/nonexistent/egca/x.py");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/egca/x.py"), std::string::npos);
}

TEST(ReadMaybeGzipFile, ReadsHumanEval) {
  auto r = ReadMaybeGzipFile(std::string(EGCA_DATA_DIR) + "/humaneval/HumanEval.jsonl.gz");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(r->find("HumanEval/163"), std::string::npos);
}

}  // namespace
}  // namespace egca
