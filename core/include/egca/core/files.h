// Reading input files with errors that name the file.
#pragma once

#include <string>
#include <string_view>

#include "egca/core/status.h"

namespace egca {

// Reads a whole file. NOT_FOUND / INTERNAL errors name the path; a directory is
// INVALID_ARGUMENT ("<path>: is a directory, not a file").
StatusOr<std::string> ReadFile(const std::string& path);

// Reads a file, transparently gunzipping when the name ends in ".gz".
StatusOr<std::string> ReadMaybeGzipFile(const std::string& path);

// Writes a whole file atomically (temp file + rename).
Status WriteFileAtomic(const std::string& path, std::string_view contents);

// Returns the byte offset of the first invalid UTF-8 sequence, or -1 if `text` is valid.
long FindInvalidUtf8(std::string_view text);

// Reads a source program: the file must exist and be valid UTF-8 (the error names the
// file, line and column of the first bad byte).
StatusOr<std::string> ReadSourceFile(const std::string& path);

}  // namespace egca
