#include "egca/credit/reflexicoder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace egca::credit {
namespace {

constexpr std::string_view kTags[] = {"<think>",   "</think>",     "<answer>",
                                      "</answer>", "<reflection>", "</reflection>"};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

class SegmentReader {
 public:
  SegmentReader(std::string_view text, const ReflectionFormatOptions& options)
      : text_(text), options_(options) {}

  void SkipSpace() {
    if (!options_.allow_whitespace_between_segments) return;
    while (pos_ < text_.size() && IsSpace(text_[pos_])) ++pos_;
  }
  bool AtEnd() const { return pos_ == text_.size(); }
  bool LookingAt(std::string_view tag) const { return text_.substr(pos_, tag.size()) == tag; }

  // Reads "<name>content</name>" at the current position into *content.
  bool Read(std::string_view name, std::string* content, std::string* error) {
    const std::string open = "<" + std::string(name) + ">";
    const std::string close = "</" + std::string(name) + ">";
    if (!LookingAt(open)) {
      *error = "expected " + open + " at byte " + std::to_string(pos_);
      return false;
    }
    const size_t begin = pos_ + open.size();
    const size_t end = text_.find(close, begin);
    if (end == std::string_view::npos) {
      *error = "unclosed " + open + " at byte " + std::to_string(pos_);
      return false;
    }
    const std::string_view body = text_.substr(begin, end - begin);
    for (std::string_view tag : kTags) {
      const size_t at = body.find(tag);
      if (at != std::string_view::npos) {
        *error = "tag " + std::string(tag) + " inside " + open + " at byte " +
                 std::to_string(begin + at);
        return false;
      }
    }
    *content = std::string(body);
    pos_ = end + close.size();
    return true;
  }

  size_t pos() const { return pos_; }

 private:
  std::string_view text_;
  const ReflectionFormatOptions& options_;
  size_t pos_ = 0;
};

}  // namespace

ReflectionTrajectory ParseReflectionTrajectory(std::string_view text,
                                               const ReflectionFormatOptions& options) {
  ReflectionTrajectory out;
  SegmentReader reader(text, options);
  std::string segment;
  auto fail = [&out](std::string error) {
    out.well_formed = false;
    out.format_error = std::move(error);
    return out;
  };
  reader.SkipSpace();
  if (!reader.Read("think", &out.think, &out.format_error)) return fail(out.format_error);
  reader.SkipSpace();
  if (!reader.Read("answer", &segment, &out.format_error)) return fail(out.format_error);
  out.answers.push_back(segment);
  while (true) {
    reader.SkipSpace();
    if (reader.AtEnd()) break;
    if (!reader.LookingAt("<reflection>")) {
      return fail("unexpected text at byte " + std::to_string(reader.pos()) +
                  " (expected <reflection> or the end)");
    }
    if (!reader.Read("reflection", &segment, &out.format_error)) return fail(out.format_error);
    out.reflections.push_back(segment);
    reader.SkipSpace();
    if (!reader.Read("answer", &segment, &out.format_error)) {
      return fail("reflection " + std::to_string(out.reflections.size()) +
                  " has no answer: " + out.format_error);
    }
    out.answers.push_back(segment);
    if (out.num_reflections() > options.max_reflections) {
      return fail(std::to_string(out.num_reflections()) +
                  " reflections exceed max_reflections=" + std::to_string(options.max_reflections));
    }
  }
  out.well_formed = true;
  return out;
}

double CyclePenalty(int n, const ReflectionRewardOptions& o) {
  if (n <= o.n0) return 1.0;
  const double k = static_cast<double>(n - o.n0);
  const double pi = std::acos(-1.0);
  return 1.0 / (1.0 + o.alpha * std::pow(k, o.beta)) * std::exp(-o.gamma * k) *
         (1.0 - o.delta * std::sin(pi / 2.0 * k));
}

std::vector<double> ImprovementWeights(int n, double lambda) {
  std::vector<double> w;
  if (n <= 0) return w;
  w.reserve(n);
  double total = 0.0;
  for (int t = 1; t <= n; ++t) {
    w.push_back(std::exp(lambda * t));
    total += w.back();
  }
  for (double& x : w) x /= total;
  return w;
}

double ImprovementSignal(double previous, double current, const ReflectionRewardOptions& o) {
  const double delta = current - previous;
  if (delta > o.eps) return std::tanh(delta / o.s);
  if (delta < -o.eps) return -std::tanh(-delta / o.s);
  // No change: a bonus for holding the maximum, a penalty for stagnating below it.
  return previous >= o.r_max - o.eps ? o.h_pos : -o.h_neg;
}

std::string ReflectionReward::ToString() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "F=%d n=%d P=%.6f R_traj=%.6f E=%.6f R=%.6f", format_ok ? 1 : 0,
                n, penalty, trajectory, efficiency, overall);
  return buf;
}

StatusOr<ReflectionReward> ComputeReflectionReward(bool format_ok,
                                                   const std::vector<double>& scores,
                                                   const ReflectionRewardOptions& o) {
  ReflectionReward out;
  out.format_ok = format_ok;
  if (!format_ok) return out;  // eq. 9 with F = 0: every term is gated off
  if (scores.empty()) {
    return InvalidArgument("reflection reward: a well-formed trajectory needs r_0..r_n");
  }
  for (size_t t = 0; t < scores.size(); ++t) {
    if (!std::isfinite(scores[t])) {
      return InvalidArgument("reflection reward: r_" + std::to_string(t) + " is not finite");
    }
  }
  const int n = static_cast<int>(scores.size()) - 1;
  out.n = n;
  out.penalty = CyclePenalty(n, o);
  out.weights = ImprovementWeights(n, o.lambda);
  double improvement = 0.0;
  for (int t = 1; t <= n; ++t) {
    out.signals.push_back(ImprovementSignal(scores[t - 1], scores[t], o));
    improvement += out.weights[t - 1] * out.signals.back();
  }
  const double r0 = scores.front();
  const double rn = scores.back();
  out.trajectory = (std::fabs(rn - o.r_max) <= o.eps ? 1.0 : 0.0) + o.eta * improvement;
  out.efficiency =
      (rn >= o.tau_q ? 1.0 : 0.0) / std::max(n, 1) + (rn - r0) / (std::max(1, n - 1) + o.eps2);
  out.overall = out.penalty * (o.phi * out.trajectory + o.psi * out.efficiency) + o.xi;
  return out;
}

}  // namespace egca::credit
