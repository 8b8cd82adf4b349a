// The C-level trace hook: user-only filtering, caps that keep the earliest events,
// displacement detection, recording switches, program identity.
#include <gtest/gtest.h>

#include <string>

#include "egca/tracer/trace_dump.h"
#include "source_digest.h"
#include "trace_test_util.h"

namespace egca::tracer {
namespace {

using testing::RunTraced;

int CountKind(const proto::Trace& t, proto::EventKind kind) {
  int n = 0;
  for (const auto& e : t.events()) n += e.kind() == kind;
  return n;
}

TEST(TraceRecorder, OnlyUserFramesProduceEvents) {
  // json.dumps and sorted(key=...) run stdlib/C code; only the lambda and the module
  // body are the user's.
  std::string src =
      "import json\n"
      "s = json.dumps({'a': [1, 2]})\n"
      "xs = sorted([3, 1], key=lambda v: -v)\n";
  auto run = RunTraced(src, "", TraceOptions());
  ASSERT_EQ(run.error, "");
  for (const auto& code : run.trace.code()) {
    EXPECT_TRUE(code.qualname() == "<module>" || code.qualname() == "<lambda>")
        << code.qualname();
  }
  for (const auto& e : run.trace.events()) EXPECT_LE(e.depth(), 2u);
  EXPECT_EQ(CountKind(run.trace, proto::CALL), 3);  // module + 2 lambda calls
}

TEST(TraceRecorder, MaxEventsKeepsEarliestAndStopsTracing) {
  std::string src = "total = 0\nfor i in range(100000):\n    total += i\n";
  TraceOptions options;
  options.max_events = 50;
  auto run = RunTraced(src, "", options);
  ASSERT_EQ(run.error, "");
  EXPECT_TRUE(run.trace.truncated());
  EXPECT_EQ(run.trace.truncation(), proto::MAX_EVENTS);
  ASSERT_EQ(run.trace.events_size(), 50);
  EXPECT_EQ(run.trace.events(0).kind(), proto::CALL);  // earliest kept
  EXPECT_FALSE(run.trace.tracer_displaced());
  // The program still ran to completion after the tracer uninstalled itself.
  auto full = RunTraced(src + "print(total)\n", "", options);
  EXPECT_EQ(full.stdout_text, "4999950000\n");
}

TEST(TraceRecorder, MaxBytesTruncates) {
  std::string src = "s = ''\nfor i in range(1000):\n    s += 'x'\n";
  TraceOptions options;
  options.max_bytes = 2000;
  auto run = RunTraced(src, "", options);
  EXPECT_TRUE(run.trace.truncated());
  EXPECT_EQ(run.trace.truncation(), proto::MAX_BYTES);
  EXPECT_LE(run.trace.event_bytes(), 2000u);
  EXPECT_GT(run.trace.events_size(), 5);
  EXPECT_LE(run.trace.SerializeAsString().size(), 2000u + 1000u);  // + header
}

TEST(TraceRecorder, DisplacedTracerIsReported) {
  std::string src = "import sys\nx = 1\nsys.settrace(None)\ny = 2\n";
  auto run = RunTraced(src, "", TraceOptions());
  EXPECT_TRUE(run.trace.tracer_displaced());
  for (const auto& e : run.trace.events()) EXPECT_NE(e.line(), 4u);
}

TEST(TraceRecorder, ProgramCannotStopTheTracer) {
  std::string src = "import _egca_trace\n_egca_trace.stop()\nx = 1\n";
  auto run = RunTraced(src, "", TraceOptions());
  EXPECT_TRUE(run.trace.tracer_displaced());
  bool saw_x = false;
  for (const auto& e : run.trace.events()) {
    for (const auto& v : e.changed()) saw_x |= v.name() == "x";
  }
  EXPECT_TRUE(saw_x) << "tracing must go on after the program's stop()";
}

TEST(TraceRecorder, RecordingSwitches) {
  std::string src = "def f(a):\n    b = a + 1\n    return b\nf(1)\n";
  TraceOptions options;
  options.record_lines = false;
  auto run = RunTraced(src, "", options);
  EXPECT_EQ(CountKind(run.trace, proto::LINE), 0);
  EXPECT_EQ(CountKind(run.trace, proto::CALL), 2);
  EXPECT_EQ(CountKind(run.trace, proto::RETURN), 2);

  options = TraceOptions();
  options.record_variables = false;
  run = RunTraced(src, "", options);
  for (const auto& e : run.trace.events()) EXPECT_EQ(e.changed_size(), 0);
  EXPECT_GT(CountKind(run.trace, proto::LINE), 0);
}

TEST(TraceRecorder, ChangedVariablesOnlyWhenChanged) {
  std::string src = "a = [1]\nb = 2\na.append(3)\nb = 2\n";
  auto run = RunTraced(src, "", TraceOptions());
  std::string dump = DumpTrace(run.trace);
  EXPECT_NE(dump.find("<module>:3 [3:0-3:11] b=2\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("<module>:4 [4:0-4:5] a=[1, 3]\n"), std::string::npos) << dump;
  // Re-binding b to an equal value is not a change.
  EXPECT_NE(dump.find("RETURN           d1 f0 <module>:4 [4:0-4:5] -> None"), std::string::npos)
      << dump;
}

TEST(TraceRecorder, LongStringsChangeDetection) {
  // Unchanged long strings are skipped by identity + CPython's cached hash; a new string
  // of the same length is still a change.
  std::string src =
      "s = 'x' * 1000\n"
      "for i in range(3):\n"
      "    t = 0\n"
      "s = 'x' * 999 + 'y'\n"
      "u = 1\n";
  auto run = RunTraced(src, "", TraceOptions());
  int changes = 0;
  for (const auto& e : run.trace.events()) {
    for (const auto& v : e.changed()) changes += v.name() == "s";
  }
  EXPECT_EQ(changes, 2) << DumpTrace(run.trace);
}

TEST(TraceRecorder, DeepRecursionDepthAndNoLeakBetweenRuns) {
  std::string src = "def r(n):\n    return 0 if n == 0 else 1 + r(n - 1)\nv = r(50)\n";
  auto run = RunTraced(src, "", TraceOptions());
  uint32_t max_depth = 0;
  for (const auto& e : run.trace.events()) max_depth = std::max(max_depth, e.depth());
  EXPECT_EQ(max_depth, 52u);  // module + r(50)..r(0)
  auto again = RunTraced(src, "", TraceOptions());
  EXPECT_EQ(DumpTrace(run.trace), DumpTrace(again.trace));
}

TEST(TraceRecorder, SourceIdentity) {
  auto run = RunTraced("x = 1\n", "", TraceOptions());
  EXPECT_EQ(run.trace.source_sha256(), hook::Sha256Hex("x = 1\n"));
  EXPECT_EQ(run.trace.filename(), kUserFilename);
}

TEST(SourceDigest, KnownVectors) {
  // FIPS 180-4 examples.
  EXPECT_EQ(hook::Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hook::Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hook::Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(SourceDigest, CpuExtensionsMatchPortableCode) {
  // Every length around the block and padding boundaries, and a few long inputs.
  std::string data;
  uint32_t x = 12345;
  for (int i = 0; i < 5000; ++i) {
    x = x * 1103515245u + 12345u;
    data.push_back(static_cast<char>(x >> 16));
  }
  for (size_t n : {0, 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4096, 5000}) {
    std::string_view v(data.data(), n);
    EXPECT_EQ(hook::Sha256Hex(v), hook::Sha256HexPortable(v)) << n;
  }
  EXPECT_EQ(hook::Sha256HexPortable("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // FIPS 180-4: one million 'a'.
  EXPECT_EQ(hook::Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  if (!hook::Sha256UsesCpuExtensions()) GTEST_SKIP() << "no SHA extensions: one path tested";
}

}  // namespace
}  // namespace egca::tracer
