// The prefault probe's candidate side (child_main.cpp, ExerciseCandidateRole): the pages a
// job's candidate process writes in an assert test in two processes are learned by
// running that path once in the probe. Until 2026-11-27 it never ran: socketpair() put the
// candidate's end at descriptor 4 itself, dup2(4, 4) kept it, and the next close(4) took
// the channel away, so every spare faulted those pages during its job (about 60 faults
// per HumanEval execution). These tests run it with the candidate's end landing on each
// possible descriptor and check that every call is answered.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "child_main.h"
#include "egca/sandbox/fork_server.h"
#include "helpers/embedded_python.h"
#include "python_runtime.h"

namespace egca::tracer {
namespace {

constexpr int kPeer = sandbox::kChildPeerFd;

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

// Descriptors of the test process moved out of the way for a call (the runner or the
// embedded interpreter may hold some of 3-6) and put back after it.
class Parking {
 public:
  explicit Parking(std::vector<int> fds) {
    for (int fd : fds) {
      if (!IsOpen(fd) || Parked(fd)) continue;
      const int flags = ::fcntl(fd, F_GETFD);
      const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 100);
      if (copy < 0) continue;
      ::close(fd);
      parked_.push_back({fd, copy, flags});
    }
  }
  ~Parking() {
    for (const auto& p : parked_) {
      ::dup2(p.copy, p.fd);
      ::fcntl(p.fd, F_SETFD, p.flags);
      ::close(p.copy);
    }
  }

 private:
  struct Entry {
    int fd, copy, flags;
  };
  bool Parked(int fd) const {
    for (const auto& p : parked_) {
      if (p.fd == fd) return true;
    }
    return false;
  }
  std::vector<Entry> parked_;
};

// Makes `lowest` and `lowest + 1` the two lowest free descriptors (so that socketpair()
// returns them), by holding /dev/null on every free descriptor below `lowest` (the
// caller parked whatever held `lowest`, `lowest + 1` and kChildPeerFd). Returns false when
// that did not work out.
bool ArrangeLowestFree(int lowest, std::vector<int>* held) {
  if (IsOpen(lowest) || IsOpen(lowest + 1)) return false;
  for (int fd = 0; fd < lowest; ++fd) {
    if (IsOpen(fd)) continue;
    const int got = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (got != fd) {
      if (got >= 0) ::close(got);
      return false;
    }
    held->push_back(got);
  }
  return true;
}

void ReleaseHeld(std::vector<int>* held) {
  for (int fd : *held) {
    if (fd != kPeer) ::close(fd);  // kPeer was taken over (and closed) by the call
  }
  held->clear();
}

struct Probe {
  std::string program;
  std::string frames;
};

Probe ProbeInputs() {
  testing::EnsureEmbeddedPython();
  Probe probe;
  StatusOr<std::string> program = HarnessBytes("PROBE_PROGRAM", /*call=*/false);
  StatusOr<std::string> frames = HarnessBytes("probe_call_frames", /*call=*/true);
  EXPECT_TRUE(program.ok()) << program.status().ToString();
  EXPECT_TRUE(frames.ok()) << frames.status().ToString();
  if (program.ok()) probe.program = *program;
  if (frames.ok()) probe.frames = *frames;
  return probe;
}

// socketpair() returns (lowest, lowest + 1): the candidate's end before, at and after
// kChildPeerFd, and the test side's end at it.
TEST(PrefaultProbe, TheCandidateSideAnswersEveryCallWhereverItsSocketLands) {
  const Probe probe = ProbeInputs();
  ASSERT_FALSE(probe.frames.empty());
  for (int lowest : {kPeer - 1, kPeer, kPeer + 1}) {
    SCOPED_TRACE("socketpair returns " + std::to_string(lowest) + ", " +
                 std::to_string(lowest + 1));
    Parking parking({kPeer, lowest, lowest + 1});
    std::vector<int> held;
    ASSERT_TRUE(ArrangeLowestFree(lowest, &held));
    const Status done = ExerciseCandidateRole(probe.program, probe.frames);
    ReleaseHeld(&held);
    EXPECT_TRUE(done.ok()) << done.ToString();
    EXPECT_FALSE(IsOpen(kPeer));  // closed after use
    EXPECT_FALSE(IsOpen(lowest + 1));
  }
}

// The check fails when the candidate side does not answer: a call it cannot decode ends
// the candidate process's serving; frames that are not length-prefixed are refused.
TEST(PrefaultProbe, AnUnansweredCallIsAnError) {
  const Probe probe = ProbeInputs();
  const std::string body = R"({"call": "nowhere", "args": [["q", 1]], "kwargs": [], "objs": []})";
  std::string bad(4, '\0');
  bad[3] = static_cast<char>(body.size());
  bad += body;
  Parking parking({kPeer});
  EXPECT_FALSE(ExerciseCandidateRole(probe.program, probe.frames + bad).ok());
  EXPECT_FALSE(ExerciseCandidateRole(probe.program, probe.frames + std::string("\0\0\0", 3)).ok());
  EXPECT_FALSE(IsOpen(kPeer));
}

// Every plain kind the protocol carries is among the probe's calls and results (the pages
// of each path are learned): the replies hold each wire form at least once.
TEST(PrefaultProbe, TheProbeCallsCoverEveryPlainKind) {
  testing::EnsureEmbeddedPython();
  PyObject* globals = PyFunction_GetGlobals(HarnessRunTest());  // Borrowed.
  PyRef ns = PyRef::Steal(PyDict_Copy(globals));
  PyRef done = PyRef::Steal(PyRun_String(R"(
import json
frames = probe_call_frames()
bodies = []
at = 0
while at < len(frames):
    n = int.from_bytes(frames[at:at + 4], "big")
    bodies.append(json.loads(frames[at + 4:at + 4 + n]))
    at += 4 + n
text = json.dumps(bodies)
kinds = ['"l",', '["t",', '"d",', '"S",', '["F",', '["i",', '["b",', '["c",', '"kwargs": [["']
missing = [k for k in kinds if k not in text]
bare = {type(v).__name__ for b in bodies for v in b["args"] if not isinstance(v, list)}
result = "ok" if not missing and {"int", "str", "float", "bool", "NoneType"} <= bare else (
    "missing %r, bare %r" % (missing, bare))
)",
                                         Py_file_input, ns.get(), ns.get()));
  ASSERT_TRUE(done) << FetchPythonError();
  PyObject* result = PyDict_GetItemString(ns.get(), "result");  // Borrowed.
  ASSERT_NE(result, nullptr);
  EXPECT_STREQ(PyUnicode_AsUTF8(result), "ok");
}

}  // namespace
}  // namespace egca::tracer
