// A bound on the nesting depth of JSON text, checked before any parser sees it.
//
// nlohmann::json parses iteratively, but dump(), copies and comparisons recurse once per
// level: 1.5M nested brackets in a 3 MB request took egca-serve down with a stack overflow.
// Every place where JSON enters egca (requests, problem and sample files, test strings,
// stores, configs) checks the text with CheckJsonDepth first, so no JSON value deeper than
// kMaxJsonDepth is ever built.
#pragma once

#include <cstddef>
#include <string_view>

#include "egca/core/status.h"

namespace egca {

// Deep enough for any data set's tests (nested lists, dicts of lists, ...) and for egca's
// own files; shallow enough that every recursive walk stays far from the stack's end.
inline constexpr int kMaxJsonDepth = 256;

// Depth of the deepest bracket of `text` ('[' and '{' outside strings; a string's '\"'
// escapes are honoured), or the first byte where `max_depth` is exceeded. The scan is
// linear and stops at the first excess; it does not validate JSON (the parser does).
struct JsonDepthScan {
  int depth = 0;          // deepest level seen (up to max_depth + 1)
  long exceeded_at = -1;  // byte offset of the bracket past max_depth, or -1
};
JsonDepthScan ScanJsonDepth(std::string_view text, int max_depth = kMaxJsonDepth);

// OK, or INVALID_ARGUMENT "<what>: JSON nested deeper than 256 levels (byte N)".
Status CheckJsonDepth(std::string_view text, std::string_view what,
                      int max_depth = kMaxJsonDepth);

}  // namespace egca
