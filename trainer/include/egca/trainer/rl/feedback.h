// Executor feedback for multi-turn rollouts: what a failed program is told before the policy
// revises it (the turn t+1 prompt of a Murphy tree, the Iter-k loop of egca-eval).
//
// Modes (MAGRPO-MT's names, plus egca's own):
//   plain           no execution detail: the previous answer and a revision instruction;
//   level_feedback  static checks (the syntax error with its line) and the execution of a
//                   slice of the tests: failing input, expected and got, the exception with
//                   its line, a timeout (sandbox_slice: 1 = the first test, n = the first n,
//                   -n = the last n, 0 = all);
//   egca            level_feedback plus the earliest divergence against the reference: the
//                   statement, and the candidate's and the reference's states there;
//   expert_edits    another model proposes edits (the trainer generates them; this file
//                   only formats its text);
//   custom          an executable the user names reads one JSON object on stdin and writes
//                   the feedback text on stdout (RunFeedbackHook).
// Everything here is built from plain values the parent already holds (the route's verdicts
// and divergence); nothing is run in or read back from a candidate.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "egca/core/status.h"
#include "egca/gates/router.h"
#include "egca/tracer/test_case.h"

namespace egca::trainer {

enum class FeedbackMode { kPlain, kLevelFeedback, kEgca, kExpertEdits, kCustom };

// "plain", "level_feedback", "egca", "expert_edits", "custom".
const char* FeedbackModeName(FeedbackMode mode);
bool ParseFeedbackMode(std::string_view name, FeedbackMode* out);

struct FeedbackOptions {
  FeedbackMode mode = FeedbackMode::kLevelFeedback;
  int64_t sandbox_slice = 1;     // tests shown: n > 0 the first n, n < 0 the last |n|, 0 all
  int64_t max_chars = 2000;      // the feedback text is cut (with a marker) beyond this
  int64_t value_chars = 300;     // one input / expected / got value is cut beyond this
};

// The executor's report on one program: what level_feedback and egca modes show. `tests`
// are the problem's tests (the route's verdicts index them), `program` the code that ran
// (spans of the route index it when `spans_in_program`).
std::string ExecutionFeedback(const gates::RouteResult& route, const std::vector<tracer::TestCase>& tests,
                              std::string_view program, const FeedbackOptions& options);

// One line naming a test's input ("f(1, [2, 3])", "stdin: '3\n1 2 3'", "assert ...").
std::string DescribeTestInput(const tracer::TestCase& test, int64_t max_chars);

// What the custom hook receives (one JSON object on stdin):
//   {"task", "turn", "previous_output", "program", "mode", "R_hat", "reason",
//    "execution_feedback", "prompt_history", "response_history"}
// and what it must print: the feedback text (UTF-8; empty output is an error). The hook runs
// with a time limit; a non-zero exit, a timeout or more than 1 MiB of output is an error
// naming the command.
struct FeedbackHookInput {
  std::string task;
  int64_t turn = 1;  // the turn of the program being revised
  std::string previous_output;
  std::string program;
  std::string mode;
  double r_hat = 0;
  std::string reason;
  std::string execution_feedback;
  std::vector<std::string> prompt_history, response_history;
  std::string ToJson() const;
  // The input for a program that was routed (`route_error` empty) or that egca failed to
  // route (mode "ERROR", R_hat 0, reason = the error).
  static FeedbackHookInput For(std::string task, int64_t turn, std::string previous_output, std::string program,
                               const gates::RouteResult& route, const std::string& route_error,
                               std::string execution_feedback);
};
StatusOr<std::string> RunFeedbackHook(const std::string& command, const FeedbackHookInput& input,
                                      double timeout_seconds = 30);

// The runner under RunFeedbackHook (and the multi-agent transition hook): `command` through
// /bin/sh with `payload` on stdin; its whole stdout. A non-zero exit, a timeout or more than
// 1 MiB of output is an error naming `what` and the command.
StatusOr<std::string> RunHookCommand(const std::string& command, const std::string& payload,
                                     double timeout_seconds, const char* what);

// The user message of the revision turn: the feedback, then the instruction.
std::string RevisionMessage(std::string_view feedback, std::string_view instruction);

}  // namespace egca::trainer
