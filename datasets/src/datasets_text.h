// Private helpers shared by the problem loaders and the sample readers/converters: one
// JSONL line splitter, JSON record parsing with one-line error messages, typed field access,
// Python-style value formatting/parsing (MapCoder APPS) and an in-memory tar reader.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "egca/datasets/problem.h"
#include "egca/core/status.h"

namespace egca::datasets::internal {

using nlohmann::json;

// Calls `visit(line, record)` for every non-blank line of `text` (1-based line numbers),
// splitting on '\n' only: a record may contain U+2028/U+2029 or a lone '\r' inside a string,
// which other splitters treat as line ends (ldb pitfall). A trailing '\r' is dropped.
void ForEachJsonlLine(std::string_view text,
                      const std::function<void(int64_t line, std::string_view record)>& visit);

// Parses one JSON record. On failure returns nullopt and sets `*error` to one line:
// "not valid UTF-8 (byte N)" or "not valid JSON: <parser message>" or "not a JSON object".
std::optional<json> ParseObject(std::string_view record, std::string* error);

// Parses a whole JSON document (any type); nullopt + one-line `*error` on failure.
std::optional<json> ParseDocument(std::string_view text, std::string* error);

// Typed field access. Each returns false and sets `*error` ("missing field \"x\"", "field
// \"x\" must be a string", ...) when the field is absent (unless optional) or ill-typed.
bool GetString(const json& record, const char* key, std::string* out, std::string* error,
               bool optional = false);
bool GetStringList(const json& record, const char* key, std::vector<std::string>* out,
                   std::string* error, bool optional = false);
// A task id that is a string or an integer ("11" / 11 -> "11").
bool GetId(const json& record, const char* key, std::string* out, std::string* error);

// Dumps `value` compactly without escaping non-ASCII text.
std::string Dump(const json& value);

// Python's str(value) for a JSON value (strings bare at top level, repr inside containers;
// True/False/None; floats as Python's repr prints them).
std::string PythonStr(const json& value);

// Parses one Python literal (int, float, str, True/False/None, list, tuple, dict with
// string keys, nested) into JSON; nullopt when `text` is not such a literal.
std::optional<json> ParsePythonLiteral(std::string_view text);

// Top-level function definitions (`def name(`, also `async def`) of Python source, in order.
std::vector<std::string> TopLevelDefs(std::string_view source);
// Parameter names of the first `def` of `source` (self/cls dropped), for starter code such
// as "def f(a, b=0):" or "class Solution:\n    def f(self, a): ...". `*required` receives
// how many of them have no default.
std::optional<std::vector<std::string>> FirstDefParams(std::string_view source,
                                                        std::string* function, size_t* required);

// Regular files of a tar archive held in memory (ustar, GNU long names, pax path). `data`
// must outlive the returned views.
struct TarEntry {
  std::string path;
  std::string_view contents;
};
StatusOr<std::vector<TarEntry>> ReadTar(std::string_view data, const std::string& origin);

// Tracks ids already loaded; Seen() reports a duplicate as a bad record and returns true.
class IdSet {
 public:
  bool Seen(const std::string& id, const std::string& origin, const std::string& file,
            int64_t line, LoadReport* report);

 private:
  std::unordered_map<std::string, std::string> first_;  // id -> origin of its first record
};

}  // namespace egca::datasets::internal
