#include "egca/tracer/trace_dump.h"

#include <fmt/format.h>

namespace egca::tracer {
namespace {

const char* KindName(proto::EventKind kind) {
  switch (kind) {
    case proto::LINE: return "LINE";
    case proto::CALL: return "CALL";
    case proto::RETURN: return "RETURN";
    case proto::EXCEPTION: return "EXCEPTION";
    default: return "?";
  }
}

const char* TruncationName(proto::Truncation t) {
  switch (t) {
    case proto::MAX_EVENTS: return "max_events";
    case proto::MAX_BYTES: return "max_bytes";
    default: return "no";
  }
}

// Output bytes as a double-quoted, escaped one-line string.
void AppendOutput(const std::string& text, std::string* out) {
  out->append(" out=\"");
  for (char c : text) {
    if (c == '\n') {
      out->append("\\n");
    } else if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out->append(fmt::format("\\x{:02x}", static_cast<unsigned char>(c)));
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

void AppendValue(const proto::Value& v, std::string* out) {
  out->append(v.text());
  if (v.partial()) out->append("~partial");
}

}  // namespace

std::string DumpTrace(const proto::Trace& trace) {
  std::string out = fmt::format(
      "trace source={} events={} code_objects={} truncated={}{}{}\n",
      trace.source_sha256().substr(0, 12), trace.events_size(), trace.code_size(),
      TruncationName(trace.truncation()), trace.tracer_displaced() ? " DISPLACED" : "",
      trace.output_truncated() ? " OUTPUT_TRUNCATED" : "");
  for (int i = 0; i < trace.events_size(); ++i) {
    const proto::Event& e = trace.events(i);
    std::string kind = KindName(e.kind());
    if (e.is_resume()) kind += "+resume";
    if (e.is_yield()) kind += "+yield";
    if (e.unwinding()) kind += "+unwind";
    const std::string& func =
        e.code() < static_cast<uint32_t>(trace.code_size()) ? trace.code(e.code()).qualname()
                                                            : std::string("?");
    out += fmt::format("{:4} {:<16} d{} f{} {}:{}", i, kind, e.depth(), e.frame(), func, e.line());
    if (e.has_span()) {
      const proto::Span& s = e.span();
      out += fmt::format(" [{}:{}-{}:{}]", s.start_line(), s.start_col(), s.end_line(),
                         s.end_col());
    }
    for (const proto::Variable& var : e.changed()) {
      out += ' ';
      out += var.name();
      out += '=';
      AppendValue(var.value(), &out);
    }
    for (const std::string& name : e.deleted()) out += fmt::format(" del:{}", name);
    if (e.kind() == proto::RETURN && e.has_return_value()) {
      out += " -> ";
      AppendValue(e.return_value(), &out);
    }
    if (!e.output().empty()) AppendOutput(e.output(), &out);
    if (e.has_exception()) {
      out += fmt::format(" ! {}", e.exception().type());
      if (!e.exception().message().empty()) out += ": " + e.exception().message();
    }
    out += '\n';
  }
  return out;
}

}  // namespace egca::tracer
