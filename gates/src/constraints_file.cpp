// Constraint files: a JSON object keyed by problem id, or JSONL records
// {"problem_id", "constraints"}; see constraints.h.
#include <algorithm>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/core/json_depth.h"
#include "egca/gates/constraints.h"

namespace egca::gates {
namespace {

using nlohmann::json;

StatusOr<ConstraintSpec> ParseEntry(const json& entry) {
  if (!entry.is_object())
    return InvalidArgument("an entry must be an object {\"kind\", \"value\"}");
  ConstraintSpec spec;
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    if (key == "kind") {
      if (!v.is_string()) return InvalidArgument("\"kind\" must be a string");
      spec.kind = v.get<std::string>();
    } else if (key == "value") {
      if (v.is_null()) {
        spec.value = std::monostate{};
      } else if (v.is_number_integer()) {
        if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX})
          return InvalidArgument("\"value\" out of range");
        spec.value = v.get<int64_t>();
      } else if (v.is_string()) {
        spec.value = v.get<std::string>();
      } else {
        return InvalidArgument(
            fmt::format("\"value\" must be an integer or a string, not {}", v.dump()));
      }
    } else if (key == "note") {
      if (!v.is_string()) return InvalidArgument("\"note\" must be a string");
      spec.note = v.get<std::string>();
    } else {
      return InvalidArgument(fmt::format("unknown field \"{}\" (fields: kind, value, note)", key));
    }
  }
  if (spec.kind.empty()) return InvalidArgument("missing \"kind\"");
  EGCA_RETURN_IF_ERROR(ValidateConstraintSpec(spec));
  return spec;
}

// One problem's list; `where` prefixes errors ("c.json: problem X" / "c.jsonl:3: problem X").
Status ParseProblem(const std::string& where, const std::string& id, const json& list,
                    ConstraintsByProblem* out) {
  if (!list.is_array())
    return InvalidArgument(fmt::format("{}: problem {}: constraints must be an array", where, id));
  std::vector<ConstraintSpec> specs;
  for (size_t i = 0; i < list.size(); ++i) {
    auto spec = ParseEntry(list[i]);
    if (!spec.ok())
      return InvalidArgument(
          fmt::format("{}: problem {}, entry {}: {}", where, id, i, spec.status().message()));
    specs.push_back(std::move(spec).value());
  }
  if (!out->emplace(id, std::move(specs)).second)
    return InvalidArgument(fmt::format("{}: problem {} given twice", where, id));
  return Status::Ok();
}

Status ParseRecord(const std::string& where, const json& record, ConstraintsByProblem* out) {
  if (!record.is_object() || !record.contains("problem_id") || !record.contains("constraints"))
    return InvalidArgument(
        fmt::format("{}: a record must be {{\"problem_id\": ..., \"constraints\": [...]}}", where));
  const json& id = record["problem_id"];
  std::string key;
  if (id.is_string()) {
    key = id.get<std::string>();
  } else if (id.is_number_integer()) {
    key = id.dump();  // MBPP-style integer ids
  } else {
    return InvalidArgument(fmt::format("{}: problem_id must be a string or an integer", where));
  }
  for (auto it = record.begin(); it != record.end(); ++it)
    if (it.key() != "problem_id" && it.key() != "constraints")
      return InvalidArgument(
          fmt::format("{}: problem {}: unknown field \"{}\"", where, key, it.key()));
  return ParseProblem(where, key, record["constraints"], out);
}

bool IsRecord(const json& j) {
  return j.is_object() && j.size() == 2 && j.contains("problem_id") && j.contains("constraints");
}

}  // namespace

StatusOr<ConstraintsByProblem> ParseConstraints(std::string_view text, std::string_view origin) {
  const std::string where(origin);
  ConstraintsByProblem out;
  EGCA_RETURN_IF_ERROR(CheckJsonDepth(text, where));
  json whole = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!whole.is_discarded()) {
    if (IsRecord(whole)) {
      // A one-line JSONL file: name its line like any other JSONL record.
      size_t first = text.find_first_not_of(" \t\r\n");  // the text parsed: not empty
      size_t last = text.find_last_not_of(" \t\r\n");
      bool one_line = text.substr(first, last - first + 1).find('\n') == std::string_view::npos;
      size_t first_line =
          1 + static_cast<size_t>(std::count(text.begin(), text.begin() + first, '\n'));
      EGCA_RETURN_IF_ERROR(
          ParseRecord(one_line ? fmt::format("{}:{}", where, first_line) : where, whole, &out));
    } else if (whole.is_object()) {
      for (auto it = whole.begin(); it != whole.end(); ++it)
        EGCA_RETURN_IF_ERROR(ParseProblem(where, it.key(), it.value(), &out));
    } else if (whole.is_array()) {
      for (size_t i = 0; i < whole.size(); ++i)
        EGCA_RETURN_IF_ERROR(ParseRecord(fmt::format("{}: record {}", where, i), whole[i], &out));
    } else {
      return InvalidArgument(
          fmt::format("{}: expected a JSON object keyed by problem id, or JSONL records", where));
    }
    return out;
  }
  // Not one JSON document: JSONL (one record per line, blank lines allowed), unless its
  // first line is not JSON either, in which case the document's own parse error is the
  // better message (a broken pretty-printed object).
  size_t first = text.find_first_not_of(" \t\r\n");
  size_t first_end = first == std::string_view::npos ? text.size() : text.find('\n', first);
  if (first != std::string_view::npos &&
      json::parse(text.substr(first, first_end == std::string_view::npos ? std::string_view::npos
                                                                         : first_end - first),
                  nullptr, false)
          .is_discarded()) {
    try {
      json ignored = json::parse(text);
    } catch (const json::parse_error& e) {
      size_t line = 1 + static_cast<size_t>(std::count(
                            text.begin(), text.begin() + std::min(e.byte, text.size()), '\n'));
      return InvalidArgument(fmt::format("{}:{}: not valid JSON: {}", where, line, e.what()));
    }
  }
  size_t line_no = 0;
  for (size_t pos = 0; pos <= text.size();) {
    size_t nl = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    std::string at = fmt::format("{}:{}", where, line_no);
    json record;
    try {
      record = json::parse(line);
    } catch (const json::parse_error& e) {
      return InvalidArgument(fmt::format("{}: not valid JSON: {}", at, e.what()));
    }
    EGCA_RETURN_IF_ERROR(ParseRecord(at, record, &out));
  }
  return out;
}

StatusOr<ConstraintsByProblem> ReadConstraintsFile(const std::string& path) {
  EGCA_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(path));
  return ParseConstraints(text, path);
}

std::string FormatConstraints(const ConstraintsByProblem& constraints) {
  // One entry per line: diffable, and easy to edit by hand.
  std::string out = "{";
  bool first_problem = true;
  for (const auto& [id, specs] : constraints) {
    out += first_problem ? "\n" : ",\n";
    first_problem = false;
    out += "  " + json(id).dump() + ": [";
    for (size_t i = 0; i < specs.size(); ++i) {
      const ConstraintSpec& s = specs[i];
      std::string line = "{\"kind\": " + json(s.kind).dump();
      if (std::holds_alternative<int64_t>(s.value))
        line += ", \"value\": " + json(std::get<int64_t>(s.value)).dump();
      else if (std::holds_alternative<std::string>(s.value))
        line += ", \"value\": " + json(std::get<std::string>(s.value)).dump();
      if (!s.note.empty()) line += ", \"note\": " + json(s.note).dump();
      line += "}";
      out += (i == 0 ? "\n    " : ",\n    ") + line;
    }
    out += specs.empty() ? "]" : "\n  ]";
  }
  out += first_problem ? "}\n" : "\n}\n";
  return out;
}

Status WriteConstraintsFile(const std::string& path, const ConstraintsByProblem& constraints) {
  for (const auto& [id, specs] : constraints)
    for (size_t i = 0; i < specs.size(); ++i) {
      Status st = ValidateConstraintSpec(specs[i]);
      if (!st.ok())
        return InvalidArgument(
            fmt::format("{}: problem {}, entry {}: {}", path, id, i, st.message()));
    }
  return WriteFileAtomic(path, FormatConstraints(constraints));
}

}  // namespace egca::gates
