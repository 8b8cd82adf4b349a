#include "egca/core/json_depth.h"

#include <fmt/format.h>

namespace egca {

JsonDepthScan ScanJsonDepth(std::string_view text, int max_depth) {
  JsonDepthScan out;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth) {
          out.depth = depth;
          out.exceeded_at = static_cast<long>(i);
          return out;
        }
        if (depth > out.depth) out.depth = depth;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return out;
}

Status CheckJsonDepth(std::string_view text, std::string_view what, int max_depth) {
  JsonDepthScan scan = ScanJsonDepth(text, max_depth);
  if (scan.exceeded_at < 0) return Status::Ok();
  return InvalidArgument(fmt::format("{}: JSON nested deeper than {} levels (byte {})", what,
                                     max_depth, scan.exceeded_at));
}

}  // namespace egca
