#include "egca/batch/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>

namespace egca::batch {

namespace {

void WriteFd(int fd, const std::string& text) {
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n <= 0) return;  // progress is best effort
    off += static_cast<size_t>(n);
  }
}

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

Progress::Progress(int64_t total, int64_t already_done, ProgressOptions options)
    : options_(options), total_(total), already_done_(already_done) {
  tty_ = options_.terminal == ProgressOptions::Terminal::kAlways ||
         (options_.terminal == ProgressOptions::Terminal::kAuto && isatty(options_.fd));
  start_ = last_print_ = std::chrono::steady_clock::now();
}

void Progress::Seed(credit::FailureMode mode, int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  modes_[static_cast<size_t>(mode)] += n;
}

void Progress::Add(credit::FailureMode mode, int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  done_session_ += n;
  modes_[static_cast<size_t>(mode)] += n;
  PrintLocked(false);
}

void Progress::Stage(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  PrintLocked(false, &text);
}

void Progress::Note(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!options_.enabled) return;
  std::string text;
  if (bar_open_) text += "\r\x1b[K";
  text += line + "\n";
  WriteFd(options_.fd, text);
  bar_open_ = false;
  if (tty_) PrintLocked(true);
}

void Progress::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!options_.enabled) return;
  std::string text = (bar_open_ ? "\r\x1b[K" : "") + LineLocked(Since(start_)) + "\n";
  WriteFd(options_.fd, text);
  bar_open_ = false;
}

std::string Progress::Line() const {
  std::lock_guard<std::mutex> lock(mu_);
  return LineLocked(Since(start_));
}

int64_t Progress::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return already_done_ + done_session_;
}

std::string Progress::LineLocked(double elapsed) const {
  int64_t done = already_done_ + done_session_;
  double pct = total_ > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 100;
  double rate = elapsed > 0 ? static_cast<double>(done_session_) / elapsed : 0;
  double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : -1;
  using credit::FailureMode;
  return fmt::format(
      "{}/{} ({:.1f}%)  {:.1f} samples/s  ETA {}  SYNTAX {} CONSTRAINT {} LOGIC {} "
      "CORRECT {}",
      done, total_, pct, rate, done >= total_ ? "0s" : FormatDuration(eta),
      modes_[static_cast<size_t>(FailureMode::kSyntax)],
      modes_[static_cast<size_t>(FailureMode::kConstraint)],
      modes_[static_cast<size_t>(FailureMode::kLogic)],
      modes_[static_cast<size_t>(FailureMode::kCorrect)]);
}

void Progress::PrintLocked(bool force, const std::string* stage) {
  if (!options_.enabled) return;
  double interval = tty_ ? options_.tty_interval : options_.log_interval;
  if (!force && printed_ && Since(last_print_) < interval) return;
  if (!force && !printed_ && !tty_ && Since(start_) < interval) return;
  last_print_ = std::chrono::steady_clock::now();
  printed_ = true;
  std::string line = stage != nullptr ? *stage : LineLocked(Since(start_));
  if (tty_) {
    WriteFd(options_.fd, "\r\x1b[K" + line);
    bar_open_ = true;
  } else {
    WriteFd(options_.fd, line + "\n");
  }
}

}  // namespace egca::batch
