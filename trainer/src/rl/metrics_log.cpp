#include "egca/trainer/rl/metrics_log.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "egca/core/files.h"
#include "egca/trainer/tensorboard_event.pb.h"

namespace egca::trainer {
namespace {

// Debian ships no CRC-32C library (Google's crc32c is not packaged); the byte-wise table
// version is fast enough for a few hundred bytes per step.
std::array<uint32_t, 256> MakeCrc32cTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}

void PutLe64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutLe32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetLe(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

uint32_t Crc32c(std::string_view data) {
  static const std::array<uint32_t, 256> table = MakeCrc32cTable();
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : data) crc = table[(crc ^ c) & 0xff] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t MaskedCrc32c(std::string_view data) {
  const uint32_t crc = Crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

// ---- TensorBoardWriter --------------------------------------------------------------

StatusOr<std::unique_ptr<TensorBoardWriter>> TensorBoardWriter::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgument(fmt::format("{}: cannot create directory: {}", dir, ec.message()));
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const double now = NowSeconds();
  const std::string path = fmt::format("{}/events.out.tfevents.{}.{}.{}", dir,
                                       static_cast<int64_t>(now), host, getpid());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return InvalidArgument(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  std::unique_ptr<TensorBoardWriter> w(new TensorBoardWriter(f, path));
  tensorboard::Event version;
  version.set_wall_time(now);
  version.set_file_version("brain.Event:2");
  EGCA_RETURN_IF_ERROR(w->WriteRecord(version.SerializeAsString()));
  return w;
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

Status TensorBoardWriter::WriteRecord(const std::string& data) {
  std::string header;
  PutLe64(&header, data.size());
  std::string record = header;
  PutLe32(&record, MaskedCrc32c(header));
  record += data;
  PutLe32(&record, MaskedCrc32c(data));
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() || std::fflush(file_) != 0) {
    return DataLoss(fmt::format("{}: write failed: {}", path_, std::strerror(errno)));
  }
  return Status::Ok();
}

Status TensorBoardWriter::Write(int64_t step, const Scalars& scalars, double wall_time) {
  tensorboard::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  auto* summary = event.mutable_summary();
  for (const auto& [tag, value] : scalars) {
    auto* v = summary->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  return WriteRecord(event.SerializeAsString());
}

StatusOr<std::vector<TensorBoardScalar>> ReadTensorBoardScalars(const std::string& path) {
  EGCA_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  std::vector<TensorBoardScalar> out;
  size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 12) return DataLoss(fmt::format("{}: byte {}: cut record header", path, at));
    const std::string_view header(bytes.data() + at, 8);
    const uint64_t length = GetLe(bytes.data() + at, 8);
    if (GetLe(bytes.data() + at + 8, 4) != MaskedCrc32c(header)) {
      return DataLoss(fmt::format("{}: byte {}: bad length CRC", path, at));
    }
    if (length > bytes.size() - at - 12 || bytes.size() - at - 12 - length < 4) {
      return DataLoss(fmt::format("{}: byte {}: record of {} bytes is cut", path, at, length));
    }
    const std::string_view data(bytes.data() + at + 12, length);
    if (GetLe(bytes.data() + at + 12 + length, 4) != MaskedCrc32c(data)) {
      return DataLoss(fmt::format("{}: byte {}: bad data CRC", path, at));
    }
    tensorboard::Event event;
    if (!event.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
      return DataLoss(fmt::format("{}: byte {}: not an Event", path, at));
    }
    for (const auto& v : event.summary().value()) {
      out.push_back({event.step(), event.wall_time(), v.tag(), v.simple_value()});
    }
    at += 12 + length + 4;
  }
  return out;
}

// ---- MetricsLog ------------------------------------------------------------------------

StatusOr<std::unique_ptr<MetricsLog>> MetricsLog::Open(const std::string& run_dir,
                                                       int64_t resume_after_step) {
  std::unique_ptr<MetricsLog> log(new MetricsLog());
  log->jsonl_path_ = run_dir + "/metrics.jsonl";
  if (resume_after_step >= 0) {
    // Keep what the resumed run already accounts for; the steps after it are run again.
    std::string kept;
    std::ifstream in(log->jsonl_path_);
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.contains("step") || !j["step"].is_number_integer()) continue;
      if (j["step"].get<int64_t>() <= resume_after_step) kept += line + "\n";
    }
    EGCA_RETURN_IF_ERROR(WriteFileAtomic(log->jsonl_path_, kept));
  }
  log->jsonl_ = std::fopen(log->jsonl_path_.c_str(), resume_after_step >= 0 ? "ab" : "wb");
  if (log->jsonl_ == nullptr) {
    return InvalidArgument(fmt::format("{}: cannot write: {}", log->jsonl_path_, std::strerror(errno)));
  }
  EGCA_ASSIGN_OR_RETURN(log->tensorboard_, TensorBoardWriter::Open(run_dir + "/tensorboard"));
  return log;
}

MetricsLog::~MetricsLog() {
  if (jsonl_ != nullptr) std::fclose(jsonl_);
}

Status MetricsLog::Log(int64_t step, const std::string& kind, const Scalars& scalars) {
  nlohmann::ordered_json j;
  j["step"] = step;
  j["kind"] = kind;
  Scalars tagged;
  for (const auto& [name, value] : scalars) {
    // JSON has no NaN/Inf: they are written as null (and still plotted by TensorBoard).
    if (std::isfinite(value)) {
      j[name] = value;
    } else {
      j[name] = nullptr;
    }
    tagged[kind + "/" + name] = value;
  }
  const std::string line = j.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), jsonl_) != line.size() || std::fflush(jsonl_) != 0) {
    return DataLoss(fmt::format("{}: write failed", jsonl_path_));
  }
  return tensorboard_->Write(step, tagged, NowSeconds());
}

}  // namespace egca::trainer
