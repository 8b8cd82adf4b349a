// egca-serve: egca as an HTTP reward service for RL trainers (OpenRLHF's --remote_rm_url,
// verl-style code-execution calls). HTTP/1.1 on Boost.Beast (http_server.h: bounded
// connections, bodies and read times); routing on a fixed pool of executors (service.h).
// Endpoints and formats: docs/serve.md.
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "egca/batch/result.h"
#include "egca/core/files.h"
#include "egca/core/json_depth.h"
#include "egca/credit/grpo.h"
#include "egca/credit/token_credit.h"
#include "egca/datasets/datasets.h"
#include "egca/tools/cli.h"
#include "egca/tools/trace_view.h"
#include "http_server.h"
#include "metrics.h"
#include "service.h"

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using namespace egca;

std::atomic<bool> g_signalled{false};
extern "C" void OnSignal(int) { g_signalled = true; }

// A request that cannot be served: HTTP status and a one-line reason.
struct HttpError {
  int status;
  std::string reason;
};
[[noreturn]] void Fail(int status, std::string reason) {
  throw HttpError{status, std::move(reason)};
}

std::string ErrorBody(const std::string& reason) {
  ojson j;
  j["error"] = reason;
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

const char* TypeName(const json& v) { return v.type_name(); }

const json& Field(const json& obj, const char* name, const std::string& where) {
  auto it = obj.find(name);
  if (it == obj.end()) Fail(400, fmt::format("{}: missing field \"{}\"", where, name));
  return *it;
}

std::string String(const json& v, const std::string& where) {
  if (!v.is_string()) Fail(400, fmt::format("{}: expected a string, got {}", where, TypeName(v)));
  return v.get<std::string>();
}

const json& Array(const json& v, const std::string& where) {
  if (!v.is_array()) Fail(400, fmt::format("{}: expected an array, got {}", where, TypeName(v)));
  return v;
}

double Number(const json& v, const std::string& where) {
  if (!v.is_number()) Fail(400, fmt::format("{}: expected a number, got {}", where, TypeName(v)));
  double d = v.get<double>();
  if (!std::isfinite(d)) Fail(400, fmt::format("{}: not finite", where));
  return d;
}

json ParseBody(const std::string& body) {
  if (long at = FindInvalidUtf8(body); at >= 0) {
    Fail(400, fmt::format("request body is not valid UTF-8 (byte {})", at));
  }
  if (Status deep = CheckJsonDepth(body, "request body"); !deep.ok()) Fail(400, deep.message());
  try {
    json j = json::parse(body);
    if (!j.is_object())
      Fail(400, fmt::format("request body: expected a JSON object, got {}", TypeName(j)));
    return j;
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    Fail(400, "request body is not valid JSON: " + what.substr(what.find(' ') + 1));
  }
}

struct Settings {
  serve::ServiceOptions service;
  double request_timeout = 600;
  size_t max_samples = 4096;  // samples per request
};

// The problem of one sample: a loaded one by id, or an inline {reference, tests} object.
std::shared_ptr<serve::ProblemEntry> ProblemOf(serve::Service& service, const json& spec,
                                               const std::string& where) {
  if (spec.is_string()) {
    std::string id = spec.get<std::string>();
    auto p = service.Find(id);
    if (!p) {
      std::string nearest = service.NearestId(id);
      Fail(404, fmt::format("{}: unknown problem \"{}\"{}", where, id,
                            nearest.empty() ? "" : fmt::format(" (did you mean {}?)", nearest)));
    }
    return p;
  }
  if (!spec.is_object()) {
    Fail(400, fmt::format("{}: expected a problem id or an object with \"reference\" and "
                          "\"tests\", got {}",
                          where, TypeName(spec)));
  }
  std::string reference = String(Field(spec, "reference", where), where + ".reference");
  const json& tests = Field(spec, "tests", where);
  std::string tests_json;
  if (tests.is_string()) {
    tests_json = tests.get<std::string>();
  } else {
    tests_json = Array(tests, where + ".tests").dump();
  }
  std::string prompt, entry_point;
  if (auto it = spec.find("prompt"); it != spec.end()) prompt = String(*it, where + ".prompt");
  if (auto it = spec.find("entry_point"); it != spec.end()) {
    entry_point = String(*it, where + ".entry_point");
  }
  auto made = service.Inline(reference, tests_json, prompt, entry_point);
  if (!made.ok()) Fail(400, fmt::format("{}: {}", where, made.status().message()));
  return made.value();
}

// A get_reward label: a problem id, or a JSON object (itself or as a string starting
// with '{') {"reference", "tests", "prompt"?, "entry_point"?, "completion_is_body"?}.
json LabelSpec(const json& label, const std::string& where) {
  if (label.is_object()) return label;
  std::string text = String(label, where);
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    if (Status deep = CheckJsonDepth(text, where); !deep.ok()) Fail(400, deep.message());
    try {
      return json::parse(text);
    } catch (const json::parse_error&) {
      Fail(400, fmt::format("{}: starts with '{{' but is not a JSON object", where));
    }
  }
  return text;
}

void SetBody(datasets::Sample& s, const json& value, const std::string& where) {
  if (value.is_null()) {
    s.detect_body = true;
  } else if (value.is_boolean()) {
    s.completion_is_body = value.get<bool>();
    s.detect_body = false;
  } else {
    Fail(400, fmt::format("{}: expected true, false or null, got {}", where, TypeName(value)));
  }
}

// Runs a batch on the pool within the request's time budget; fails with the HTTP status
// the situation calls for.
void RunBatch(serve::Service& service, const std::shared_ptr<serve::Batch>& batch,
              const Settings& settings, Clock::time_point start) {
  if (batch->samples.size() > settings.max_samples) {
    Fail(413, fmt::format("{} samples exceed --max-samples {}", batch->samples.size(),
                          settings.max_samples));
  }
  Status error;
  switch (service.Submit(batch, &error)) {
    case serve::Admission::kAccepted:
      break;
    case serve::Admission::kInvalid:
      Fail(400, error.message());
    case serve::Admission::kTooLarge:
      Fail(413, fmt::format("{} distinct programs exceed the queue (--queue {})",
                            batch->jobs.size(), service.Counters().queue_capacity));
    case serve::Admission::kQueueFull: {
      auto c = service.Counters();
      Fail(503, fmt::format("queue full: {} of {} jobs queued, this request needs {}; retry later",
                            c.queue_depth, c.queue_capacity, batch->jobs.size()));
    }
    case serve::Admission::kDraining:
      Fail(503, "shutting down: no new requests");
  }
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(settings.request_timeout));
  if (!service.Wait(*batch, deadline)) {
    Fail(503, fmt::format("request time budget of {} s exceeded (--request-timeout)",
                          settings.request_timeout));
  }
  for (size_t i = 0; i < batch->results.size(); ++i) {
    const Status& s = batch->results[i].status;
    if (!s.ok()) Fail(500, fmt::format("sample {}: egca failed to route it: {}", i, s.ToString()));
  }
}

ojson RecordJson(const batch::SampleRecord& r) { return ojson::parse(batch::SampleRecordJson(r)); }

ojson ViewJson(const serve::SampleResult& r) {
  tools::RouteViewInput view;
  view.route = r.route.get();
  view.tests = &r.problem->routing.tests;
  view.from_reference.assign(view.tests->size(), false);
  view.candidate_path = "candidate";
  view.candidate = r.record.program;
  view.reference_path = "reference";
  view.reference = r.problem->routing.reference;
  return tools::RouteJson(view);
}

// ---------------------------------------------------------------- /route

std::string HandleRoute(serve::Service& service, const Settings& settings, const json& body,
                        Clock::time_point start) {
  const json& samples = Array(Field(body, "samples", "request"), "samples");
  bool view = true;
  if (auto it = body.find("view"); it != body.end()) {
    if (!it->is_boolean())
      Fail(400, fmt::format("view: expected true or false, got {}", TypeName(*it)));
    view = it->get<bool>();
  }
  auto batch = std::make_shared<serve::Batch>();
  for (size_t i = 0; i < samples.size(); ++i) {
    std::string where = fmt::format("samples[{}]", i);
    const json& s = samples[i];
    if (!s.is_object())
      Fail(400, fmt::format("{}: expected an object, got {}", where, TypeName(s)));
    datasets::Sample sample;
    sample.completion = String(Field(s, "completion", where), where + ".completion");
    sample.detect_body = true;
    if (auto it = s.find("completion_is_body"); it != s.end()) {
      SetBody(sample, *it, where + ".completion_is_body");
    }
    if (auto it = s.find("model"); it != s.end()) sample.model = String(*it, where + ".model");
    std::shared_ptr<serve::ProblemEntry> problem;
    if (auto it = s.find("problem"); it != s.end()) {
      problem = ProblemOf(service, *it, where + ".problem");
    } else {
      problem = ProblemOf(service, s, where);  // inline reference + tests in the sample
    }
    sample.problem_id = problem->record.id;
    sample.origin = where;
    batch->problems.push_back(std::move(problem));
    batch->samples.push_back(std::move(sample));
  }
  RunBatch(service, batch, settings, start);
  ojson out;
  out["results"] = ojson::array();
  for (const auto& r : batch->results) {
    ojson item;
    item["record"] = RecordJson(r.record);
    item["reward"] = r.route->reward;
    if (view) item["route"] = ViewJson(r);
    out["results"].push_back(std::move(item));
  }
  return out.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

// ---------------------------------------------------------------- /get_reward

// OpenRLHF's remote reward model: {"query": [prompt + response], "prompts": [prompt],
// "labels": [label]} -> {"rewards": [R], "scores": [R], "extra_logs": {name: [value]}}.
std::string HandleGetReward(serve::Service& service, const Settings& settings, const json& body,
                            Clock::time_point start) {
  const json& query = Array(Field(body, "query", "request"), "query");
  const json* prompts = nullptr;
  if (auto it = body.find("prompts"); it != body.end() && !it->is_null()) {
    prompts = &Array(*it, "prompts");
    if (prompts->size() != query.size()) {
      Fail(400, fmt::format("prompts has {} entries, query {}", prompts->size(), query.size()));
    }
  }
  const json& labels = Array(Field(body, "labels", "request"), "labels");
  if (labels.size() != query.size()) {
    Fail(400, fmt::format("labels has {} entries, query {}", labels.size(), query.size()));
  }
  auto batch = std::make_shared<serve::Batch>();
  for (size_t i = 0; i < query.size(); ++i) {
    std::string q = String(query[i], fmt::format("query[{}]", i));
    datasets::Sample sample;
    if (prompts != nullptr) {
      std::string p = String((*prompts)[i], fmt::format("prompts[{}]", i));
      if (q.compare(0, p.size(), p) != 0) {
        Fail(400, fmt::format("query[{}] does not start with prompts[{}]", i, i));
      }
      sample.completion = q.substr(p.size());
    } else {
      sample.completion = std::move(q);
    }
    sample.detect_body = true;
    std::string where = fmt::format("labels[{}]", i);
    json spec = LabelSpec(labels[i], where);
    if (spec.is_object()) {
      if (auto it = spec.find("completion_is_body"); it != spec.end()) {
        SetBody(sample, *it, where + ".completion_is_body");
      }
      if (auto it = spec.find("problem"); it != spec.end()) {
        spec = *it;  // {"problem": id, "completion_is_body": ...}
      }
    }
    auto problem = ProblemOf(service, spec, where);
    sample.problem_id = problem->record.id;
    sample.origin = fmt::format("query[{}]", i);
    batch->problems.push_back(std::move(problem));
    batch->samples.push_back(std::move(sample));
  }
  RunBatch(service, batch, settings, start);
  // extra_logs: numbers only (OpenRLHF turns every list into a tensor and logs its mean).
  ojson rewards = ojson::array(), r_hat = ojson::array(), i_c = ojson::array(),
        mode = ojson::array(), localized = ojson::array(), eb = ojson::array(), ee = ojson::array(),
        passed = ojson::array(), tests = ojson::array();
  std::array<ojson, 4> by_mode;
  for (auto& m : by_mode) m = ojson::array();
  for (const auto& r : batch->results) {
    const batch::SampleRecord& rec = r.record;
    rewards.push_back(r.route->reward);
    r_hat.push_back(rec.r_hat);
    i_c.push_back(rec.i_c ? 1 : 0);
    mode.push_back(static_cast<int>(rec.mode));
    for (int m = 0; m < 4; ++m) by_mode[m].push_back(static_cast<int>(rec.mode) == m ? 1 : 0);
    localized.push_back(rec.localized ? 1 : 0);
    const bool span = rec.earliest && rec.earliest->in_completion;
    eb.push_back(span ? static_cast<int64_t>(rec.earliest->completion.begin_byte) : -1);
    ee.push_back(span ? static_cast<int64_t>(rec.earliest->completion.end_byte) : -1);
    passed.push_back(rec.passed);
    tests.push_back(rec.tests);
  }
  ojson out;
  out["rewards"] = rewards;
  out["scores"] = rewards;
  ojson logs;
  logs["egca_r_hat"] = r_hat;
  logs["egca_i_c"] = i_c;
  logs["egca_mode"] = mode;  // 0 SYNTAX, 1 CONSTRAINT, 2 LOGIC, 3 CORRECT
  logs["egca_syntax"] = by_mode[0];
  logs["egca_constraint"] = by_mode[1];
  logs["egca_logic"] = by_mode[2];
  logs["egca_correct"] = by_mode[3];
  logs["egca_localized"] = localized;
  logs["egca_earliest_begin"] = eb;  // completion bytes; -1: none
  logs["egca_earliest_end"] = ee;
  logs["egca_passed"] = passed;
  logs["egca_tests"] = tests;
  out["extra_logs"] = logs;
  return out.dump();
}

// ---------------------------------------------------------------- /token_advantages

// A span in completion bytes from a record field: null, [begin, end, ...] or a record's
// {"program": ..., "completion": [begin, end, ...] | null}.
std::optional<SourceSpan> CompletionSpan(const json& v, const std::string& where) {
  if (v.is_null()) return std::nullopt;
  const json* a = &v;
  if (v.is_object()) {
    a = &Field(v, "completion", where);
    if (a->is_null()) return std::nullopt;  // the span lies in the prompt
  }
  if (!a->is_array() || a->size() < 2 || !(*a)[0].is_number_unsigned() ||
      !(*a)[1].is_number_unsigned()) {
    Fail(400,
         fmt::format("{}: expected [begin, end, ...] byte offsets (or a record's span)", where));
  }
  SourceSpan s;
  s.begin_byte = (*a)[0].get<uint32_t>();
  s.end_byte = (*a)[1].get<uint32_t>();
  return s;
}

std::vector<credit::TokenByteRange> Tokens(const json& v, const std::string& where, bool chars,
                                           const std::string* completion) {
  Array(v, where);
  std::vector<uint32_t> map;  // character -> byte
  if (chars) {
    for (size_t i = 0; i < completion->size(); ++i) {
      if ((static_cast<unsigned char>((*completion)[i]) & 0xC0) != 0x80) {
        map.push_back(static_cast<uint32_t>(i));
      }
    }
    map.push_back(static_cast<uint32_t>(completion->size()));
  }
  std::vector<credit::TokenByteRange> out;
  out.reserve(v.size());
  for (size_t t = 0; t < v.size(); ++t) {
    const json& p = v[t];
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_unsigned() ||
        !p[1].is_number_unsigned()) {
      Fail(400, fmt::format("{}[{}]: expected [begin, end] non-negative integers", where, t));
    }
    uint64_t b = p[0].get<uint64_t>(), e = p[1].get<uint64_t>();
    uint64_t limit = chars ? map.size() - 1 : UINT32_MAX;
    if (b > limit || e > limit) {
      Fail(400, fmt::format("{}[{}] = [{}, {}] is outside the completion ({} {})", where, t, b, e,
                            limit, chars ? "characters" : "bytes"));
    }
    if (chars) {
      b = map[b];
      e = map[e];
    }
    out.push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e)});
  }
  return out;
}

std::string HandleTokenAdvantages(const json& body) {
  const json& records = Array(Field(body, "records", "request"), "records");
  const json& offsets = Array(Field(body, "token_offsets", "request"), "token_offsets");
  if (offsets.size() != records.size()) {
    Fail(400,
         fmt::format("token_offsets has {} entries, records {}", offsets.size(), records.size()));
  }
  const size_t n = records.size();
  // A_i: given, or GRPO group advantages of the rewards (credit::GroupAdvantages per group).
  std::vector<double> advantages(n, 0.0);
  if (auto it = body.find("advantages"); it != body.end()) {
    if (body.contains("rewards")) Fail(400, "give rewards or advantages, not both");
    Array(*it, "advantages");
    if (it->size() != n)
      Fail(400, fmt::format("advantages has {} entries, records {}", it->size(), n));
    for (size_t i = 0; i < n; ++i)
      advantages[i] = Number((*it)[i], fmt::format("advantages[{}]", i));
  } else {
    const json& rewards = Array(Field(body, "rewards", "request"), "rewards");
    if (rewards.size() != n)
      Fail(400, fmt::format("rewards has {} entries, records {}", rewards.size(), n));
    credit::GroupAdvantageOptions go;
    if (auto it = body.find("normalization"); it != body.end()) {
      std::string norm = String(*it, "normalization");
      if (norm == "mean_std") {
        go.normalization = credit::AdvantageNormalization::kMeanStd;
      } else if (norm == "mean_centered") {
        go.normalization = credit::AdvantageNormalization::kMeanCentered;
      } else {
        Fail(400,
             "normalization: expected \"mean_std\" or \"mean_centered\", got \"" + norm + "\"");
      }
    }
    if (auto it = body.find("eps"); it != body.end()) {
      go.eps = Number(*it, "eps");
      if (go.eps < 0) Fail(400, "eps must be >= 0");
    }
    std::vector<double> r(n);
    for (size_t i = 0; i < n; ++i) r[i] = Number(rewards[i], fmt::format("rewards[{}]", i));
    std::map<std::string, std::vector<size_t>> groups;  // group key -> members, in order
    const json* g = nullptr;
    if (auto it = body.find("groups"); it != body.end() && !it->is_null()) {
      g = &Array(*it, "groups");
      if (g->size() != n) Fail(400, fmt::format("groups has {} entries, records {}", g->size(), n));
    }
    for (size_t i = 0; i < n; ++i) groups[g ? (*g)[i].dump() : ""].push_back(i);
    for (const auto& [key, members] : groups) {
      std::vector<double> gr;
      for (size_t i : members) gr.push_back(r[i]);
      std::vector<double> a = credit::GroupAdvantages(gr, go);
      for (size_t k = 0; k < members.size(); ++k) advantages[members[k]] = a[k];
    }
  }
  credit::TokenCreditOptions options;
  if (auto it = body.find("target"); it != body.end()) {
    std::string t = String(*it, "target");
    auto parsed = credit::ParseLocalizationTarget(t);
    if (!parsed) {
      Fail(400,
           "target: expected \"earliest\", \"last\", \"random\" or \"uniform\", got \"" + t + "\"");
    }
    options.target = *parsed;
  }
  if (auto it = body.find("positive_logic"); it != body.end()) {
    std::string v = String(*it, "positive_logic");
    auto parsed = credit::ParsePositiveLogicCredit(v);
    if (!parsed) {
      Fail(400, "positive_logic: expected \"span\", \"uniform\", \"prefix\" or \"zero\", got \"" +
                    v + "\"");
    }
    options.positive_logic = *parsed;
  }
  if (auto it = body.find("syntax"); it != body.end()) {
    std::string v = String(*it, "syntax");
    auto parsed = credit::ParseSyntaxCredit(v);
    if (!parsed) {
      Fail(400, "syntax: expected \"span\", \"uniform\" or \"cause\", got \"" + v + "\"");
    }
    options.syntax = *parsed;
  }
  if (auto it = body.find("soft_weight"); it != body.end()) {
    options.soft_weight = Number(*it, "soft_weight");
    if (options.soft_weight < 0 || options.soft_weight > 1)
      Fail(400, "soft_weight must be in [0, 1]");
  }
  if (auto it = body.find("min_confidence"); it != body.end()) {
    options.min_confidence = Number(*it, "min_confidence");
    if (!(options.min_confidence >= 0 && options.min_confidence <= 1))
      Fail(400, "min_confidence must be in [0, 1]");
  }
  if (auto it = body.find("seed"); it != body.end()) {
    if (!it->is_number_unsigned()) Fail(400, "seed: expected a non-negative integer");
    options.seed = it->get<uint64_t>();
  }
  bool chars = false;
  if (auto it = body.find("char_offsets"); it != body.end()) {
    if (!it->is_boolean()) Fail(400, "char_offsets: expected true or false");
    chars = it->get<bool>();
  }
  const json* completions = nullptr;
  if (chars) {
    completions = &Array(Field(body, "completions", "request (char_offsets)"), "completions");
    if (completions->size() != n) {
      Fail(400, fmt::format("completions has {} entries, records {}", completions->size(), n));
    }
  }
  std::vector<credit::CreditSample> samples(n);
  for (size_t i = 0; i < n; ++i) {
    std::string where = fmt::format("records[{}]", i);
    const json& rec = records[i];
    if (!rec.is_object())
      Fail(400, fmt::format("{}: expected an object, got {}", where, TypeName(rec)));
    std::string mode = String(Field(rec, "mode", where), where + ".mode");
    auto m = credit::ParseFailureMode(mode);
    if (!m)
      Fail(400, fmt::format("{}.mode: expected SYNTAX, CONSTRAINT, LOGIC or CORRECT, got \"{}\"",
                            where, mode));
    credit::CreditSample& s = samples[i];
    s.mode = *m;
    s.advantage = advantages[i];
    s.code_offset = 0;  // spans and tokens both index the completion
    auto span = [&](const char* name) -> std::optional<SourceSpan> {
      auto it = rec.find(name);
      if (it == rec.end()) return std::nullopt;
      return CompletionSpan(*it, where + "." + name);
    };
    s.error_span = span("error");
    s.cause_span = span("cause");
    s.earliest_divergence = span("earliest");
    s.last_divergence = span("last");
    s.random_boundary = span("random");
    // The route's confidence in its earliest span (egca-batch / /route records carry it).
    if (auto it = rec.find("localization_confidence"); it != rec.end() && !it->is_null()) {
      s.localization_confidence = Number(*it, where + ".localization_confidence");
      if (!(*s.localization_confidence >= 0 && *s.localization_confidence <= 1))
        Fail(400, where + ".localization_confidence must be in [0, 1]");
    }
    s.sample_index = i;
    std::string completion;
    if (chars) completion = String((*completions)[i], fmt::format("completions[{}]", i));
    s.token_bytes = Tokens(offsets[i], fmt::format("token_offsets[{}]", i), chars, &completion);
  }
  std::vector<credit::TokenCredit> credits, weights;
  credit::TokenCreditStats stats;
  Status st = credit::AssignGroupTokenCreditInto(samples, options, &credits, &stats);
  if (st.ok()) {
    // The soft mask a_{i,t} / A_i: the operator with A_i = +-1 (A_i's sign, since the
    // sign-aware options place the two signs differently), divided by it.
    for (auto& s : samples) s.advantage = s.advantage < 0 ? -1.0 : 1.0;
    st = credit::AssignGroupTokenCreditInto(samples, options, &weights);
    for (size_t i = 0; i < weights.size() && st.ok(); ++i) {
      if (samples[i].advantage < 0) {
        for (double& w : weights[i].advantages) w = -w;
      }
    }
  }
  if (!st.ok()) Fail(400, st.message());
  ojson out;
  out["advantages"] = advantages;
  ojson tokens = ojson::array(), mask = ojson::array(), placement = ojson::array(),
        fallback = ojson::array(), sb = ojson::array(), sc = ojson::array();
  for (size_t i = 0; i < n; ++i) {
    tokens.push_back(credits[i].advantages);
    mask.push_back(weights[i].advantages);
    placement.push_back(credit::CreditPlacementName(credits[i].placement));
    fallback.push_back(credit::FallbackReasonName(credits[i].fallback));
    sb.push_back(credits[i].span_token_begin);
    sc.push_back(credits[i].span_token_count);
  }
  out["token_advantages"] = tokens;
  out["mask"] = mask;
  out["placement"] = placement;
  out["fallback"] = fallback;
  out["span_token_begin"] = sb;
  out["span_token_count"] = sc;
  out["stats"] = stats.ToString();
  return out.dump();
}

// ---------------------------------------------------------------- the server

std::string EndpointLabel(const std::string& path) {
  for (const char* known : {"/get_reward", "/route", "/token_advantages", "/healthz", "/metrics"}) {
    if (path == known) return path;
  }
  return "other";
}

struct Args {
  std::vector<std::string> problems;
  std::string format = "auto", host = "127.0.0.1", port_file, grading_trace = "auto";
  int port = 8000, workers = 0, http_threads = 0;
  size_t queue = 4096, max_body = 64 << 20, max_samples = 4096;
  size_t max_connections = 1024, body_budget = 0;
  double timeout = 5, request_timeout = 600;
  double header_timeout = 10, body_timeout = 60, write_timeout = 30;
  uint64_t seed = 0, max_program_bytes = 1 << 20;
  bool runtime_error_is_logic = false, no_comparability = false, passing_bypasses_gates = false;
  bool extract_constraints = false;
};

int Serve(const Args& a) {
  gates::GradingTrace grading_trace;
  if (!gates::ParseGradingTrace(a.grading_trace, &grading_trace)) {
    fmt::print(stderr, "egca-serve: --grading-trace: expected auto, always or never, got \"{}\"\n",
               a.grading_trace);
    return tools::kExitUsage;
  }
  std::vector<datasets::ProblemRecord> problems;
  for (const std::string& path : a.problems) {
    datasets::DatasetOptions o;
    auto format = datasets::ParseDatasetFormat(a.format);
    if (!format.ok()) {
      fmt::print(stderr, "egca-serve: --format: {}\n", format.status().message());
      return tools::kExitUsage;
    }
    o.format = format.value();
    datasets::LoadReport report;
    auto loaded = datasets::LoadProblems(path, o, &report);
    if (!loaded.ok()) {
      fmt::print(stderr, "egca-serve: --problems {}: {}\n", path, loaded.status().message());
      return tools::kExitUsage;
    }
    for (const auto& b : report.bad)
      fmt::print(stderr, "egca-serve: bad record: {}\n", b.ToString());
    for (auto& p : loaded.value()) {
      if (p.language != "python") continue;  // C++ problems: egca-batch cpp (not served)
      problems.push_back(std::move(p));
    }
  }
  Settings settings;
  settings.request_timeout = a.request_timeout;
  settings.max_samples = a.max_samples;
  serve::ServiceOptions& so = settings.service;
  so.workers = a.workers > 0 ? a.workers
                             : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  so.queue_capacity = a.queue;
  so.router.run.limits.wall_seconds = a.timeout;
  so.router.run.limits.cpu_seconds = a.timeout;
  so.router.runtime_error_is_logic = a.runtime_error_is_logic;
  so.router.grading_trace = grading_trace;
  so.router.check_comparability = !a.no_comparability;
  so.router.passing_bypasses_gates = a.passing_bypasses_gates;
  so.router.divergence.random_seed = a.seed;
  so.extract_constraints = a.extract_constraints;
  so.max_program_bytes = a.max_program_bytes;

  // Signals before any thread: every thread inherits the handlers.
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client that hangs up is a failed write, not a dead server

  auto created = serve::Service::Create(std::move(problems), so);
  if (!created.ok()) {
    fmt::print(stderr, "egca-serve: cannot start the executors: {}\n", created.status().ToString());
    return 1;
  }
  std::unique_ptr<serve::Service> service = std::move(created).value();
  serve::HttpMetrics metrics;
  std::atomic<int> in_flight{0};

  serve::HttpServerOptions ho;
  ho.host = a.host;
  ho.port = a.port;
  ho.max_body = a.max_body;
  ho.body_budget = std::max(a.max_body, a.body_budget > 0 ? a.body_budget
                                                         : std::max<size_t>(4 * a.max_body, 256 << 20));
  ho.max_connections = a.max_connections;
  ho.handler_threads = a.http_threads > 0 ? a.http_threads : std::max(32, 2 * so.workers + 16);
  ho.header_timeout = a.header_timeout;
  ho.body_timeout = a.body_timeout;
  ho.write_timeout = a.write_timeout;
  serve::HttpServer server(ho);
  server.SetLogger([&](const serve::HttpRequest& req, int status, double seconds) {
    metrics.Observe(EndpointLabel(req.path), status, seconds);
  });
  auto json_response = [](int status, std::string body) {
    return serve::HttpResponse{status, "application/json", std::move(body), {}};
  };
  const std::vector<std::string> post_paths = {"/get_reward", "/route", "/token_advantages"};
  server.SetFallback([&, post_paths](const serve::HttpRequest& req) {
    if (std::find(post_paths.begin(), post_paths.end(), req.path) != post_paths.end()) {
      serve::HttpResponse r = json_response(
          405, ErrorBody(fmt::format("{} takes POST with a JSON body", req.path)));
      r.headers.emplace_back("Allow", "POST");
      return r;
    }
    return json_response(404, ErrorBody(fmt::format(
                                   "no endpoint {} {} (POST /get_reward, /route, "
                                   "/token_advantages; GET /healthz, /metrics)",
                                   req.method, req.path)));
  });

  auto post = [&](const char* path,
                  std::function<std::string(const json&, Clock::time_point)> handler) {
    server.Route("POST", path, [&, handler](const serve::HttpRequest& req) {
      if (service->draining()) return json_response(503, ErrorBody("shutting down: no new requests"));
      ++in_flight;
      serve::HttpResponse res;
      try {
        res = json_response(200, handler(ParseBody(req.body), req.received));
      } catch (const HttpError& e) {
        res = json_response(e.status, ErrorBody(e.reason));
      } catch (const json::exception& e) {  // a type nlohmann refused (never expected)
        res = json_response(400, ErrorBody(std::string("bad request: ") + e.what()));
      } catch (const std::exception& e) {
        res = json_response(500, ErrorBody(std::string("internal error: ") + e.what()));
      }
      --in_flight;
      return res;
    });
  };
  post("/route", [&](const json& body, Clock::time_point start) {
    return HandleRoute(*service, settings, body, start);
  });
  post("/get_reward", [&](const json& body, Clock::time_point start) {
    return HandleGetReward(*service, settings, body, start);
  });
  post("/token_advantages",
       [&](const json& body, Clock::time_point) { return HandleTokenAdvantages(body); });
  // Health and metrics run on the I/O thread: they answer while every handler is busy.
  server.Route(
      "GET", "/healthz",
      [&](const serve::HttpRequest&) {
        auto c = service->Counters();
        ojson j;
        j["status"] = service->draining() ? "draining" : "ok";
        j["problems"] = service->problem_count();
        j["workers"] = c.workers;
        j["busy"] = c.busy;
        j["queue_depth"] = c.queue_depth;
        j["queue_capacity"] = c.queue_capacity;
        j["connections"] = server.open_connections();
        return json_response(service->draining() ? 503 : 200, j.dump());
      },
      /*fast=*/true);
  server.Route(
      "GET", "/metrics",
      [&](const serve::HttpRequest&) {
        return serve::HttpResponse{
            200, "text/plain; version=0.0.4",
            metrics.Render(service->Counters(), in_flight.load(), service->draining()), {}};
      },
      /*fast=*/true);

  auto bound = server.Bind();
  if (!bound.ok()) {
    fmt::print(stderr, "egca-serve: {}\n", bound.status().message());
    return 1;
  }
  const int port = bound.value();
  if (!a.port_file.empty()) {
    std::string tmp = a.port_file + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      fmt::print(f, "{}\n", port);
      std::fclose(f);
      std::rename(tmp.c_str(), a.port_file.c_str());
    }
  }
  fmt::print("egca-serve: listening on http://{}:{} ({} problems, {} workers, queue {})\n", a.host,
             port, service->problem_count(), so.workers, so.queue_capacity);
  std::fflush(stdout);

  // SIGTERM / SIGINT: refuse new requests, let the in-flight ones finish, then stop.
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done) {
      if (g_signalled) {
        service->Drain();
        fmt::print(stderr, "egca-serve: stopping: finishing {} in-flight requests\n",
                   in_flight.load());
        while (in_flight.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        server.Stop();  // after the answers in hand are written
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  server.Run();
  done = true;
  watcher.join();
  service.reset();  // joins the workers, stops the executors
  fmt::print(stderr, "egca-serve: stopped\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"egca-serve: egca as an HTTP reward service (docs/serve.md)"};
  app.add_option("--problems", a.problems, "problem files (the formats egca-batch reads)")
      ->required()
      ->check(CLI::ExistingPath);
  app.add_option("--format", a.format, "problem format (auto)");
  app.add_option("--host", a.host, "address to listen on (default 127.0.0.1)");
  app.add_option("--port", a.port, "port (0: any free port, printed)")->check(CLI::Range(0, 65535));
  app.add_option("--port-file", a.port_file, "write the port here once listening");
  app.add_option("--workers", a.workers, "executors (default: all cores)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--http-threads", a.http_threads,
                 "request handlers running at once (default max(32, 2*workers+16))")
      ->check(CLI::Range(0, 4096));
  app.add_option("--max-connections", a.max_connections,
                 "open connections (past it the longest-idle one is closed)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20));
  app.add_option("--body-budget", a.body_budget,
                 "bytes of all request bodies held at once (default max(4 x --max-body, 256 MiB))")
      ->check(CLI::Range(size_t{0}, size_t{1} << 40));
  app.add_option("--header-timeout", a.header_timeout,
                 "seconds for a request's header to arrive (idle keep-alive time included)")
      ->check(CLI::PositiveNumber);
  app.add_option("--body-timeout", a.body_timeout, "seconds for a request's body to arrive")
      ->check(CLI::PositiveNumber);
  app.add_option("--write-timeout", a.write_timeout, "seconds for a client to take its answer")
      ->check(CLI::PositiveNumber);
  app.add_option("--queue", a.queue, "jobs waiting for an executor before 503")
      ->check(CLI::Range(size_t{1}, size_t{1} << 24));
  app.add_option("--max-body", a.max_body, "largest request body, bytes (413 above)")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 34));
  app.add_option("--max-samples", a.max_samples, "samples per request (413 above)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 24));
  app.add_option("--request-timeout", a.request_timeout, "time budget of one request, seconds")
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout", a.timeout, "per-test wall/CPU limit, seconds (egca-batch's)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", a.seed, "seed of the random-boundary target");
  app.add_option("--max-program-bytes", a.max_program_bytes, "larger programs are refused (400)");
  app.add_option("--grading-trace", a.grading_trace, "auto, always or never (cost only)");
  app.add_flag("--runtime-error-is-logic", a.runtime_error_is_logic,
               "route runtime errors as LOGIC (egca-batch's flag)");
  app.add_flag("--no-comparability", a.no_comparability, "skip the I_cmp gate");
  app.add_flag("--passing-bypasses-gates", a.passing_bypasses_gates,
               "a program passing every test is CORRECT whatever the gates say");
  app.add_flag("--extract-constraints", a.extract_constraints,
               "constraints extracted from each problem's reference (egca-batch's flag)");
  if (auto exit = tools::ParseArgs(app, argc, argv, "egca-serve")) return *exit;
  return Serve(a);
}
