#include "egca/core/remove_tree.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace egca {
namespace {

namespace fs = std::filesystem;

fs::path FreshDir(const std::string& name) {
  const fs::path d =
      fs::path(::testing::TempDir()) / ("remove_tree_" + name + "_" + std::to_string(getpid()));
  std::error_code ec;
  RemoveTree(d, ec);
  fs::create_directories(d);
  return d;
}

void Touch(const fs::path& p, const std::string& text = "x") { std::ofstream(p) << text; }

TEST(RemoveTree, RemovesANestedTreeAndCountsEveryEntry) {
  const fs::path root = FreshDir("nested");
  fs::create_directories(root / "a" / "b" / "c");
  Touch(root / "top.txt");
  Touch(root / "a" / "one");
  Touch(root / "a" / "b" / "two");
  Touch(root / "a" / "b" / "c" / "three");
  fs::create_directories(root / "empty");
  std::error_code ec;
  // root, a, a/b, a/b/c, empty (5 directories) + 4 files.
  EXPECT_EQ(RemoveTree(root, ec), 9u);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_FALSE(fs::exists(root));
}

TEST(RemoveTree, RemovesLinksWithoutFollowingThem) {
  const fs::path outside = FreshDir("outside");
  Touch(outside / "keep.txt", "precious");
  const fs::path root = FreshDir("links");
  fs::create_directory_symlink(outside, root / "to_dir");
  fs::create_symlink(outside / "keep.txt", root / "to_file");
  fs::create_symlink(root / "missing", root / "dangling");
  std::error_code ec;
  EXPECT_EQ(RemoveTree(root, ec), 4u);  // three links + root
  EXPECT_FALSE(ec);
  EXPECT_FALSE(fs::exists(root));
  EXPECT_TRUE(fs::exists(outside / "keep.txt"));  // what the links pointed at stays
  // A link given as the path itself: the link goes, its target stays.
  const fs::path link =
      fs::path(::testing::TempDir()) / ("remove_tree_link_" + std::to_string(getpid()));
  fs::remove(link, ec);
  fs::create_directory_symlink(outside, link);
  EXPECT_EQ(RemoveTree(link, ec), 1u);
  EXPECT_FALSE(fs::is_symlink(link));
  EXPECT_TRUE(fs::exists(outside / "keep.txt"));
  EXPECT_EQ(RemoveTree(outside), 2u);
}

TEST(RemoveTree, AMissingPathIsNoErrorAndAFileIsOneEntry) {
  const fs::path root = FreshDir("single");
  std::error_code ec;
  EXPECT_EQ(RemoveTree(root / "not-there", ec), 0u);
  EXPECT_FALSE(ec);
  Touch(root / "f");
  EXPECT_EQ(RemoveTree(root / "f", ec), 1u);
  EXPECT_FALSE(ec);
  EXPECT_EQ(RemoveTree(root), 1u);
}

TEST(RemoveTree, ReportsAnErrorItCannotGetPast) {
  // A path through a regular file: lstat fails with ENOTDIR, which is an error, not "missing".
  const fs::path root = FreshDir("error");
  Touch(root / "file");
  std::error_code ec;
  EXPECT_EQ(RemoveTree(root / "file" / "below", ec), 0u);
  EXPECT_TRUE(ec);
  EXPECT_EQ(ec.value(), ENOTDIR);
  EXPECT_THROW(RemoveTree(root / "file" / "below"), fs::filesystem_error);
  EXPECT_EQ(RemoveTree(root), 2u);
}

}  // namespace
}  // namespace egca
