// Where a training run's numbers go: one JSON object per step in metrics.jsonl (machines),
// TensorBoard event files (plots), and a progress line on stderr (people).
//
// TensorBoard files are TFRecord files of Event protos: each record is
//   uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)
// (little-endian), masked_crc = ((crc >> 15) | (crc << 17)) + 0xa282ead8, CRC-32C
// (Castagnoli). The first record carries file_version "brain.Event:2".
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "egca/core/status.h"

namespace egca::trainer {

// CRC-32C (Castagnoli, reflected 0x82F63B78) of `data`, and TFRecord's masked form.
uint32_t Crc32c(std::string_view data);
uint32_t MaskedCrc32c(std::string_view data);

// An ordered set of named scalars ("reward/mean", "kl", ...).
using Scalars = std::map<std::string, double>;

class TensorBoardWriter {
 public:
  // Creates `dir` if needed and a new file events.out.tfevents.<unix time>.<host>.<pid>
  // in it (TensorBoard reads every such file of a directory).
  static StatusOr<std::unique_ptr<TensorBoardWriter>> Open(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // One Event with one simple_value per scalar; flushed, so a killed run keeps it.
  Status Write(int64_t step, const Scalars& scalars, double wall_time);
  const std::string& path() const { return path_; }

 private:
  TensorBoardWriter(std::FILE* file, std::string path) : file_(file), path_(std::move(path)) {}
  Status WriteRecord(const std::string& data);
  std::FILE* file_;  // Owned.
  std::string path_;
};

// One scalar read back from an event file.
struct TensorBoardScalar {
  int64_t step = 0;
  double wall_time = 0;
  std::string tag;
  float value = 0;
};

// Reads every scalar of an event file, checking both CRCs of every record. DATA_LOSS naming
// the file and byte offset for a bad length or CRC, a cut record or an unparsable Event.
StatusOr<std::vector<TensorBoardScalar>> ReadTensorBoardScalars(const std::string& path);

// metrics.jsonl + TensorBoard under one run directory.
class MetricsLog {
 public:
  // `run_dir`/metrics.jsonl and `run_dir`/tensorboard/. `resume_after_step` >= 0 (resume):
  // lines of metrics.jsonl with "step" > resume_after_step (written after the checkpoint
  // the run resumes from) are dropped, since those steps run again; -1: a fresh file.
  static StatusOr<std::unique_ptr<MetricsLog>> Open(const std::string& run_dir,
                                                    int64_t resume_after_step = -1);
  ~MetricsLog();

  // Appends {"step": step, "kind": kind, <scalars>...} to metrics.jsonl and the scalars to
  // TensorBoard as "<kind>/<name>" ("train/reward", "eval/pass@1").
  Status Log(int64_t step, const std::string& kind, const Scalars& scalars);

  const std::string& jsonl_path() const { return jsonl_path_; }
  const std::string& tensorboard_path() const { return tensorboard_->path(); }

 private:
  MetricsLog() = default;
  std::string jsonl_path_;
  std::FILE* jsonl_ = nullptr;  // Owned.
  std::unique_ptr<TensorBoardWriter> tensorboard_;
};

}  // namespace egca::trainer
