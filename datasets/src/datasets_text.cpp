#include "datasets_text.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstring>

#include "egca/core/files.h"
#include "egca/core/json_depth.h"

namespace egca::datasets::internal {
namespace {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// nlohmann's messages start with "[json.exception.parse_error.101] "; keep what follows.
std::string ParserMessage(const std::exception& e) {
  std::string m = e.what();
  size_t close = m.find("] ");
  if (m.rfind("[json.exception.", 0) == 0 && close != std::string::npos) m = m.substr(close + 2);
  return m;
}

// Integers beyond 64 bits (APPS has some) would become doubles and lose digits; they are
// kept as their decimal text behind this marker in a string, and written back as numbers by
// Dump() and PythonStr().
constexpr std::string_view kBigInt("\0bigint:", 8);

bool IsBigInt(const std::string& s) { return s.compare(0, kBigInt.size(), kBigInt) == 0; }

// A DOM builder for json::sax_parse that keeps overflowing integer literals exact.
class ExactDomBuilder {
 public:
  explicit ExactDomBuilder(json* root) : root_(root) {}

  bool null() { return Put(json(nullptr)); }
  bool boolean(bool v) { return Put(json(v)); }
  bool number_integer(json::number_integer_t v) { return Put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return Put(json(v)); }
  bool number_float(json::number_float_t v, const std::string& text) {
    if (text.find_first_of(".eE") == std::string::npos) {
      return Put(json(std::string(kBigInt) + text));
    }
    return Put(json(v));
  }
  bool string(std::string& v) { return Put(json(std::move(v))); }
  bool binary(json::binary_t& v) { return Put(json::binary(std::move(v))); }
  bool start_object(std::size_t) {
    json* j = Put(json::object());
    stack_.push_back(j);
    return true;
  }
  bool key(std::string& k) {
    key_ = std::move(k);
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    json* j = Put(json::array());
    stack_.push_back(j);
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const json::exception& e) {
    error_ = ParserMessage(e);
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  json* Put(json value) {
    if (stack_.empty()) {
      *root_ = std::move(value);
      return root_;
    }
    json* parent = stack_.back();
    if (parent->is_array()) {
      parent->push_back(std::move(value));
      return &parent->back();
    }
    json& slot = (*parent)[key_];
    slot = std::move(value);
    return &slot;
  }

  json* root_;
  std::vector<json*> stack_;
  std::string key_;
  std::string error_;
};

std::string PythonRepr(const json& value);

std::string PythonStringRepr(const std::string& s) {
  // Python picks single quotes unless the text has a ' and no ".
  char quote = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"'
                                                                                         : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == static_cast<unsigned char>(quote)) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

std::string PythonFloat(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // nlohmann prints the shortest round-trip digits with Python's switch to exponent form
  // ("1e-05", "1e+16", "100.0").
  return json(d).dump();
}

std::string PythonRepr(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "None";
    case json::value_t::boolean:
      return value.get<bool>() ? "True" : "False";
    case json::value_t::number_float:
      return PythonFloat(value.get<double>());
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return value.dump();
    case json::value_t::string: {
      const std::string& text = value.get_ref<const std::string&>();
      if (IsBigInt(text)) return text.substr(kBigInt.size());
      return PythonStringRepr(text);
    }
    case json::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < value.size(); ++i) {
        if (i) out += ", ";
        out += PythonRepr(value[i]);
      }
      return out + "]";
    }
    case json::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (!first) out += ", ";
        first = false;
        out += PythonStringRepr(it.key()) + ": " + PythonRepr(it.value());
      }
      return out + "}";
    }
    default:
      return value.dump();
  }
}

// Recursive-descent reader of Python literals (the subset str() of JSON-like values gives).
class PyLiteralParser {
 public:
  explicit PyLiteralParser(std::string_view s) : s_(s) {}

  std::optional<json> ParseAll() {
    std::optional<json> v = Value(0);
    SkipSpace();
    if (!v || pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void SkipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  std::optional<json> Value(int depth) {
    if (depth > 200) return std::nullopt;
    SkipSpace();
    if (pos_ >= s_.size()) return std::nullopt;
    char c = s_[pos_];
    if (c == '[' || c == '(') return Sequence(c == '[' ? ']' : ')', depth);
    if (c == '{') return Dict(depth);
    if (c == '\'' || c == '"') return String();
    if (IsIdentStart(c)) {
      size_t b = pos_;
      while (pos_ < s_.size() && IsIdentChar(s_[pos_])) ++pos_;
      std::string_view word = s_.substr(b, pos_ - b);
      if (word == "True") return json(true);
      if (word == "False") return json(false);
      if (word == "None") return json(nullptr);
      if (word == "inf") return json(INFINITY);
      return std::nullopt;
    }
    return Number();
  }

  std::optional<json> Sequence(char close, int depth) {
    ++pos_;
    json arr = json::array();
    if (Eat(close)) return arr;
    while (true) {
      std::optional<json> v = Value(depth + 1);
      if (!v) return std::nullopt;
      arr.push_back(std::move(*v));
      if (Eat(close)) return arr;
      if (!Eat(',')) return std::nullopt;
      if (Eat(close)) return arr;  // trailing comma: (1,)
    }
  }

  std::optional<json> Dict(int depth) {
    ++pos_;
    json obj = json::object();
    if (Eat('}')) return obj;
    while (true) {
      std::optional<json> k = Value(depth + 1);
      // JSON keys are strings; Python int keys become their decimal text.
      if (!k || !(k->is_string() || k->is_number_integer())) return std::nullopt;
      std::string key = k->is_string() ? k->get<std::string>() : k->dump();
      if (!Eat(':')) return std::nullopt;
      std::optional<json> v = Value(depth + 1);
      if (!v) return std::nullopt;
      obj[key] = std::move(*v);
      if (Eat('}')) return obj;
      if (!Eat(',')) return std::nullopt;
      if (Eat('}')) return obj;
    }
  }

  std::optional<json> String() {
    char quote = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      char c = s_[pos_++];
      if (c == '\n') return std::nullopt;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) return std::nullopt;
      char e = s_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '0': out += '\0'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'x': {
          if (pos_ + 2 > s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[pos_])) ||
              !std::isxdigit(static_cast<unsigned char>(s_[pos_ + 1]))) {
            return std::nullopt;
          }
          int v = std::stoi(std::string(s_.substr(pos_, 2)), nullptr, 16);
          pos_ += 2;
          if (v < 0x80) {
            out += static_cast<char>(v);
          } else {  // \xNN in a str is a code point, not a byte: encode it as UTF-8.
            out += static_cast<char>(0xC0 | (v >> 6));
            out += static_cast<char>(0x80 | (v & 0x3F));
          }
          break;
        }
        default:
          out += '\\';
          out += e;
      }
    }
    if (pos_ >= s_.size()) return std::nullopt;
    ++pos_;
    return json(out);
  }

  std::optional<json> Number() {
    size_t b = pos_;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
    if (pos_ + 3 <= s_.size() && s_.substr(pos_, 3) == "inf") {
      pos_ += 3;
      return json(s_[b] == '-' ? -INFINITY : INFINITY);
    }
    bool digits = false, is_float = false;
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        digits = true;
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        if ((c == 'e' || c == 'E') && pos_ + 1 < s_.size() &&
            (s_[pos_ + 1] == '-' || s_[pos_ + 1] == '+')) {
          ++pos_;
        }
      } else if (c != '_') {
        break;
      }
      ++pos_;
    }
    if (!digits) return std::nullopt;
    std::string text;
    for (char c : s_.substr(b, pos_ - b)) {
      if (c != '_' && c != '+') text += c;
    }
    json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded()) {
      if (!is_float && parsed.is_number_float()) return json(std::string(kBigInt) + text);
      return parsed;
    }
    // "1." or ".5" are Python floats but not JSON numbers.
    char* end = nullptr;
    double d = std::strtod(text.c_str(), &end);
    if (is_float && end && *end == '\0') return json(d);
    return std::nullopt;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

uint64_t ParseOctal(std::string_view field) {
  // GNU base-256 for sizes >= 8 GiB.
  if (!field.empty() && (static_cast<unsigned char>(field[0]) & 0x80)) {
    uint64_t v = static_cast<unsigned char>(field[0]) & 0x7F;
    for (size_t i = 1; i < field.size(); ++i) v = (v << 8) | static_cast<unsigned char>(field[i]);
    return v;
  }
  uint64_t v = 0;
  for (char c : field) {
    if (c >= '0' && c <= '7') v = v * 8 + static_cast<uint64_t>(c - '0');
    else if (c != ' ' && c != '\0') break;
  }
  return v;
}

std::string CString(std::string_view field) {
  size_t n = field.find('\0');
  return std::string(field.substr(0, n == std::string_view::npos ? field.size() : n));
}

}  // namespace

void ForEachJsonlLine(std::string_view text,
                      const std::function<void(int64_t, std::string_view)>& visit) {
  size_t pos = 0;
  int64_t line = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view rec = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line;
    if (!rec.empty() && rec.back() == '\r') rec.remove_suffix(1);
    if (rec.find_first_not_of(" \t") == std::string_view::npos) continue;
    visit(line, rec);
  }
}

std::optional<json> ParseDocument(std::string_view text, std::string* error) {
  long bad = FindInvalidUtf8(text);
  if (bad >= 0) {
    *error = fmt::format("not valid UTF-8 (byte 0x{:02x} at offset {})",
                         static_cast<unsigned char>(text[static_cast<size_t>(bad)]), bad);
    return std::nullopt;
  }
  if (Status deep = CheckJsonDepth(text, "record"); !deep.ok()) {
    *error = fmt::format("JSON nested deeper than {} levels", kMaxJsonDepth);
    return std::nullopt;
  }
  json doc;
  ExactDomBuilder builder(&doc);
  if (!json::sax_parse(text, &builder)) {
    *error = "not valid JSON: " + builder.error();
    return std::nullopt;
  }
  return doc;
}

std::optional<json> ParseObject(std::string_view record, std::string* error) {
  std::optional<json> doc = ParseDocument(record, error);
  if (doc && !doc->is_object()) {
    *error = "not a JSON object";
    return std::nullopt;
  }
  return doc;
}

bool GetString(const json& record, const char* key, std::string* out, std::string* error,
               bool optional) {
  auto it = record.find(key);
  if (it == record.end() || (optional && it->is_null())) {
    out->clear();
    if (optional) return true;
    *error = fmt::format("missing field \"{}\"", key);
    return false;
  }
  if (!it->is_string()) {
    *error = fmt::format("field \"{}\" must be a string, not {}", key, it->type_name());
    return false;
  }
  *out = it->get<std::string>();
  return true;
}

bool GetStringList(const json& record, const char* key, std::vector<std::string>* out,
                   std::string* error, bool optional) {
  out->clear();
  auto it = record.find(key);
  if (it == record.end() || (optional && it->is_null())) {
    if (optional) return true;
    *error = fmt::format("missing field \"{}\"", key);
    return false;
  }
  if (!it->is_array()) {
    *error = fmt::format("field \"{}\" must be an array of strings, not {}", key, it->type_name());
    return false;
  }
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string()) {
      *error = fmt::format("field \"{}\"[{}] must be a string, not {}", key, i,
                           (*it)[i].type_name());
      return false;
    }
    out->push_back((*it)[i].get<std::string>());
  }
  return true;
}

bool GetId(const json& record, const char* key, std::string* out, std::string* error) {
  auto it = record.find(key);
  if (it == record.end()) {
    *error = fmt::format("missing field \"{}\"", key);
    return false;
  }
  if (it->is_string()) {
    *out = it->get<std::string>();
  } else if (it->is_number_integer()) {
    *out = it->dump();
  } else {
    *error = fmt::format("field \"{}\" must be a string or an integer, not {}", key,
                         it->type_name());
    return false;
  }
  if (out->empty()) {
    *error = fmt::format("field \"{}\" is empty", key);
    return false;
  }
  return true;
}

std::string Dump(const json& value) {
  std::string out = value.dump(-1, ' ', false, json::error_handler_t::replace);
  // Big integers go back to bare digits: "\u0000bigint:123" -> 123.
  static const std::string kMarker = "\"\\u0000bigint:";
  size_t pos = 0;
  while ((pos = out.find(kMarker, pos)) != std::string::npos) {
    size_t end = out.find('"', pos + kMarker.size());
    if (end == std::string::npos) break;
    out = out.substr(0, pos) + out.substr(pos + kMarker.size(), end - pos - kMarker.size()) +
          out.substr(end + 1);
  }
  return out;
}

std::string PythonStr(const json& value) {
  if (value.is_string() && !IsBigInt(value.get_ref<const std::string&>())) {
    return value.get<std::string>();
  }
  return PythonRepr(value);
}

std::optional<json> ParsePythonLiteral(std::string_view text) {
  return PyLiteralParser(text).ParseAll();
}

std::vector<std::string> TopLevelDefs(std::string_view source) {
  std::vector<std::string> names;
  size_t pos = 0;
  while (pos < source.size()) {
    size_t nl = source.find('\n', pos);
    if (nl == std::string_view::npos) nl = source.size();
    std::string_view line = source.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.rfind("async ", 0) == 0) line.remove_prefix(6);
    if (line.rfind("def", 0) != 0 || line.size() < 4 || !std::isspace(static_cast<unsigned char>(line[3]))) {
      continue;
    }
    size_t b = 3;
    while (b < line.size() && std::isspace(static_cast<unsigned char>(line[b]))) ++b;
    size_t e = b;
    while (e < line.size() && IsIdentChar(line[e])) ++e;
    if (e > b && IsIdentStart(line[b])) names.emplace_back(line.substr(b, e - b));
  }
  return names;
}

std::optional<std::vector<std::string>> FirstDefParams(std::string_view source,
                                                        std::string* function, size_t* required) {
  size_t pos = 0;
  while ((pos = source.find("def", pos)) != std::string_view::npos) {
    bool word_start = pos == 0 || !IsIdentChar(source[pos - 1]);
    size_t b = pos + 3;
    pos = b;
    if (!word_start || b >= source.size() || !std::isspace(static_cast<unsigned char>(source[b]))) {
      continue;
    }
    while (b < source.size() && std::isspace(static_cast<unsigned char>(source[b]))) ++b;
    size_t e = b;
    while (e < source.size() && IsIdentChar(source[e])) ++e;
    if (e == b || e >= source.size() || source[e] != '(') continue;
    *function = std::string(source.substr(b, e - b));
    // Split the parameter list on top-level commas.
    std::vector<std::string> params;
    *required = 0;
    std::string current;
    int depth = 0;
    size_t i = e + 1;
    auto flush = [&] {
      std::string p = current;
      current.clear();
      const bool has_default = p.find('=') != std::string::npos;
      size_t cut = p.find_first_of(":=");
      if (cut != std::string::npos) p = p.substr(0, cut);
      size_t f = p.find_first_not_of(" \t\r\n*");
      size_t l = p.find_last_not_of(" \t\r\n");
      p = f == std::string::npos ? "" : p.substr(f, l - f + 1);
      if (p.empty() || p == "/" || p == "self" || p == "cls") return;
      params.push_back(p);
      if (!has_default) ++*required;
    };
    for (; i < source.size(); ++i) {
      char c = source[i];
      if (depth == 0 && c == ')') break;
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') --depth;
      if (depth == 0 && c == ',') {
        flush();
        continue;
      }
      current += c;
    }
    if (i >= source.size()) return std::nullopt;
    flush();
    return params;
  }
  return std::nullopt;
}

StatusOr<std::vector<TarEntry>> ReadTar(std::string_view data, const std::string& origin) {
  std::vector<TarEntry> entries;
  size_t offset = 0;
  std::string long_name;
  while (offset + 512 <= data.size()) {
    std::string_view header = data.substr(offset, 512);
    if (header.find_first_not_of('\0') == std::string_view::npos) break;  // end blocks
    uint64_t size = ParseOctal(header.substr(124, 12));
    char type = header[156];
    size_t body = offset + 512;
    if (size > data.size() - body) {
      return DataLoss(fmt::format("{}: truncated tar archive (entry at byte {})", origin, offset));
    }
    std::string_view contents = data.substr(body, size);
    offset = body + ((size + 511) / 512) * 512;
    if (type == 'L') {  // GNU: the next entry's name
      long_name = CString(contents);
      continue;
    }
    if (type == 'x') {  // pax: "<len> key=value\n" records; only path matters here
      size_t p = 0;
      while (p < contents.size()) {
        size_t sp = contents.find(' ', p);
        if (sp == std::string_view::npos) break;
        size_t len = std::strtoul(std::string(contents.substr(p, sp - p)).c_str(), nullptr, 10);
        if (len == 0 || p + len > contents.size()) break;
        std::string_view rec = contents.substr(sp + 1, p + len - sp - 2);
        if (rec.rfind("path=", 0) == 0) long_name = std::string(rec.substr(5));
        p += len;
      }
      continue;
    }
    std::string path;
    if (!long_name.empty()) {
      path = long_name;
      long_name.clear();
    } else {
      path = CString(header.substr(0, 100));
      if (header.substr(257, 5) == "ustar") {
        std::string prefix = CString(header.substr(345, 155));
        if (!prefix.empty()) path = prefix + "/" + path;
      }
    }
    if (type != '0' && type != '\0') continue;  // directories, links, ...
    while (path.rfind("./", 0) == 0) path = path.substr(2);
    entries.push_back({std::move(path), contents});
  }
  return entries;
}

bool IdSet::Seen(const std::string& id, const std::string& origin, const std::string& file,
                 int64_t line, LoadReport* report) {
  auto [it, inserted] = first_.emplace(id, origin);
  if (inserted) return false;
  report->Bad(file, line, fmt::format("duplicate id \"{}\" (first at {}), skipped", id, it->second));
  return true;
}

}  // namespace egca::datasets::internal
