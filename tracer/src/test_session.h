// A reused test process ("test session") for assert tests in two processes.
//
// An assert test runs its test code in a test process that never runs candidate code
// (docs/executor.md, "Assert tests in two processes"). Forking a fresh one per test costs
// a second fork, isolation, exit and several hundred copy-on-write page faults per
// execution, which on a VM with expensive faults doubled an execution's cost. Since the
// test process only ever runs the test code and decodes plain data, the executor keeps one
// alive per worker instead: a sandboxed child of the test-process fork server (same
// isolation, seccomp, limits on memory, files and threads) that serves one test after the
// other and puts its state back between tests (harness.session_reset).
//
// The conversation on the control socket (the child's fd 4 when it starts):
//   parent -> child: u32 length (little-endian) + a serialized ExecRequest (role
//     ASSERT_ROLE_TEST), the 4 length bytes carrying, as SCM_RIGHTS, the test process's
//     end of the socket pair to this test's candidate process (it becomes fd 4 for the
//     harness while the test runs);
//   child -> parent: u32 length + the test's result channel (result_channel.h: the
//     preparation record, then the keyed completion record). The length's top bit
//     (kSessionRetiring) set: the session ends after this reply (below).
// The child exits when the control socket closes.
//
// Every test starts with the memory of a fresh test process: after each test the child
// puts its state back and collects every cycle (harness.session_reset), then reads its
// address space (/proc/self/statm, what RLIMIT_AS counts). Past its size at the start of
// the session plus kSessionGrowthBytes it retires: it flags the reply and exits, and the
// parent starts a new session before the next test's clock starts, so whatever one test
// (one sample's replies) left behind costs that test's session and never the next test. The parent bounds every test by its
// wall limit: a reply that does not come in time, a reply over its size limit or a
// closed socket ends the session (ForkServer::Abort kills it) and the next test starts a
// new one.
#pragma once

#include <cstddef>
#include <string>

namespace egca::tracer {

// A reply length with this bit set: the child ends the session after this reply.
constexpr uint32_t kSessionRetiring = 1u << 31;
// How far a session's address space may stay above its start between tests (after the
// collection) before it retires.
constexpr uint64_t kSessionGrowthBytes = 32ull << 20;

// Parent side. Sends one test request and the descriptor `peer` (not closed here).
// False when the session is gone (the child exited or the socket broke).
bool SendSessionRequest(int control, const std::string& payload, int peer);

enum class SessionRead {
  kOk,         // *out holds the reply
  kClosed,     // the child closed the socket (it died, or refused the request)
  kTimeout,    // no whole reply before the deadline
  kMalformed,  // a length over max_bytes
};

// Reads one reply, waiting at most until `deadline` (std::chrono::steady_clock seconds,
// SteadySeconds()). *retiring: the child ends the session after this reply (kOk only).
SessionRead ReadSessionReply(int control, double deadline, size_t max_bytes, std::string* out,
                             bool* retiring);

double SteadySeconds();

// Child side (ASSERT_ROLE_TEST_SESSION): serves requests on the control socket (fd 4)
// until it closes. Returns the process's exit code (0: the parent ended the session).
int TestSessionMain();

}  // namespace egca::tracer
