#include "test_session.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "child_main.h"
#include "egca/sandbox/fork_server.h"
#include "egca/tracer/exec.pb.h"
#include "python_runtime.h"
#include "result_channel.h"

namespace egca::tracer {
namespace {

// A request is at most this long (test code, set-up code and the prompt: far below).
constexpr uint32_t kMaxRequestBytes = 256u << 20;

void PutLength(uint32_t n, char out[4]) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
}

uint32_t GetLength(const char in[4]) {
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i)
    n |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return n;
}

bool SendAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Blocking read of exactly `size` bytes; false at end of stream or an error.
bool ReadAll(int fd, char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::read(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Reads exactly `size` bytes before `deadline`: 1 done, 0 closed or failed, -1 timed out.
int ReadAllBy(int fd, char* data, size_t size, double deadline) {
  while (size > 0) {
    const double left = deadline - SteadySeconds();
    if (left <= 0) return -1;
    pollfd pfd{fd, POLLIN, 0};
    int ready = ::poll(&pfd, 1, static_cast<int>(std::ceil(std::min(left, 3600.0) * 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return 0;
    if (ready == 0) continue;  // the loop checks the deadline
    ssize_t n = ::read(fd, data, size);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return 0;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return 1;
}

// The child's side of one request: the payload and the descriptor that came with it.
bool ReceiveRequest(int control, std::string* payload, int* fd) {
  *fd = -1;
  char header[4];
  size_t got = 0;
  while (got < sizeof(header)) {
    iovec iov{header + got, sizeof(header) - got};
    alignas(cmsghdr) char control_buf[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control_buf;
    msg.msg_controllen = sizeof(control_buf);
    ssize_t n = ::recvmsg(control, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
          c->cmsg_len >= CMSG_LEN(sizeof(int))) {
        int received;
        std::memcpy(&received, CMSG_DATA(c), sizeof(int));
        if (*fd >= 0) ::close(*fd);
        *fd = received;
      }
    }
    got += static_cast<size_t>(n);
  }
  const uint32_t size = GetLength(header);
  if (size > kMaxRequestBytes) return false;
  payload->resize(size);
  return ReadAll(control, payload->data(), size);
}

bool SendReply(int control, const std::string& channel, bool retiring) {
  char header[4];
  PutLength(static_cast<uint32_t>(channel.size()) | (retiring ? kSessionRetiring : 0), header);
  return SendAll(control, header, sizeof(header)) &&
         SendAll(control, channel.data(), channel.size());
}

// The process's address space in bytes (/proc/self/statm's first field, what RLIMIT_AS
// bounds); 0 when it cannot be read.
uint64_t AddressSpaceBytes() {
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[128] = {};
  const ssize_t n = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  if (n <= 0) return 0;
  const unsigned long long pages = std::strtoull(text, nullptr, 10);
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool SendSessionRequest(int control, const std::string& payload, int peer) {
  if (payload.size() > kMaxRequestBytes) return false;
  char header[4];
  PutLength(static_cast<uint32_t>(payload.size()), header);
  iovec iov{header, sizeof(header)};
  alignas(cmsghdr) char control_buf[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control_buf;
  msg.msg_controllen = sizeof(control_buf);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &peer, sizeof(int));
  ssize_t n;
  do {
    n = ::sendmsg(control, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  // The descriptor went with the first byte; the rest of the header and the payload follow.
  return SendAll(control, header + n, sizeof(header) - static_cast<size_t>(n)) &&
         SendAll(control, payload.data(), payload.size());
}

SessionRead ReadSessionReply(int control, double deadline, size_t max_bytes, std::string* out,
                             bool* retiring) {
  *retiring = false;
  char header[4];
  int r = ReadAllBy(control, header, sizeof(header), deadline);
  if (r < 0) return SessionRead::kTimeout;
  if (r == 0) return SessionRead::kClosed;
  const uint32_t size = GetLength(header) & ~kSessionRetiring;
  *retiring = (GetLength(header) & kSessionRetiring) != 0;
  if (size > max_bytes) return SessionRead::kMalformed;
  out->resize(size);
  r = ReadAllBy(control, out->data(), size, deadline);
  if (r < 0) return SessionRead::kTimeout;
  return r == 0 ? SessionRead::kClosed : SessionRead::kOk;
}

int TestSessionMain() {
  // The control socket moves out of the way: fd 4 is each test's candidate socket.
  const int control = ::fcntl(sandbox::kChildPeerFd, F_DUPFD_CLOEXEC, 10);
  if (control < 0) return 74;
  ::close(sandbox::kChildPeerFd);
  // Nothing a test process prints is used; a test's output must not pile up against the
  // output limit of the whole session.
  const int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (devnull >= 0) {
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::close(devnull);
  }
  if (!CallHarness("session_begin").ok()) return 75;
  const uint64_t start_bytes = AddressSpaceBytes();
  for (;;) {
    std::string payload;
    int peer = -1;
    if (!ReceiveRequest(control, &payload, &peer)) return 0;  // the parent ended the session
    if (peer < 0) return 76;
    if (peer != sandbox::kChildPeerFd) {  // the lowest free descriptor may be 4 itself
      if (::dup2(peer, sandbox::kChildPeerFd) != sandbox::kChildPeerFd) return 76;
      ::close(peer);
    } else if (::fcntl(peer, F_SETFD, 0) != 0) {
      return 76;
    }
    proto::ExecRequest request;
    if (!request.ParseFromString(payload) || request.role() != proto::ASSERT_ROLE_TEST) return 71;
    std::string().swap(payload);
    const uint64_t key = request.completion_key();
    std::string channel;
    bool test_error = false;
    auto append = [&](const proto::ExecResult& record) {
      std::string bytes;
      record.SerializeToString(&bytes);
      AppendResultFrame(bytes, &channel);
    };
    proto::ExecResult result = RunRequestInProcess(request, [&](const proto::ExecResult& prepared) {
      test_error = prepared.outcome() == proto::EXEC_TEST_ERROR;
      append(prepared);
    });
    ::close(sandbox::kChildPeerFd);  // the harness closes it after the test; a test error may not
    if (!test_error) {
      result.set_completion_key(key);
      append(result);
    }
    const bool reset = CallHarness("session_reset").ok();
    // Unreadable sizes (0) never retire a session; the parent's 500 tests per session
    // still bound it.
    const uint64_t now_bytes = AddressSpaceBytes();
    const bool grown = start_bytes > 0 && now_bytes > start_bytes + kSessionGrowthBytes;
    if (!SendReply(control, channel, !reset || grown)) return 0;
    if (!reset) return 77;  // the parent sees the flag and starts a new session
    if (grown) return 0;
  }
}

}  // namespace egca::tracer
