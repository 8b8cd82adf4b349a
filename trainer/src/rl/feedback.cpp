#include "egca/trainer/rl/feedback.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

extern char** environ;

namespace egca::trainer {
namespace {

constexpr struct {
  FeedbackMode mode;
  const char* name;
} kModes[] = {{FeedbackMode::kPlain, "plain"},
              {FeedbackMode::kLevelFeedback, "level_feedback"},
              {FeedbackMode::kEgca, "egca"},
              {FeedbackMode::kExpertEdits, "expert_edits"},
              {FeedbackMode::kCustom, "custom"}};

std::string Cut(std::string_view s, int64_t max_chars) {
  if (max_chars <= 0 || static_cast<int64_t>(s.size()) <= max_chars) return std::string(s);
  // Back off to a UTF-8 character boundary.
  size_t n = static_cast<size_t>(max_chars);
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(s.substr(0, n)) + fmt::format("... ({} more bytes)", s.size() - n);
}

// Line `line` (1-based) of `text`, without its newline; "" when out of range.
std::string LineOf(std::string_view text, int32_t line) {
  if (line <= 0) return "";
  size_t begin = 0;
  for (int32_t l = 1; l < line; ++l) {
    begin = text.find('\n', begin);
    if (begin == std::string_view::npos) return "";
    ++begin;
  }
  size_t end = text.find('\n', begin);
  if (end == std::string_view::npos) end = text.size();
  std::string_view s = text.substr(begin, end - begin);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return std::string(s);
}

std::string Quote(std::string_view s, int64_t max_chars) {
  return nlohmann::json(Cut(s, max_chars)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Indices of the tests shown for sandbox_slice `slice` among `total` run tests.
std::vector<size_t> Slice(size_t total, int64_t slice) {
  std::vector<size_t> out;
  if (slice == 0) {
    for (size_t i = 0; i < total; ++i) out.push_back(i);
  } else if (slice > 0) {
    for (size_t i = 0; i < std::min(total, static_cast<size_t>(slice)); ++i) out.push_back(i);
  } else {
    const size_t n = std::min(total, static_cast<size_t>(-slice));
    for (size_t i = total - n; i < total; ++i) out.push_back(i);
  }
  return out;
}

std::string VerdictLine(const sandbox::Verdict& v, const tracer::TestCase& test, int64_t value_chars) {
  using sandbox::VerdictKind;
  switch (v.kind) {
    case VerdictKind::kOk:
      return "passed";
    case VerdictKind::kWrongAnswer:
      if (test.kind == tracer::TestKind::kStdio) {
        return fmt::format("wrong output: expected {}, got {}", Quote(v.expected, value_chars),
                           Quote(v.actual, value_chars));
      }
      return fmt::format("wrong answer: expected {}, got {}", Cut(v.expected, value_chars),
                         Cut(v.actual, value_chars));
    case VerdictKind::kSyntaxError:
    case VerdictKind::kRuntimeError: {
      std::string s = v.error_type.empty() ? std::string("error") : v.error_type;
      if (!v.message.empty()) s += ": " + Cut(v.message, value_chars);
      if (v.line > 0) s += fmt::format(" (line {})", v.line);
      return s;
    }
    case VerdictKind::kTimeout:
      return fmt::format("timed out after {:.1f} s", v.wall_seconds);
    case VerdictKind::kMemoryLimit:
      return "exceeded the memory limit";
    case VerdictKind::kOutputLimit:
      return "printed more than the output limit";
    case VerdictKind::kKilled:
      return v.detail.empty() ? std::string("was killed") : "was killed: " + v.detail;
    case VerdictKind::kViolation:
      return v.detail.empty() ? std::string("attempted a forbidden operation")
                              : "attempted a forbidden operation: " + v.detail;
  }
  return sandbox::VerdictName(v.kind);
}

}  // namespace

const char* FeedbackModeName(FeedbackMode mode) {
  for (const auto& m : kModes) {
    if (m.mode == mode) return m.name;
  }
  return "?";
}

bool ParseFeedbackMode(std::string_view name, FeedbackMode* out) {
  for (const auto& m : kModes) {
    if (name == m.name) {
      *out = m.mode;
      return true;
    }
  }
  return false;
}

std::string DescribeTestInput(const tracer::TestCase& test, int64_t max_chars) {
  switch (test.kind) {
    case tracer::TestKind::kCall: {
      std::string args = test.args_json;
      // "[1, [2, 3]]" -> "1, [2, 3]": the call as it is written.
      if (args.size() >= 2 && args.front() == '[' && args.back() == ']') args = args.substr(1, args.size() - 2);
      return Cut(fmt::format("{}({})", test.function, args), max_chars);
    }
    case tracer::TestKind::kStdio:
      return "stdin " + Quote(test.stdin_data, max_chars);
    case tracer::TestKind::kAssert: {
      std::string code = test.test_code;
      if (!test.entry_point.empty()) code += fmt::format("\ncheck({})", test.entry_point);
      return Cut(code, max_chars);
    }
  }
  return "";
}

std::string ExecutionFeedback(const gates::RouteResult& route, const std::vector<tracer::TestCase>& tests,
                              std::string_view program, const FeedbackOptions& options) {
  std::string out;
  // Static checks first: a program that does not compile has no test to show.
  if (route.mode == credit::FailureMode::kSyntax && route.grading.tests.empty()) {
    out += "The program does not compile";
    out += route.error_message.empty() ? std::string(".") : ": " + Cut(route.error_message, options.value_chars);
    if (route.error_span) {
      const int32_t line = static_cast<int32_t>(route.error_span->begin.line);
      const std::string src = LineOf(program, line);
      if (!src.empty()) out += fmt::format("\n  line {}: {}", line, src);
    }
    return Cut(out, options.max_chars);
  }
  if (!route.grading.tests.empty() &&
      route.grading.tests.front().verdict.kind == sandbox::VerdictKind::kSyntaxError) {
    const auto& v = route.grading.tests.front().verdict;
    out += fmt::format("The program does not compile: {}", VerdictLine(v, tests.front(), options.value_chars));
    const std::string src = LineOf(program, v.line);
    if (!src.empty()) out += fmt::format("\n  line {}: {}", v.line, src);
    return Cut(out, options.max_chars);
  }
  if (!route.constraint_violations.empty()) {
    out += "The program violates the problem's constraints:\n";
    for (const auto& c : route.constraint_violations) out += "  - " + c.ToString() + "\n";
  }
  const size_t run = route.grading.tests.size();
  out += fmt::format("Passed {} of {} tests.\n", route.grading.passed, route.grading.total);
  for (size_t i : Slice(run, options.sandbox_slice)) {
    if (i >= tests.size()) break;
    const auto& v = route.grading.tests[i].verdict;
    out += fmt::format("Test {}: {} -> {}\n", i + 1, DescribeTestInput(tests[i], options.value_chars),
                       VerdictLine(v, tests[i], options.value_chars));
    if ((v.kind == sandbox::VerdictKind::kRuntimeError) && v.line > 0) {
      const std::string src = LineOf(program, v.line);
      if (!src.empty()) out += fmt::format("  raised at line {}: {}\n", v.line, src);
    }
  }
  if (options.mode == FeedbackMode::kEgca && route.divergence && route.divergence->earliest) {
    const diff::Divergence& d = *route.divergence->earliest;
    out += fmt::format("Compared with a correct solution on test {}, the execution first goes wrong at line {}",
                       route.first_failing_test + 1, d.line);
    const std::string src = LineOf(program, d.line);
    out += src.empty() ? ".\n" : fmt::format(": {}\n", src);
    for (const auto& v : d.variables) {
      out += fmt::format("  {} is {} here; it should be {}\n", v.candidate_name,
                         Cut(v.candidate_value, options.value_chars), Cut(v.reference_value, options.value_chars));
    }
    if (d.variables.empty() && !d.detail.empty()) out += "  " + Cut(d.detail, options.value_chars) + "\n";
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return Cut(out, options.max_chars);
}

FeedbackHookInput FeedbackHookInput::For(std::string task, int64_t turn, std::string previous_output,
                                         std::string program, const gates::RouteResult& route,
                                         const std::string& route_error, std::string execution_feedback) {
  FeedbackHookInput in;
  in.task = std::move(task);
  in.turn = turn;
  in.previous_output = std::move(previous_output);
  in.program = std::move(program);
  const bool routed = route_error.empty();
  in.mode = routed ? credit::FailureModeName(route.mode) : "ERROR";
  in.r_hat = routed ? route.pass_fraction : 0.0;
  in.reason = routed ? route.reason : route_error;
  in.execution_feedback = std::move(execution_feedback);
  return in;
}

std::string FeedbackHookInput::ToJson() const {
  nlohmann::ordered_json j;
  j["task"] = task;
  j["turn"] = turn;
  j["previous_output"] = previous_output;
  j["program"] = program;
  j["mode"] = mode;
  j["R_hat"] = r_hat;
  j["reason"] = reason;
  j["execution_feedback"] = execution_feedback;
  j["prompt_history"] = prompt_history;
  j["response_history"] = response_history;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

StatusOr<std::string> RunFeedbackHook(const std::string& command, const FeedbackHookInput& input,
                                      double timeout_seconds) {
  EGCA_ASSIGN_OR_RETURN(std::string output,
                        RunHookCommand(command, input.ToJson() + "\n", timeout_seconds, "feedback hook"));
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
  if (output.empty()) return InvalidArgument(fmt::format("feedback hook '{}': printed nothing", command));
  return output;
}

StatusOr<std::string> RunHookCommand(const std::string& command, const std::string& payload,
                                     double timeout_seconds, const char* what) {
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) return Internal(fmt::format("{}: pipe: {}", what, std::strerror(errno)));
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    close(in_pipe[0]), close(in_pipe[1]);
    return Internal(fmt::format("{}: pipe: {}", what, std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  // The command is the user's own program (not a candidate): run through /bin/sh so it may
  // carry arguments, e.g. "python3 my_feedback.py --style short".
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/bin/sh", &actions, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  if (rc != 0) {
    close(in_pipe[1]), close(out_pipe[0]);
    return Internal(fmt::format("{} '{}': cannot start: {}", what, command, std::strerror(rc)));
  }
  // A hook that exits without reading its input must not kill us with SIGPIPE: block it in
  // this thread while writing, and consume one that became pending before unblocking.
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  size_t written = 0;
  std::string output;
  constexpr size_t kMaxOutput = 1 << 20;
  bool too_much = false, timed_out = false;
  fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
  fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  int in_fd = in_pipe[1];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  for (;;) {
    const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {in_fd, POLLOUT, 0}};
    const int n = poll(fds, in_fd >= 0 ? 2 : 1, static_cast<int>(std::min(left * 1000 + 1, 1000.0)));
    if (n < 0 && errno != EINTR) break;
    if (in_fd >= 0 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t w = write(in_fd, payload.data() + written, payload.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if (w < 0 && errno != EAGAIN && errno != EINTR) written = payload.size();  // reader gone
      if (written == payload.size()) {
        close(in_fd);
        in_fd = -1;
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      const ssize_t r = read(out_pipe[0], buf, sizeof buf);
      if (r == 0) break;
      if (r > 0) {
        output.append(buf, static_cast<size_t>(r));
        if (output.size() > kMaxOutput) {
          too_much = true;
          break;
        }
      }
    }
  }
  if (in_fd >= 0) close(in_fd);
  close(out_pipe[0]);
  const timespec zero{0, 0};
  while (sigtimedwait(&pipe_set, nullptr, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  if (timed_out || too_much) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return Unavailable(fmt::format("{} '{}': no answer within {:.0f} s", what, command, timeout_seconds));
  if (too_much) return InvalidArgument(fmt::format("{} '{}': more than 1 MiB of output", what, command));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return InvalidArgument(fmt::format("{} '{}': exited with {}", what, command,
                                       WIFEXITED(status) ? fmt::format("status {}", WEXITSTATUS(status))
                                                         : fmt::format("signal {}", WTERMSIG(status))));
  }
  return output;
}

std::string RevisionMessage(std::string_view feedback, std::string_view instruction) {
  std::string out;
  if (!feedback.empty()) out += std::string(feedback) + "\n\n";
  out += instruction;
  return out;
}

}  // namespace egca::trainer
