#include "parser.h"

#include <fmt/format.h>

#include <limits>

namespace egca::cfg {

StatusOr<TsTreePtr> ParsePython(std::string_view source, uint64_t timeout_micros) {
  if (source.size() > std::numeric_limits<uint32_t>::max()) {
    return InvalidArgument(
        fmt::format("source of {} bytes exceeds tree-sitter's 4 GiB limit", source.size()));
  }
  TsParserPtr parser(ts_parser_new());
  if (!parser) return Internal("ts_parser_new failed");
  if (!ts_parser_set_language(parser.get(), tree_sitter_python())) {
    return Internal(
        fmt::format("tree-sitter-python grammar ABI {} is not supported by the tree-sitter runtime",
                    ts_language_version(tree_sitter_python())));
  }
  ts_parser_set_timeout_micros(parser.get(), timeout_micros);
  TsTreePtr tree(ts_parser_parse_string(parser.get(), nullptr, source.data(),
                                        static_cast<uint32_t>(source.size())));
  if (!tree) {
    return ResourceExhausted(
        fmt::format("tree-sitter gave up parsing after {} us", timeout_micros));
  }
  return tree;
}

}  // namespace egca::cfg
