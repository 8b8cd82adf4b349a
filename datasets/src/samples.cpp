#include "egca/datasets/samples.h"

#include <fmt/format.h>

#include "datasets_text.h"
#include "egca/core/files.h"

namespace egca::datasets {
using internal::json;

StatusOr<std::vector<Sample>> LoadSamples(const std::string& path, LoadReport* report) {
  EGCA_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzipFile(path));
  std::vector<Sample> samples;
  internal::ForEachJsonlLine(text, [&](int64_t line, std::string_view rec) {
    ++report->records;
    std::string error;
    std::optional<json> r = internal::ParseObject(rec, &error);
    Sample s;
    bool ok = r.has_value() &&
              internal::GetString(*r, "problem_id", &s.problem_id, &error) &&
              internal::GetString(*r, "completion", &s.completion, &error) &&
              internal::GetString(*r, "model", &s.model, &error, /*optional=*/true) &&
              internal::GetString(*r, "sample_id", &s.sample_id, &error, /*optional=*/true);
    if (ok && s.problem_id.empty()) {
      error = "field \"problem_id\" is empty";
      ok = false;
    }
    if (ok) {
      auto body = r->find("completion_is_body");
      if (body != r->end() && !body->is_null()) {
        if (body->is_boolean()) {
          s.completion_is_body = body->get<bool>();
        } else {
          error = fmt::format("field \"completion_is_body\" must be a boolean, not {}",
                              body->type_name());
          ok = false;
        }
      }
      auto solved = r->find("reported_solved");
      if (ok && solved != r->end() && !solved->is_null()) {
        if (solved->is_boolean()) {
          s.reported_solved = solved->get<bool>() ? 1 : 0;
        } else {
          error = fmt::format("field \"reported_solved\" must be a boolean, not {}",
                              solved->type_name());
          ok = false;
        }
      }
    }
    if (!ok) {
      report->Bad(path, line, error + ", skipped");
      return;
    }
    s.origin = fmt::format("{}:{}", path, line);
    ++report->loaded;
    samples.push_back(std::move(s));
  });
  return samples;
}

std::string SamplesToJsonl(const std::vector<Sample>& samples) {
  std::string out;
  for (const Sample& s : samples) {
    json r = json::object();
    r["problem_id"] = s.problem_id;
    r["completion"] = s.completion;
    if (!s.model.empty()) r["model"] = s.model;
    if (!s.sample_id.empty()) r["sample_id"] = s.sample_id;
    if (s.completion_is_body) r["completion_is_body"] = true;
    if (s.reported_solved >= 0) r["reported_solved"] = s.reported_solved == 1;
    out += internal::Dump(r);
    out += '\n';
  }
  return out;
}

Status WriteSamplesJsonl(const std::string& path, const std::vector<Sample>& samples) {
  return WriteFileAtomic(path, SamplesToJsonl(samples));
}

int64_t SampleProgram::ToCompletionByte(int64_t code_byte) const {
  if (from_body) {
    int64_t b = code_byte + offset;
    return b < 0 ? -1 : b;
  }
  return extraction.ToCompletionByte(static_cast<uint32_t>(code_byte));
}

const char* SampleProgram::KindName() const {
  return from_body ? "body" : cfg::ExtractionKindName(extraction.kind);
}

SampleProgram ProgramOf(const Sample& sample, const ProblemRecord& problem) {
  SampleProgram p;
  if (sample.completion_is_body) {
    p.from_body = true;
    p.code = problem.prompt + sample.completion;
    p.offset = -static_cast<int64_t>(problem.prompt.size());
    return p;
  }
  p.extraction = cfg::ExtractProgram(sample.completion,
                                     cfg::ExtractOptions().set_entry_point(problem.entry_point));
  p.code = p.extraction.code;
  p.offset = p.extraction.offset;
  return p;
}

}  // namespace egca::datasets
