#include "egca/batch/store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "egca/core/files.h"
#include "egca/core/json_depth.h"

namespace egca::batch {

using json = nlohmann::ordered_json;

namespace {

// Format 2 keys samples by SHA-256 (runner.h SampleKey). Format 1 keyed them by a 64-bit
// FNV-1a that ignored detect_body and could be made to collide: its stores are read
// (report, show) but never resumed or merged.
constexpr const char* kFormat = "egca-batch-store/2";
constexpr const char* kFormat1 = "egca-batch-store/1";

Status RefuseFormat1(const std::string& what) {
  return FailedPrecondition(fmt::format(
      "{}: store format {} (64-bit FNV-1a sample keys, which can collide and ignore "
      "detect_body); this egca writes {} (SHA-256 keys). It can still be read (egca-batch "
      "report, show) but not resumed or merged: run again into a new --store",
      what, kFormat1, kFormat));
}
constexpr const char* kResultsFile = "results.jsonl";
constexpr const char* kLockFile = "lock";
// `,"crc":"xxxxxxxx"}`
constexpr size_t kCrcSuffix = 18;

std::string ResultsPath(const std::string& dir) { return dir + "/" + kResultsFile; }

uint32_t Crc32(std::string_view a, std::string_view b) {
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(a.data()), static_cast<uInt>(a.size()));
  crc = crc32(crc, reinterpret_cast<const Bytef*>(b.data()), static_cast<uInt>(b.size()));
  return static_cast<uint32_t>(crc);
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Internal(Errno("cannot write " + path));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

std::string BadJson(const BadRecord& b) {
  json j = {{"type", "bad"}, {"file", b.file}, {"line", b.line}, {"message", b.message}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string SessionJson(const SessionRecord& s) {
  json j = {{"type", "session"},
            {"wall_seconds", s.wall_seconds},
            {"samples_routed", s.samples_routed},
            {"programs_routed", s.programs_routed},
            {"workers", s.workers},
            {"load_average", s.load_average},
            {"started", s.started},
            {"host", s.host}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string HeaderJson(const RunConfig& config) {
  json j = {{"type", "header"}, {"format", kFormat}, {"config", json::parse(config.ToJson())}};
  return j.dump();
}

// Parses the store's text into `out`. `path` names it in errors.
Status ParseStoreText(std::string_view text, const std::string& path, StoreContents* out) {
  size_t pos = 0;
  int64_t line_no = 0;
  bool have_header = false;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    ++line_no;
    if (nl == std::string_view::npos) {
      // No newline: a torn last write.
      ++out->torn_lines;
      break;
    }
    std::string_view line = text.substr(pos, nl - pos);
    auto object = CheckLine(line);
    bool last = nl + 1 == text.size();
    if (!object) {
      if (!have_header) return DataLoss(fmt::format("{}:{}: no valid header line", path, line_no));
      if (last) {
        ++out->torn_lines;
        break;
      }
      ++out->corrupt_lines;
      pos = nl + 1;
      continue;
    }
    json j = CheckJsonDepth(*object, "").ok() ? json::parse(*object, nullptr, false)
                                              : json(json::value_t::discarded);
    std::string type = j.is_object() && j.contains("type") && j["type"].is_string()
                           ? j["type"].get<std::string>()
                           : "";
    if (!have_header) {
      const bool format1 = j.is_object() && j.contains("format") && j["format"] == kFormat1;
      if (type != "header" || !j.contains("format") ||
          (j["format"] != kFormat && !format1) || !j.contains("config")) {
        return DataLoss(fmt::format("{}:{}: not an egca-batch store header (format {})", path,
                                    line_no, kFormat));
      }
      auto config = RunConfig::FromJson(j["config"].dump());
      if (!config.ok()) return config.status().WithContext(fmt::format("{}:{}", path, line_no));
      out->config = std::move(config).value();
      out->format = format1 ? 1 : 2;
      have_header = true;
    } else if (type == "sample") {
      auto r = ParseSampleRecord(*object);
      if (!r.ok()) return r.status().WithContext(fmt::format("{}:{}", path, line_no));
      out->samples.push_back(std::move(r).value());
    } else if (type == "problem") {
      auto r = ParseProblemResolution(*object);
      if (!r.ok()) return r.status().WithContext(fmt::format("{}:{}", path, line_no));
      out->problems.push_back(std::move(r).value());
    } else if (type == "bad") {
      BadRecord b;
      b.file = j.value("file", "");
      b.line = j.value("line", int64_t{0});
      b.message = j.value("message", "");
      out->bad.push_back(std::move(b));
    } else if (type == "session") {
      SessionRecord s;
      s.wall_seconds = j.value("wall_seconds", 0.0);
      s.samples_routed = j.value("samples_routed", int64_t{0});
      s.programs_routed = j.value("programs_routed", int64_t{0});
      s.workers = j.value("workers", 0);
      s.load_average = j.value("load_average", 0.0);
      s.started = j.value("started", "");
      s.host = j.value("host", "");
      out->sessions.push_back(std::move(s));
    } else {
      return DataLoss(fmt::format("{}:{}: unknown record type \"{}\"", path, line_no, type));
    }
    pos = nl + 1;
    out->valid_bytes = pos;
  }
  if (!have_header) return DataLoss(fmt::format("{}: empty store (no header line)", path));
  return Status::Ok();
}

}  // namespace

// ------------------------------------------------------------------------------ config

std::string RunConfig::ToJson() const {
  json j = {{"problems_path", problems_path},
            {"problems_digest", problems_digest},
            {"problems_format", problems_format},
            {"samples_path", samples_path},
            {"samples_digest", samples_digest},
            {"constraints", constraints},
            {"timeout_seconds", timeout_seconds},
            {"runtime_error_is_logic", runtime_error_is_logic},
            {"check_comparability", check_comparability},
            {"passing_bypasses_gates", passing_bypasses_gates},
            {"localize", localize},
            {"apps_allclose", apps_allclose},
            {"limit", limit},
            {"max_program_bytes", max_program_bytes},
            {"seed", seed},
            {"shard_index", shard_index},
            {"shard_count", shard_count},
            {"egca_version", egca_version},
            {"egca_commit", egca_commit}};
  return j.dump();
}

StatusOr<RunConfig> RunConfig::FromJson(std::string_view text) {
  EGCA_RETURN_IF_ERROR(CheckJsonDepth(text, "config"));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("config is not a JSON object");
  RunConfig c;
  try {
    c.problems_path = j.at("problems_path").get<std::string>();
    c.problems_digest = j.at("problems_digest").get<std::string>();
    c.problems_format = j.at("problems_format").get<std::string>();
    c.samples_path = j.at("samples_path").get<std::string>();
    c.samples_digest = j.at("samples_digest").get<std::string>();
    c.constraints = j.at("constraints").get<std::string>();
    c.timeout_seconds = j.at("timeout_seconds").get<double>();
    c.runtime_error_is_logic = j.at("runtime_error_is_logic").get<bool>();
    c.check_comparability = j.at("check_comparability").get<bool>();
    // Absent in stores written before the option existed (it was off).
    // Absent in stores written before --grade-only existed (they localized).
    c.localize = j.contains("localize") ? j.at("localize").get<bool>() : true;
    if (j.contains("passing_bypasses_gates")) {
      c.passing_bypasses_gates = j.at("passing_bypasses_gates").get<bool>();
    }
    // Absent in stores written before the option existed: they were graded with APPS's
    // leniency, which was the only rule then.
    c.apps_allclose = j.contains("apps_allclose") ? j.at("apps_allclose").get<bool>() : true;
    c.limit = j.at("limit").get<int64_t>();
    c.max_program_bytes = j.at("max_program_bytes").get<uint64_t>();
    c.seed = j.at("seed").get<uint64_t>();
    c.shard_index = j.at("shard_index").get<int32_t>();
    c.shard_count = j.at("shard_count").get<int32_t>();
    c.egca_version = j.at("egca_version").get<std::string>();
    c.egca_commit = j.at("egca_commit").get<std::string>();
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("config: ") + e.what());
  }
  return c;
}

Status CompareConfigs(const RunConfig& stored, const RunConfig& wanted, ConfigMatch match) {
  json a = json::parse(stored.ToJson()), b = json::parse(wanted.ToJson());
  std::set<std::string> ignored = {"problems_path", "samples_path", "egca_commit"};
  if (match == ConfigMatch::kMerge) {
    ignored.insert("shard_index");
    ignored.insert("shard_count");
  }
  for (const auto& [name, value] : a.items()) {
    if (ignored.count(name)) continue;
    if (b[name] != value) {
      return FailedPrecondition(fmt::format("config differs in {}: store has {}, this run has {}",
                                            name, value.dump(), b[name].dump()));
    }
  }
  return Status::Ok();
}

// ------------------------------------------------------------------------------ lines

std::string FrameLine(std::string_view object) {
  // object = "{...}": the crc covers it exactly; the framed line reopens it to add a field.
  uint32_t crc = Crc32(object, "");
  std::string line(object.substr(0, object.size() - 1));
  line += fmt::format(",\"crc\":\"{:08x}\"}}\n", crc);
  return line;
}

std::optional<std::string_view> CheckLine(std::string_view line) {
  if (line.size() < kCrcSuffix + 2 || line.back() != '}') return std::nullopt;
  std::string_view suffix = line.substr(line.size() - kCrcSuffix);
  if (suffix.substr(0, 8) != ",\"crc\":\"" || suffix.substr(16) != "\"}") return std::nullopt;
  uint32_t want = 0;
  for (char c : suffix.substr(8, 8)) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    want = (want << 4) | static_cast<uint32_t>(d);
  }
  std::string_view body = line.substr(0, line.size() - kCrcSuffix);
  if (Crc32(body, "}") != want) return std::nullopt;
  // The framed line is itself a JSON object (the record plus its crc field).
  return line;
}

// ------------------------------------------------------------------------------ reading

StatusOr<StoreContents> ReadStore(const std::string& dir) {
  std::string path = ResultsPath(dir);
  if (!std::filesystem::exists(path)) {
    return NotFound(fmt::format("{}: no egca-batch store (no {})", dir, kResultsFile));
  }
  EGCA_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  StoreContents out;
  EGCA_RETURN_IF_ERROR(ParseStoreText(text, path, &out));
  return out;
}

// ------------------------------------------------------------------------------ store

StatusOr<std::unique_ptr<ResultStore>> ResultStore::Open(const std::string& dir,
                                                         const RunConfig& config) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return InvalidArgument(fmt::format("{}: cannot create store directory: {}", dir, ec.message()));
  std::unique_ptr<ResultStore> store(new ResultStore());
  store->dir_ = dir;
  std::string lock_path = dir + "/" + kLockFile;
  store->lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (store->lock_fd_ < 0) return InvalidArgument(Errno("cannot open " + lock_path));
  if (::flock(store->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return FailedPrecondition(
        fmt::format("{}: the store is in use by another egca-batch process", dir));
  }
  std::string path = ResultsPath(dir);
  bool exists = std::filesystem::exists(path) && std::filesystem::file_size(path) > 0;
  store->fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (store->fd_ < 0) return InvalidArgument(Errno("cannot open " + path));
  if (exists) {
    EGCA_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    EGCA_RETURN_IF_ERROR(ParseStoreText(text, path, &store->existing_));
    if (store->existing_.format == 1) return RefuseFormat1(dir);
    Status same = CompareConfigs(store->existing_.config, config, ConfigMatch::kResume);
    if (!same.ok()) {
      return FailedPrecondition(
          fmt::format("{}: refusing to resume: {} (use a new --store)", dir, same.message()));
    }
    if (store->existing_.valid_bytes < text.size()) {
      // Cut the torn tail so new records start on a fresh line.
      if (::ftruncate(store->fd_, static_cast<off_t>(store->existing_.valid_bytes)) != 0) {
        return Internal(Errno("cannot truncate the torn tail of " + path));
      }
    }
  } else {
    EGCA_RETURN_IF_ERROR(WriteAll(store->fd_, FrameLine(HeaderJson(config)), path));
    if (::fsync(store->fd_) != 0) return Internal(Errno("cannot sync " + path));
    store->existing_.config = config;
  }
  return store;
}

Status ResultStore::Write(const std::string& dir, const StoreContents& contents) {
  if (std::filesystem::exists(ResultsPath(dir))) {
    return FailedPrecondition(
        fmt::format("{}: already holds a store; merge into a new directory", dir));
  }
  EGCA_ASSIGN_OR_RETURN(auto store, Open(dir, contents.config));
  for (const auto& p : contents.problems) EGCA_RETURN_IF_ERROR(store->AppendProblem(p));
  for (const auto& b : contents.bad) EGCA_RETURN_IF_ERROR(store->AppendBad(b));
  EGCA_RETURN_IF_ERROR(store->AppendSamples(contents.samples));
  for (const auto& s : contents.sessions) EGCA_RETURN_IF_ERROR(store->AppendSession(s));
  return store->Flush();
}

ResultStore::~ResultStore() {
  if (fd_ >= 0) {
    ::fsync(fd_);
    ::close(fd_);
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

Status ResultStore::AppendLines(const std::string& lines, int records) {
  std::lock_guard<std::mutex> lock(mu_);
  EGCA_RETURN_IF_ERROR(WriteAll(fd_, lines, ResultsPath(dir_)));
  unsynced_ += records;
  if (unsynced_ >= sync_every) {
    if (::fdatasync(fd_) != 0) return Internal(Errno("cannot sync " + ResultsPath(dir_)));
    unsynced_ = 0;
  }
  return Status::Ok();
}

Status ResultStore::AppendSamples(const std::vector<SampleRecord>& records) {
  if (records.empty()) return Status::Ok();
  std::string lines;
  for (const auto& r : records) lines += FrameLine(SampleRecordJson(r));
  return AppendLines(lines, static_cast<int>(records.size()));
}

Status ResultStore::AppendProblem(const ProblemResolution& resolution) {
  return AppendLines(FrameLine(ProblemResolutionJson(resolution)), 1);
}

Status ResultStore::AppendBad(const BadRecord& bad) {
  return AppendLines(FrameLine(BadJson(bad)), 1);
}

Status ResultStore::AppendSession(const SessionRecord& session) {
  return AppendLines(FrameLine(SessionJson(session)), 1);
}

Status ResultStore::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  if (::fsync(fd_) != 0) return Internal(Errno("cannot sync " + ResultsPath(dir_)));
  unsynced_ = 0;
  return Status::Ok();
}

// ------------------------------------------------------------------------------ merge

int32_t ProblemShard(std::string_view problem_id, int32_t count) {
  if (count <= 1) return 0;
  return static_cast<int32_t>(Fnv1a64(problem_id) % static_cast<uint64_t>(count));
}

Status MergeStores(const std::vector<std::string>& inputs, const std::string& out,
                   MergeReport* report) {
  if (inputs.empty()) return InvalidArgument("merge: no input stores");
  StoreContents merged;
  std::map<std::tuple<std::string, std::string, int32_t>, size_t> samples;
  std::map<std::string, ProblemResolution> problems;
  std::set<std::tuple<std::string, int64_t, std::string>> bad;
  std::map<int32_t, std::string> shards;
  int32_t shard_count = -1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto contents = ReadStore(inputs[i]);
    if (!contents.ok()) return contents.status();
    StoreContents& c = contents.value();
    if (c.format == 1) return RefuseFormat1("merge: " + inputs[i]);
    if (i == 0) {
      merged.config = c.config;
      shard_count = c.config.shard_count;
    } else {
      Status same = CompareConfigs(merged.config, c.config, ConfigMatch::kMerge);
      if (!same.ok()) return same.WithContext(fmt::format("merge: {} vs {}", inputs[0], inputs[i]));
      if (c.config.shard_count != shard_count) {
        return FailedPrecondition(fmt::format("merge: {} is shard {}/{} but {} has {} shards",
                                              inputs[i], c.config.shard_index, c.config.shard_count,
                                              inputs[0], shard_count));
      }
    }
    auto [it, fresh] = shards.emplace(c.config.shard_index, inputs[i]);
    if (!fresh && shard_count > 1) {
      return FailedPrecondition(fmt::format("merge: shard {}/{} given twice ({} and {})",
                                            c.config.shard_index, shard_count, it->second,
                                            inputs[i]));
    }
    for (auto& p : c.problems) {
      auto [pit, added] = problems.emplace(p.problem, p);
      if (!added && ProblemResolutionJson(pit->second) != ProblemResolutionJson(p)) {
        return FailedPrecondition(fmt::format(
            "merge: problem {} was set up differently in {} (reference {} vs {})", p.problem,
            inputs[i], ReferenceKindName(pit->second.reference), ReferenceKindName(p.reference)));
      }
      if (added) merged.problems.push_back(p);
    }
    for (auto& b : c.bad) {
      if (bad.emplace(b.file, b.line, b.message).second) merged.bad.push_back(b);
    }
    for (auto& s : c.samples) {
      auto key = std::make_tuple(s.problem, s.key, s.dup);
      auto found = samples.find(key);
      if (found != samples.end()) {
        if (!SameResult(merged.samples[found->second], s)) {
          return FailedPrecondition(fmt::format(
              "merge: sample {} {} (dup {}) has different results in two stores (second: {})",
              s.problem, s.key, s.dup, inputs[i]));
        }
        if (report) ++report->duplicates;
        continue;
      }
      samples.emplace(key, merged.samples.size());
      merged.samples.push_back(std::move(s));
    }
    for (auto& s : c.sessions) merged.sessions.push_back(std::move(s));
  }
  if (shard_count > 1) {
    std::string missing;
    for (int32_t s = 0; s < shard_count; ++s) {
      if (!shards.count(s)) missing += (missing.empty() ? "" : ", ") + std::to_string(s);
    }
    if (!missing.empty()) {
      return FailedPrecondition(
          fmt::format("merge: shards {} of {} are missing", missing, shard_count));
    }
    merged.config.shard_index = 0;
    merged.config.shard_count = 1;
  }
  if (report) {
    report->samples = static_cast<int64_t>(merged.samples.size());
    report->notes.push_back(fmt::format("{} stores, {} problems, {} samples, {} bad records",
                                        inputs.size(), merged.problems.size(),
                                        merged.samples.size(), merged.bad.size()));
  }
  return ResultStore::Write(out, merged);
}

}  // namespace egca::batch
