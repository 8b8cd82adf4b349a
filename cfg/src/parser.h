// RAII around the tree-sitter runtime and the compiled-in Python grammar. Private to cfg/.
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <memory>
#include <string_view>

#include "egca/core/status.h"

extern "C" const TSLanguage* tree_sitter_python(void);

namespace egca::cfg {

struct TsParserDeleter {
  void operator()(TSParser* p) const { ts_parser_delete(p); }
};
struct TsTreeDeleter {
  void operator()(TSTree* t) const { ts_tree_delete(t); }
};
using TsParserPtr = std::unique_ptr<TSParser, TsParserDeleter>;  // Owned.
using TsTreePtr = std::unique_ptr<TSTree, TsTreeDeleter>;        // Owned.

// Parses `source` as Python. The tree borrows nothing from `source` (tree-sitter copies
// what it needs), but node byte offsets index it. Errors: grammar/runtime ABI mismatch
// (kInternal), timeout (kResourceExhausted), source larger than 4 GiB (kInvalidArgument).
StatusOr<TsTreePtr> ParsePython(std::string_view source, uint64_t timeout_micros = 0);

// Node helpers.
inline std::string_view NodeType(TSNode n) { return ts_node_type(n); }
inline bool Is(TSNode n, std::string_view type) { return NodeType(n) == type; }
inline std::string_view NodeText(TSNode n, std::string_view source) {
  uint32_t b = ts_node_start_byte(n), e = ts_node_end_byte(n);
  if (b > source.size() || e > source.size() || e < b) return {};
  return source.substr(b, e - b);
}

}  // namespace egca::cfg
