// RemoveTree: std::filesystem::remove_all's job (remove a file or a directory and everything
// under it, symbolic links removed, never followed) done with POSIX nftw, header-only.
//
// Why not std::filesystem::remove_all: PyTorch's pip wheels export their own copies of some
// std::filesystem functions from libtorch.so, and a program linked against that LibTorch can
// bind to them; remove_all(path, error_code) then crashed by calling a null pointer
// (measured on the lent H200 with torch 2.11.0+cu130: bench/train_step at its clean-up,
// dist_allreduce after writing its checkpoint; docs/PERFORMANCE.md "GPU"). egca-train clears
// run directories and old checkpoints this way, so the trainer uses RemoveTree.
#pragma once

#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <system_error>

namespace egca {

namespace internal {

inline thread_local std::uintmax_t remove_tree_count = 0;
inline thread_local int remove_tree_errno = 0;

inline int RemoveTreeEntry(const char* path, const struct stat*, int type, struct FTW*) {
  // FTW_DEPTH: a directory comes after its contents; FTW_PHYS: links are not followed.
  const int rc = (type == FTW_DP || type == FTW_D) ? ::rmdir(path) : ::unlink(path);
  if (rc != 0) {
    if (errno == ENOENT) return 0;  // gone meanwhile
    remove_tree_errno = errno;
    return 1;  // stops the walk
  }
  ++remove_tree_count;
  return 0;
}

}  // namespace internal

// Removes `path` (a file, a link or a directory tree). Returns the number of entries removed;
// a path that does not exist removes 0 and is no error. On error, sets `ec` and returns
// what was removed before it.
inline std::uintmax_t RemoveTree(const std::filesystem::path& path, std::error_code& ec) {
  ec.clear();
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) ec.assign(errno, std::generic_category());
    return 0;
  }
  internal::remove_tree_count = 0;
  internal::remove_tree_errno = 0;
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(path.c_str()) != 0) {
      if (errno != ENOENT) ec.assign(errno, std::generic_category());
      return 0;
    }
    return 1;
  }
  const int rc = ::nftw(path.c_str(), internal::RemoveTreeEntry, 64, FTW_DEPTH | FTW_PHYS);
  if (rc != 0) {
    ec.assign(internal::remove_tree_errno != 0 ? internal::remove_tree_errno : errno,
              std::generic_category());
  }
  return internal::remove_tree_count;
}

// The same; an error throws std::filesystem::filesystem_error naming `path`.
inline std::uintmax_t RemoveTree(const std::filesystem::path& path) {
  std::error_code ec;
  const std::uintmax_t n = RemoveTree(path, ec);
  if (ec) throw std::filesystem::filesystem_error("cannot remove", path, ec);
  return n;
}

}  // namespace egca
