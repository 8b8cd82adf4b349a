#include "egca/batch/result.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "egca/core/json_depth.h"

namespace egca::batch {

using json = nlohmann::ordered_json;

uint64_t Fnv1a64(std::string_view data, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string HexKey(uint64_t key) { return fmt::format("{:016x}", key); }

bool IsSampleKeyText(std::string_view text) {
  if (text.size() != 64 && text.size() != 16) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool ParseHexKey(std::string_view text, uint64_t* key) {
  if (text.size() != 16) return false;
  uint64_t v = 0;
  for (char c : text) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return false;
    }
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  *key = v;
  return true;
}

const char* ReferenceKindName(ReferenceKind kind) {
  switch (kind) {
    case ReferenceKind::kGiven:
      return "given";
    case ReferenceKind::kStandIn:
      return "stand_in";
    case ReferenceKind::kNone:
      return "none";
  }
  return "?";
}

std::optional<ReferenceKind> ParseReferenceKind(std::string_view name) {
  for (ReferenceKind k : {ReferenceKind::kGiven, ReferenceKind::kStandIn, ReferenceKind::kNone}) {
    if (name == ReferenceKindName(k)) return k;
  }
  return std::nullopt;
}

namespace {

json SpanJson(const SourceSpan& s) {
  return json::array(
      {s.begin_byte, s.end_byte, s.begin.line, s.begin.column, s.end.line, s.end.column});
}

json OptSpanJson(const std::optional<SourceSpan>& s) { return s ? SpanJson(*s) : json(nullptr); }

json LocatedJson(const std::optional<LocatedSpan>& s) {
  if (!s) return nullptr;
  return {{"program", SpanJson(s->program)},
          {"completion", s->in_completion ? SpanJson(s->completion) : json(nullptr)}};
}

template <typename T>
json Opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

// Reading: typed accessors that name the field in their error.
class Reader {
 public:
  explicit Reader(const json& j) : j_(j) {}
  const Status& status() const { return status_; }

  const json* Field(const char* name) {
    auto it = j_.find(name);
    if (it == j_.end()) {
      Fail(fmt::format("missing field \"{}\"", name));
      return nullptr;
    }
    return &*it;
  }
  std::string String(const char* name) {
    const json* f = Field(name);
    if (f == nullptr) return "";
    if (!f->is_string()) return Fail(fmt::format("field \"{}\" is not a string", name)), "";
    return f->get<std::string>();
  }
  int64_t Int(const char* name) {
    const json* f = Field(name);
    if (f == nullptr) return 0;
    if (!f->is_number_integer())
      return Fail(fmt::format("field \"{}\" is not an integer", name)), 0;
    return f->get<int64_t>();
  }
  double Number(const char* name) {
    const json* f = Field(name);
    if (f == nullptr) return 0;
    if (!f->is_number()) return Fail(fmt::format("field \"{}\" is not a number", name)), 0;
    return f->get<double>();
  }
  bool Bool(const char* name) {
    const json* f = Field(name);
    if (f == nullptr) return false;
    if (!f->is_boolean()) return Fail(fmt::format("field \"{}\" is not a boolean", name)), false;
    return f->get<bool>();
  }
  std::string Key(const char* name) {
    std::string s = String(name);
    if (status_.ok() && !IsSampleKeyText(s))
      Fail(fmt::format("field \"{}\" is not a sample key (64 hex digits, or 16 in format 1)",
                       name));
    return s;
  }
  template <typename T>
  std::optional<T> Optional(const char* name) {
    const json* f = Field(name);
    if (f == nullptr || f->is_null()) return std::nullopt;
    try {
      return f->get<T>();
    } catch (const json::exception&) {
      Fail(fmt::format("field \"{}\" has the wrong type", name));
      return std::nullopt;
    }
  }
  std::optional<SourceSpan> Span(const json& v, const char* name) {
    if (v.is_null()) return std::nullopt;
    if (!v.is_array() || v.size() != 6) {
      Fail(fmt::format("field \"{}\" is not a span [b, e, line, col, line, col]", name));
      return std::nullopt;
    }
    for (const auto& x : v) {
      if (!x.is_number_integer()) {
        Fail(fmt::format("field \"{}\" is not a span of integers", name));
        return std::nullopt;
      }
    }
    SourceSpan s;
    s.begin_byte = v[0].get<uint32_t>();
    s.end_byte = v[1].get<uint32_t>();
    s.begin = {v[2].get<int32_t>(), v[3].get<int32_t>()};
    s.end = {v[4].get<int32_t>(), v[5].get<int32_t>()};
    return s;
  }
  std::optional<LocatedSpan> Located(const char* name) {
    const json* f = Field(name);
    if (f == nullptr || f->is_null()) return std::nullopt;
    if (!f->is_object() || !f->contains("program") || !f->contains("completion")) {
      Fail(fmt::format("field \"{}\" is not a located span", name));
      return std::nullopt;
    }
    LocatedSpan out;
    auto p = Span((*f)["program"], name);
    if (!p) {
      if (status_.ok()) Fail(fmt::format("field \"{}\" has no program span", name));
      return std::nullopt;
    }
    out.program = *p;
    if (auto c = Span((*f)["completion"], name)) {
      out.in_completion = true;
      out.completion = *c;
    }
    return out;
  }

 private:
  void Fail(std::string message) {
    if (status_.ok()) status_ = InvalidArgument(std::move(message));
  }
  const json& j_;
  Status status_;
};

StatusOr<json> ParseObject(std::string_view text) {
  EGCA_RETURN_IF_ERROR(CheckJsonDepth(text, "record"));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("not a JSON object");
  return j;
}

}  // namespace

std::string SampleRecordJson(const SampleRecord& r) {
  json violations = json::array();
  for (const auto& v : r.violations) {
    violations.push_back(
        {{"constraint", v.constraint}, {"message", v.message}, {"span", OptSpanJson(v.span)}});
  }
  json j = {{"type", "sample"},
            {"problem", r.problem},
            {"key", r.key},
            {"dup", r.dup},
            {"model", r.model},
            {"difficulty", r.difficulty},
            {"origin", r.origin},
            {"sample_id", r.sample_id},
            {"empty", r.empty},
            {"mode", credit::FailureModeName(r.mode)},
            {"reason", r.reason},
            {"verdict", r.verdict},
            {"passed", r.passed},
            {"tests", r.tests},
            {"r_hat", r.r_hat},
            {"i_c", r.i_c},
            {"violations", violations},
            {"i_cmp", Opt(r.i_cmp)},
            {"similarity", Opt(r.similarity)},
            {"k", Opt(r.k)},
            {"k_executed", Opt(r.k_executed)},
            {"k_star", Opt(r.k_star)},
            {"localized", r.localized},
            {"divergence_kind", r.divergence_kind},
            {"localization_confidence", Opt(r.localization_confidence)},
            {"localization_evidence", r.localization_evidence},
            {"earliest", LocatedJson(r.earliest)},
            {"last", LocatedJson(r.last)},
            {"random", LocatedJson(r.random)},
            {"localization_note", r.localization_note},
            {"relative_position", Opt(r.relative_position)},
            {"error", LocatedJson(r.error)},
            {"error_message", r.error_message},
            {"reference", ReferenceKindName(r.reference)},
            {"stand_in", r.stand_in},
            {"program_bytes", r.program_bytes},
            {"program_lines", r.program_lines},
            {"grade_seconds", r.grade_seconds},
            {"localize_seconds", r.localize_seconds},
            {"shared_result", r.shared_result},
            {"program", r.program}};
  // Issue 37's fields only when set, so records without them keep their bytes.
  if (!r.error_type.empty()) j["error_type"] = r.error_type;
  if (!r.error_name.empty()) j["error_name"] = r.error_name;
  if (r.cause) j["cause"] = LocatedJson(r.cause);
  // Invalid UTF-8 in a message (a candidate's exception text) must not make the store
  // unwritable: replace it.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string ProblemResolutionJson(const ProblemResolution& p) {
  json j = {{"type", "problem"},
            {"problem", p.problem},
            {"dataset", p.dataset},
            {"difficulty", p.difficulty},
            {"kind", p.kind},
            {"tests", p.tests},
            {"references", p.references},
            {"reference", ReferenceKindName(p.reference)},
            {"reference_index", p.reference_index},
            {"stand_in_key", p.stand_in_key},
            {"reference_failed", p.reference_failed},
            {"reference_failure", p.reference_failure}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

StatusOr<SampleRecord> ParseSampleRecord(std::string_view text) {
  EGCA_ASSIGN_OR_RETURN(json j, ParseObject(text));
  Reader in(j);
  SampleRecord r;
  r.problem = in.String("problem");
  r.key = in.Key("key");
  r.dup = static_cast<int32_t>(in.Int("dup"));
  r.model = in.String("model");
  r.difficulty = in.String("difficulty");
  r.origin = in.String("origin");
  // Stores written before these fields existed lack them.
  if (j.contains("sample_id")) r.sample_id = in.String("sample_id");
  if (j.contains("empty")) r.empty = in.Bool("empty");
  if (j.contains("program")) r.program = in.String("program");
  std::string mode = in.String("mode");
  r.reason = in.String("reason");
  r.verdict = in.String("verdict");
  r.passed = static_cast<int32_t>(in.Int("passed"));
  r.tests = static_cast<int32_t>(in.Int("tests"));
  r.r_hat = in.Number("r_hat");
  r.i_c = in.Bool("i_c");
  if (const json* v = in.Field("violations")) {
    if (!v->is_array()) return InvalidArgument("field \"violations\" is not an array");
    for (const auto& e : *v) {
      if (!e.is_object()) return InvalidArgument("field \"violations\" holds a non-object");
      Reader ve(e);
      ViolationRecord vr;
      vr.constraint = ve.String("constraint");
      vr.message = ve.String("message");
      if (const json* s = ve.Field("span")) vr.span = ve.Span(*s, "span");
      EGCA_RETURN_IF_ERROR(ve.status());
      r.violations.push_back(std::move(vr));
    }
  }
  r.i_cmp = in.Optional<bool>("i_cmp");
  r.similarity = in.Optional<double>("similarity");
  r.k = in.Optional<int32_t>("k");
  r.k_executed = in.Optional<int32_t>("k_executed");
  r.k_star = in.Optional<int32_t>("k_star");
  r.localized = in.Bool("localized");
  r.divergence_kind = in.String("divergence_kind");
  // Stores written before issue 36 lack these.
  if (j.contains("localization_confidence")) {
    r.localization_confidence = in.Optional<double>("localization_confidence");
  }
  if (j.contains("localization_evidence")) {
    r.localization_evidence = in.String("localization_evidence");
  }
  r.earliest = in.Located("earliest");
  r.last = in.Located("last");
  r.random = in.Located("random");
  r.localization_note = in.String("localization_note");
  r.relative_position = in.Optional<double>("relative_position");
  r.error = in.Located("error");
  r.error_message = in.String("error_message");
  if (j.contains("error_type")) r.error_type = in.String("error_type");
  if (j.contains("error_name")) r.error_name = in.String("error_name");
  if (j.contains("cause")) r.cause = in.Located("cause");
  std::string reference = in.String("reference");
  r.stand_in = in.Bool("stand_in");
  r.program_bytes = static_cast<uint32_t>(in.Int("program_bytes"));
  r.program_lines = static_cast<int32_t>(in.Int("program_lines"));
  r.grade_seconds = in.Number("grade_seconds");
  r.localize_seconds = in.Number("localize_seconds");
  r.shared_result = in.Bool("shared_result");
  EGCA_RETURN_IF_ERROR(in.status());
  auto m = credit::ParseFailureMode(mode);
  if (!m) return InvalidArgument(fmt::format("field \"mode\": unknown mode \"{}\"", mode));
  r.mode = *m;
  auto ref = ParseReferenceKind(reference);
  if (!ref) return InvalidArgument(fmt::format("field \"reference\": unknown \"{}\"", reference));
  r.reference = *ref;
  return r;
}

StatusOr<ProblemResolution> ParseProblemResolution(std::string_view text) {
  EGCA_ASSIGN_OR_RETURN(json j, ParseObject(text));
  Reader in(j);
  ProblemResolution p;
  p.problem = in.String("problem");
  p.dataset = in.String("dataset");
  p.difficulty = in.String("difficulty");
  if (j.contains("kind")) p.kind = in.String("kind");
  p.tests = static_cast<int32_t>(in.Int("tests"));
  p.references = static_cast<int32_t>(in.Int("references"));
  std::string reference = in.String("reference");
  p.reference_index = static_cast<int32_t>(in.Int("reference_index"));
  p.stand_in_key = in.String("stand_in_key");  // "" when there is no stand-in
  if (!p.stand_in_key.empty()) p.stand_in_key = in.Key("stand_in_key");
  p.reference_failed = in.Bool("reference_failed");
  p.reference_failure = in.String("reference_failure");
  EGCA_RETURN_IF_ERROR(in.status());
  auto ref = ParseReferenceKind(reference);
  if (!ref) return InvalidArgument(fmt::format("field \"reference\": unknown \"{}\"", reference));
  p.reference = *ref;
  return p;
}

bool SameResult(const SampleRecord& a, const SampleRecord& b) {
  SampleRecord x = a, y = b;
  x.grade_seconds = y.grade_seconds = 0;
  x.localize_seconds = y.localize_seconds = 0;
  x.shared_result = y.shared_result = false;
  return SampleRecordJson(x) == SampleRecordJson(y);
}

}  // namespace egca::batch
