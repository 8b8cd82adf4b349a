// Progress of a batch run on stderr: done/total, samples/s, ETA and the running mode counts.
//
//   1234/16400 (7.5%)  41.2 samples/s  ETA 6m08s  SYNTAX 210 CONSTRAINT 300 LOGIC 390 CORRECT 334
//
// On a terminal the line is redrawn in place at most `tty_interval` seconds apart; otherwise
// (a log file, a CI job, a Slurm array task) one full line is printed every `log_interval`
// seconds, so logs stay small. Thread-safe: workers call Add() after every record.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "egca/credit/token_credit.h"

namespace egca::batch {

struct ProgressOptions {
  int fd = 2;  // where to write (stderr)
  enum class Terminal { kAuto, kAlways, kNever } terminal = Terminal::kAuto;
  double tty_interval = 0.25;  // seconds between redraws on a terminal
  double log_interval = 10;    // seconds between lines otherwise
  bool enabled = true;         // false: print nothing (library use, tests)
};

class Progress {
 public:
  // `total` samples in this run, `already_done` of them found in the store (resume): the
  // rate and ETA count only what this session does.
  Progress(int64_t total, int64_t already_done, ProgressOptions options = {});

  // Counts of the modes of the records already in the store (so the running counts are
  // the run's, not the session's).
  void Seed(credit::FailureMode mode, int64_t n);
  // `n` more samples finished with `mode`. May print.
  void Add(credit::FailureMode mode, int64_t n = 1);
  // A step before routing starts (setting up references): shown in place of the bar, with
  // the bar's rate limit.
  void Stage(const std::string& text);
  // Prints `line` on its own line (a bad record, an error) without garbling the bar.
  void Note(const std::string& line);
  // Final line (always printed when enabled).
  void Finish();

  // The status text, without terminal control characters (tests, logs).
  std::string Line() const;
  int64_t done() const;

 private:
  std::string LineLocked(double elapsed) const;
  void PrintLocked(bool force, const std::string* stage = nullptr);

  ProgressOptions options_;
  bool tty_ = false;
  int64_t total_ = 0;
  int64_t already_done_ = 0;
  int64_t done_session_ = 0;
  std::array<int64_t, 4> modes_{};  // indexed by FailureMode
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_print_;
  bool printed_ = false;
  bool bar_open_ = false;  // a redrawn line is on screen without its newline
  mutable std::mutex mu_;
};

// "6m08s", "1h02m", "42s".
std::string FormatDuration(double seconds);

}  // namespace egca::batch
