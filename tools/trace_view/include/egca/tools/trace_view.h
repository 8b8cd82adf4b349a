// Views of one route for people and machines, shared by egca-trace and `egca-batch show`:
// plain or coloured text (the mode, the numbered tests, the aligned steps up to the
// divergence, the candidate's source with the divergent span marked), one JSON document,
// and a self-contained HTML page. Test numbers are 1-based in all three.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "egca/core/status.h"
#include "egca/gates/router.h"
#include "egca/tracer/executor.h"
#include "egca/tracer/test_case.h"

namespace egca::tools {

// What the views show besides the route: the tests it was graded on, where each test's
// expected value came from, and both programs.
struct RouteViewInput {
  const gates::RouteResult* route = nullptr;             // borrowed
  const std::vector<tracer::TestCase>* tests = nullptr;  // borrowed; the route's tests
  // from_reference[i]: test i's expected value is the reference's result (empty: none is).
  std::vector<bool> from_reference;
  std::string candidate_path, candidate;
  std::string reference_path, reference;
};

struct TextViewOptions {
  bool color = false;     // ANSI colours (else markers under the span)
  size_t width = 120;     // terminal columns the tables must fit in
  size_t max_steps = 30;  // aligned steps shown before the divergence
};

// Writes the text view to stdout.
void PrintRouteText(const RouteViewInput& in, const TextViewOptions& options);
nlohmann::ordered_json RouteJson(const RouteViewInput& in);
std::string RouteHtml(const RouteViewInput& in);

// `text` on one line (newlines as \n) cut to `width` bytes with "..." (UTF-8 safe).
std::string OneLine(const std::string& text, size_t width);
// A verdict in words: "got 4, expected 3", "ZeroDivisionError: ... at 3:4", ...
std::string VerdictDetail(const sandbox::Verdict& v);

// egca-trace's first step (and egca.trace()'s in Python): runs `reference` on every test.
// A test without an expected value (a call without --expect, a stdin without
// --expect-stdout) takes the reference's result as its expected value; a reference that
// fails a test, or whose value has no JSON form, is bad input (INVALID_ARGUMENT naming
// `ref_path` or the test); INTERNAL when the executor failed.
// (*from_reference)[i]: test i's expected value came from the reference.
Status CheckReference(tracer::Executor& executor, const std::string& reference,
                      const std::string& ref_path, tracer::RunOptions run,
                      std::vector<tracer::TestCase>* tests, std::vector<bool>* from_reference);

// Columns of the terminal stdout is on; $COLUMNS, else 120, when it is not a terminal.
size_t TerminalWidth();

}  // namespace egca::tools
