#include "egca/core/files.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "egca/core/span.h"

namespace egca {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// std::ifstream opens a directory and reads it as empty: name it instead.
Status CheckNotDirectory(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return InvalidArgument(fmt::format("{}: is a directory, not a file", path));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> ReadFile(const std::string& path) {
  EGCA_RETURN_IF_ERROR(CheckNotDirectory(path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Internal(fmt::format("{}: read error", path));
  return ss.str();
}

StatusOr<std::string> ReadMaybeGzipFile(const std::string& path) {
  if (!EndsWith(path, ".gz")) return ReadFile(path);
  EGCA_RETURN_IF_ERROR(CheckNotDirectory(path));
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return NotFound(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::string out;
  char buf[1 << 16];
  while (true) {
    int n = gzread(f, buf, sizeof buf);
    if (n < 0) {
      int err = 0;
      std::string msg = gzerror(f, &err);
      gzclose(f);
      return DataLoss(fmt::format("{}: corrupt gzip stream: {}", path, msg));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  gzclose(f);
  return out;
}

Status WriteFileAtomic(const std::string& path, std::string_view contents) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Internal(fmt::format("{}: cannot write: {}", tmp, std::strerror(errno)));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    if (!out) return Internal(fmt::format("{}: write error", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Internal(fmt::format("{}: cannot rename: {}", path, std::strerror(errno)));
  }
  return Status::Ok();
}

long FindInvalidUtf8(std::string_view s) {
  size_t i = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  while (i < s.size()) {
    unsigned char c = p[i];
    size_t n;
    uint32_t cp;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
    else return static_cast<long>(i);
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size() || (p[i + k] & 0xC0) != 0x80) return static_cast<long>(i);
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and out-of-range code points are invalid.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return static_cast<long>(i);
    }
    i += n + 1;
  }
  return -1;
}

StatusOr<std::string> ReadSourceFile(const std::string& path) {
  EGCA_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  long bad = FindInvalidUtf8(text);
  if (bad >= 0) {
    SourcePoint p = LineIndex(text).Point(static_cast<uint32_t>(bad));
    return InvalidArgument(fmt::format("{}:{}:{}: source is not valid UTF-8 (byte 0x{:02x})",
                                       path, p.line, p.column + 1,
                                       static_cast<unsigned char>(text[bad])));
  }
  return text;
}

}  // namespace egca
