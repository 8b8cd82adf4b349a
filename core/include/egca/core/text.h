// Small text helpers shared by the tools' human-readable outputs.
#pragma once

#include <string>
#include <string_view>

namespace egca {

// `s` with <, >, & and " replaced by their entities: safe inside HTML/SVG/XML text and
// double-quoted attribute values.
std::string XmlEscape(std::string_view s);

}  // namespace egca
